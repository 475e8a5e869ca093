"""What the page says it is: reference lists under numbered headings, back matter after
them, running headers that alternate between pages, and page boundaries of scans."""

from __future__ import annotations

import pytest

from scholarflow.ingest.chunking import chunk_text
from scholarflow.ingest.extract import extract_pdf
from scholarflow.ingest.sections import is_reference_heading
from tests.support.reading_pdfs import make_text_pdf

ENTRIES = ("[1] A. Smith and B. Jones. Sparse attention for long inputs. In Proc. NeurIPS, "
           "pages 1-9, 2019.\n\n[2] C. Wu and D. Li. Memory of transformers. J. Mach. Learn. "
           "Res., 21:1-30, 2020.")
PROOF = ("Let the window be w and the number of global tokens g. Each query attends to at "
         "most w plus g keys, so the memory of one layer grows with n times w plus g rather "
         "than with the square of n, which is what the lemma states for every input length "
         "and every layer of the model, as claimed.")


@pytest.mark.parametrize("title", ["References", "8. REFERENCES", "VII. REFERENCES",
                                   "References and Notes", "11 References", "Bibliography:"])
def test_numbered_and_named_reference_headings(title: str) -> None:
    assert is_reference_heading(title)


@pytest.mark.parametrize("title", ["8. Results", "Reference Manual", "A. Related work"])
def test_other_headings_are_not_reference_headings(title: str) -> None:
    assert not is_reference_heading(title)


@pytest.mark.parametrize("appendix", ["Appendix A: Proofs", "APPENDIX", "A Proof of Lemma 2",
                                      "B.1 Roughness Estimate", "Supplementary Material"])
def test_the_reference_list_ends_where_the_appendix_begins(appendix: str) -> None:
    text = (f"1 Introduction\n\nSparse attention.\n\n8. REFERENCES\n\n{ENTRIES}\n\n"
            f"{appendix}\n\n{PROOF}")
    chunks = chunk_text(text, "d", kind="pdf", target_tokens=40, max_tokens=80).chunks
    kinds = {chunk.text.split("\n")[0][:12]: chunk.kind for chunk in chunks}
    assert kinds["8. REFERENCE"] == "references" and kinds["[2] C. Wu an"] == "references"
    last = chunks[-1]
    assert last.kind == "body" and last.heading == appendix and "as claimed" in last.text


def test_a_long_yearless_chunk_under_the_heading_is_content() -> None:
    text = f"References\n\n{ENTRIES}\n\nDetails of the proof\n\n{PROOF}"
    chunks = chunk_text(text, "d", kind="pdf", target_tokens=40, max_tokens=80).chunks
    assert [chunk.kind for chunk in chunks][-1] == "body"
    assert all(chunk.kind == "references" for chunk in chunks if "2019" in chunk.text)


BODY = ["Sparse attention lowers the memory of long inputs on scientific papers and books",
        "and the model attends to local windows and a few global tokens at every layer of",
        "the network, which we measure on inputs of many lengths and on many machines; the",
        "memory falls eightfold against dense attention at thirty thousand tokens and the"]


def test_running_headers_that_alternate_and_carry_the_page_number_are_removed() -> None:
    headers = [f"{n} A. SMITH AND B. JONES" if n % 2 == 0 else f"SPARSE ATTENTION {n}"
               for n in range(1, 9)]
    raw = make_text_pdf([BODY] * 8, top=650, headers=headers)  # lower than a journal's head
    content = extract_pdf(raw, "paper.pdf").document.content
    assert "SMITH" not in content and "SPARSE ATTENTION" not in content
    assert content.count("eightfold against dense") == 8


def test_a_page_of_one_paragraph_stays_on_its_page() -> None:
    cut = BODY[:3]  # ends mid-sentence
    going_on = ["memory falls eightfold. Then the second page goes on with its own text about",
                "the windows of the model and the global tokens that every layer attends to in",
                "the network that we describe here, as a scanned page's text layer gives it."]
    extracted = extract_pdf(make_text_pdf([cut, going_on, BODY]), "scan.pdf")
    assert [number for number, _ in extracted.pages] == [1, 2, 3]
    second = extracted.document.content[extracted.pages[1][1]:extracted.pages[2][1]]
    assert second.startswith("Then the second page goes on")
    first = extracted.document.content[:extracted.pages[1][1]]
    assert first.rstrip().endswith("on many machines; the memory falls eightfold.")
