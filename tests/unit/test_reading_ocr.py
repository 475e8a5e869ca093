"""OCR's parts that need no engine: Tesseract's words into lines, the progress line, the
switch; and, with Tesseract installed, a scanned page read into the paper's text."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from scholarflow.ingest.extract import extract_file
from scholarflow.ingest.ocr import _lines, ocr_engine, progress_printer
from tests.support.reading_pdfs import make_scan_pdf, make_text_pdf

HEADER = "\t".join(["level", "page_num", "block_num", "par_num", "line_num", "word_num",
                    "left", "top", "width", "height", "conf", "text"])


def word(line: int, number: int, left: int, text: str, conf: float = 95.0) -> str:
    cells = [5, 1, 1, 1, line, number, left, 100 * line, 20 * len(text), 40, conf, text]
    return "\t".join(map(str, cells))


def test_tesseract_words_become_lines_in_points() -> None:
    tsv = "\n".join([HEADER, "4\t1\t1\t1\t1\t0\t0\t0\t0\t0\t-1\t",
                     word(1, 1, 200, "Sparse"), word(1, 2, 360, "attention"),
                     word(1, 3, 600, "~", conf=10.0), word(2, 1, 200, "works.")])
    lines = _lines(tsv)
    assert [line.text for line in lines] == ["Sparse attention", "works."]
    first = lines[0]
    assert first.x0 == pytest.approx(200 * 72 / 200) and first.top == pytest.approx(36.0)
    assert first.size == pytest.approx(40 * 72 / 200)


def test_the_progress_line_comes_at_most_every_few_seconds() -> None:
    shown: list[str] = []
    now = [0.0]
    show = progress_printer(shown.append, every=5.0, clock=lambda: now[0])
    for second in (0.0, 1.0, 4.9, 5.0, 6.0, 10.5):
        now[0] = second
        show(f"at {second}")
    assert shown == ["at 0.0", "at 5.0", "at 10.5"]


def test_ocr_off_means_no_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCHOLARFLOW_OCR", "off")
    assert ocr_engine() is None


def test_a_text_pdf_never_starts_ocr(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCHOLARFLOW_TESSERACT", str(tmp_path / "no-such-program"))
    path = tmp_path / "text.pdf"
    path.write_bytes(make_text_pdf([["Sparse attention lowers the memory of long inputs."]]))
    extracted = extract_file(path)
    assert extracted.ocr_pages == () and extracted.unreadable_pages == ()


@pytest.mark.skipif(shutil.which("tesseract") is None, reason="needs Tesseract")
def test_a_scanned_page_is_read_into_the_text_with_its_page(tmp_path: Path) -> None:
    path = tmp_path / "scan.pdf"
    path.write_bytes(make_scan_pdf([["1 Introduction", "Sparse attention lowers the memory",
                                     "of long inputs on scientific papers."],
                                    ["2 Method", "The model attends to local windows."]]))
    extracted = extract_file(path)
    assert extracted.ocr_pages == (1, 2) and extracted.unreadable_pages == ()
    content = extracted.document.content
    assert "lowers the memory of long inputs" in content
    second = content[extracted.pages[1][1]:]
    assert second.startswith("2 Method") and "local windows" in second
