"""A PDF given directly (`ask --file`) keeps its pages and title through recall.

A request carries a directly given document as text only: the PDF's pages
travel as form feeds and its metadata title as a `#` line on top, and the
scratch knowledge base reads the form feeds back as pages.
"""

from __future__ import annotations

import re
from pathlib import Path

from scholarflow.ingest import chunk_document, extract_file
from scholarflow.ingest.documents import content_hash, document_from_text
from scholarflow.ingest.extract import PAGE_BREAK, extracted_from_text, load_document_file
from tests.conftest import INTENT_RULE
from tests.integration.test_cli import run
from tests.integration.test_cli_kb import kb_env
from tests.support import FakeOpenAIServer
from tests.unit.test_ingest import PAGE_1, PAGE_2, make_pdf, write

ANSWER_RULE = "numbered passages recalled"  # CITED_MATERIAL_PROMPT
INTENT_QA = '{"intent": "LITERATURE_QA", "confidence": 0.9, "reason": "a precise question"}'
OTHER = [["1 Overview", "Dense retrieval encodes questions and passages alike."],
         ["2 Index", "The index holds one vector per passage of the corpus."]]


def test_a_pdf_file_keeps_its_pages_and_metadata_title(tmp_path: Path) -> None:
    # A blank second page: page numbers must still count it.
    path = write(tmp_path, "paper.pdf", make_pdf([PAGE_1, [], PAGE_2], title="Sparse Attention"))
    extracted = extract_file(path)
    given = load_document_file(path)
    assert given.title == "Sparse Attention" and given.source == str(path)
    assert given.doc_id == content_hash(given.content)[:16]
    first, blank, third = given.content.split(PAGE_BREAK)
    assert first.startswith("# Sparse Attention\n\n1 Introduction") and blank == "\n\n"
    assert third.strip("\n") == extracted.document.content[extracted.pages[1][1]:]

    # What the graph does with the text: a document from it, read back with its pages.
    read = extracted_from_text(document_from_text(given.content, doc_id=given.doc_id))
    assert read.document.title == "Sparse Attention" and read.document.doc_id == given.doc_id
    assert [n for n, _ in read.pages] == [1, 3]
    assert PAGE_BREAK not in read.document.content
    where = {c.heading: c.page for c in chunk_document(read, target_tokens=30,
                                                        max_tokens=60).chunks}
    assert where["1 Introduction"] == 1 and where["2 Method > 2.1 Training"] == 3


def test_plain_text_with_form_feeds_has_pages_and_without_none() -> None:
    paged = document_from_text("Title\n\nFirst page.\n\f\nSecond page.\n\f\n\f\nFourth.")
    read = extracted_from_text(paged)
    assert [n for n, _ in read.pages] == [1, 2, 4] and read.kind == "text"
    assert read.document.content == "Title\n\nFirst page.\n\nSecond page.\n\nFourth."
    plain = document_from_text("# T\n\nNo page breaks.")
    assert extracted_from_text(plain).pages == () and extracted_from_text(plain).kind == "markdown"


def test_ask_with_pdf_files_cites_pages_and_titles(
    llm_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    sparse = write(tmp_path, "sparse.pdf", make_pdf([PAGE_1, PAGE_2],
                                                    title="Sparse Attention on Papers"))
    dense = write(tmp_path, "dense.pdf", make_pdf(OTHER, title="Dense Retrieval Notes"))
    llm_server.reset()
    llm_server.configure(rules=[
        {"match": INTENT_RULE, "reply": INTENT_QA},
        {"match": ANSWER_RULE, "reply": "32k tokens [1][2][3]."},
    ])
    # Two documents: recall, per document, from the scratch knowledge base.
    result = run(["ask", "How long are the training sequences on the GPUs?", "--file",
                  str(sparse), "--file", str(dense), "--json"], kb_env(llm_server, tmp_path))
    assert result.returncode == 0, result.describe()
    final = result.json_lines()[-1]
    assert final["type"] == "final_answer", result.describe()
    sources = final["sources"]
    assert sources and all(re.match(r"p\. \d", s["location"]) for s in sources), sources
    top = sources[0]
    assert (top["title"], top["location"]) == (
        "Sparse Attention on Papers", "p. 2, 2 Method > 2.1 Training")
    assert (top["page"], top["heading"]) == (2, "2 Method > 2.1 Training")
    assert {s["title"] for s in sources} <= {"Sparse Attention on Papers",
                                             "Dense Retrieval Notes"}
