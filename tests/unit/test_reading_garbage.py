"""Text that is not text (fonts mapped to no characters, symbol soup) is never stored."""

from __future__ import annotations

from pathlib import Path

import pytest

from scholarflow.ingest import extract_file
from scholarflow.ingest.chunking import chunk_document
from scholarflow.ingest.documents import DocumentError
from scholarflow.ingest.readers.quality import MIN_WORD_SHARE, garbage_pages, word_share
from tests.support.reading_pdfs import make_scan_pdf, make_text_pdf

PROSE = ["Sparse attention lowers the memory of long inputs on scientific papers.",
         "The model attends to local windows and a few global tokens at every layer.",
         "Training uses sequences of thirty thousand tokens on eight graphics cards."]
SOUP = ("-/.!021#3547680:9<;=?>A@CBEDF0F>G=#4H.!0IB%JKB?.MLN0235O#= 1#0PB?.!Q*RTS565UVQWS56H"
        "X*UV3YX!Q Z\\[*]_^a`KbHcCd*`ecf`eg`KbH]hci[*]kj!limonEj!^Pp*qsrutvrwtvcitG`ec7]#du`x")
SHIFTED = "QRSO \\ TaWRQ TaWRPQUTObNTbW \\ NPcT \\ | T \\ hWUURQW \\ \\ WOQRTUU _ PSZW \\ ] S a"


@pytest.mark.parametrize("text", [
    " ".join(PROSE),
    "S57N -118.3+/-4.7 12 0 H100D -112.9+/-3.4 8 0 GGGLEQLESIINFEKL 40 OVA 2 G3 + OVA252",
    "Total Siwi-IP Rluc RNAi piRNA BmAgo3 Spn-E DDX43 the reporter and the control lanes",
    "稀疏注意力降低了长输入的内存占用，我们在科学论文上研究了这一方法的效果与局限。" * 2,
    "for (i = 0; i < n; i++) { sum += a[i] * b[i]; } return sum / n; // the mean value",
])
def test_real_text_is_text(text: str) -> None:
    share, judged = word_share(text)
    assert garbage_pages([text] * 3) == [], (share, judged)
    assert judged < 40 or share >= MIN_WORD_SHARE


@pytest.mark.parametrize("text", [SOUP * 3, SHIFTED * 3, "Tqbstf!buufoujpo!mpxfst!uif!nfnpsz" * 4])
def test_symbol_soup_and_shifted_letters_are_not(text: str) -> None:
    share, judged = word_share(text)
    assert judged >= 40 and share < MIN_WORD_SHARE, (share, judged)


def test_a_short_page_takes_the_verdict_of_its_document() -> None:
    short = "ÀÁ!³ ÂÃ"
    assert garbage_pages([SOUP * 3, SOUP * 3, short]) == [0, 1, 2]
    assert garbage_pages([" ".join(PROSE)] * 2 + [short]) == []
    assert garbage_pages([short, ""], known=2) == [0]


def test_a_half_garbled_paper_keeps_its_good_pages_and_names_the_others(tmp_path: Path) -> None:
    path = tmp_path / "half.pdf"
    path.write_bytes(make_text_pdf([PROSE, PROSE[::-1], PROSE, PROSE[1:]], unmapped=[2, 3]))
    extracted = extract_file(path, ocr=False)
    chunks = chunk_document(extracted).chunks
    assert extracted.unreadable_pages == (2, 3) and extracted.page_count == 4
    assert [number for number, _ in extracted.pages] == [1, 4]
    assert "Tqbstf" not in extracted.document.content
    assert all("Tqbstf" not in chunk.text for chunk in chunks)
    assert "Training uses sequences" in chunks[-1].text


def test_a_paper_without_a_readable_page_is_refused_saying_what_to_do(tmp_path: Path) -> None:
    path = tmp_path / "garbled.pdf"
    path.write_bytes(make_text_pdf([PROSE, PROSE], unmapped=[1, 2], title="A Title"))
    with pytest.raises(DocumentError) as caught:
        extract_file(path, ocr=False)
    message = str(caught.value)
    assert "\n" not in message and str(path) in message
    assert "map glyphs to no real characters" in message
    assert "pip install 'scholarflow[ocr]'" in message and "apt install tesseract-ocr" in message


def test_a_scan_without_ocr_names_the_extra(tmp_path: Path) -> None:
    path = tmp_path / "scan.pdf"
    path.write_bytes(make_scan_pdf([PROSE]))
    with pytest.raises(DocumentError, match=r"may be scanned images.*'scholarflow\[ocr\]'"):
        extract_file(path, ocr=False)
