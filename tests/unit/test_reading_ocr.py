"""OCR's parts that need no engine: Tesseract's words into lines, the progress line, the
choice of engine (SCHOLARFLOW_OCR), what a reader is told to install when none is there;
and, for each engine installed (Tesseract, RapidOCR: the `ocr` extra), English and
Chinese lines read with their boxes, and a scanned paper read into its text."""

from __future__ import annotations

import shutil
import sys
from importlib.util import find_spec
from pathlib import Path

import pytest

from scholarflow.ingest import ocr
from scholarflow.ingest.documents import DocumentError
from scholarflow.ingest.extract import extract_file
from scholarflow.ingest.joined_words import space_joined
from scholarflow.ingest.ocr import _lines, ocr_engine, progress_printer
from scholarflow.ingest.readers import Line, PageText
from tests.support.reading_pdfs import (
    draw_cjk_lines,
    image_pdf,
    make_scan_pdf,
    make_text_pdf,
    render_lines,
)

NO_TESSERACT = shutil.which("tesseract") is None
NO_RAPIDOCR = find_spec("rapidocr_onnxruntime") is None
TESSERACT = pytest.param("tesseract", marks=pytest.mark.skipif(
    NO_TESSERACT, reason="needs the Tesseract program"))
RAPIDOCR = pytest.param("rapidocr", marks=pytest.mark.skipif(
    NO_RAPIDOCR, reason="needs the ocr extra"))
BOTH = pytest.param("auto", marks=pytest.mark.skipif(
    NO_TESSERACT or NO_RAPIDOCR, reason="needs Tesseract and the ocr extra"))
INSTALLED = [TESSERACT, RAPIDOCR]
ENGLISH = ["Sparse attention lowers the memory", "of long inputs on scientific papers."]
CHINESE = ["稀疏注意力降低了长文本的内存。", "模型关注局部窗口和少数全局词元。"]


def engine(name: str) -> ocr.OcrEngine:
    program = shutil.which("tesseract") or ""
    if name == "auto":
        return ocr.ChineseToRapidOcr(ocr.Tesseract(program), ocr.RapidOcr())
    return ocr.Tesseract(program) if name == "tesseract" else ocr.RapidOcr()

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


def test_tesseract_puts_no_space_between_chinese_words() -> None:
    tsv = "\n".join([HEADER, word(1, 1, 200, "稀疏"), word(1, 2, 280, "注意力"),
                     word(1, 3, 400, "，"), word(1, 4, 440, "BERT"), word(1, 5, 600, "模型")])
    assert [line.text for line in _lines(tsv)] == ["稀疏注意力， BERT 模型"]


@pytest.mark.parametrize("name", INSTALLED)
def test_each_engine_reads_english_lines_with_their_boxes_in_points(name: str) -> None:
    image, width, height = render_lines(ENGLISH)
    page = engine(name).read(image, width, height, 3, 60)
    assert page.number == 3 and page.width == pytest.approx(612)
    assert [line.text for line in page.lines] == ENGLISH
    first, second = page.lines
    # make_text_pdf sets 14-point lines from x = 50 points, the first baseline 42 points
    # below the page's top: its capitals' tops 10 points above that
    assert first.x0 == pytest.approx(50, abs=5) and first.top == pytest.approx(32, abs=5)
    assert second.top - first.top == pytest.approx(14 * 1.3, abs=4)


# Tesseract alone is not asked to: short Chinese lines on a blank page come out as
# fragments or Latin letters from it (bench/ocr.py); `auto` gives them to RapidOCR.
@pytest.mark.parametrize("name", [RAPIDOCR, BOTH])
def test_rapidocr_reads_chinese_lines(name: str) -> None:
    pytest.importorskip("PIL", reason="the Chinese lines are drawn with Pillow")
    image, width, height = draw_cjk_lines(CHINESE)
    page = engine(name).read(image, width, height, 1, 60)
    assert [line.text for line in page.lines] == CHINESE


@pytest.mark.skipif(NO_RAPIDOCR, reason="needs the ocr extra")
def test_rapidocr_leaves_a_page_out_past_its_limit() -> None:
    image, width, height = render_lines(ENGLISH)
    with pytest.raises(ocr.PageTimeout):
        ocr.RapidOcr().read(image, width, height, 1, 0.0)


class Scripted:
    """An engine that reads every page as the same line, and counts its pages."""

    def __init__(self, name: str, text: str) -> None:
        self.name, self.text, self.pages = name, text, 0

    def read(self, image: bytes, width: int, height: int, number: int,
             timeout: float) -> PageText:
        self.pages += 1
        return PageText(number, (Line(self.text),))


def test_auto_gives_rapidocr_the_pages_from_the_first_chinese_one_on() -> None:
    latin, chinese = Scripted("tesseract", "Sparse attention 稀"), Scripted("rapidocr", "稀疏")
    auto = ocr.ChineseToRapidOcr(latin, chinese)
    assert auto.read(b"", 1, 1, 1, 60).lines[0].text == "Sparse attention 稀"  # a stray one
    latin.text = ""  # a blank page
    assert auto.read(b"", 1, 1, 2, 60).lines[0].text == ""
    latin.text = "模型关注局部 window"
    assert auto.read(b"", 1, 1, 3, 60).lines[0].text == "稀疏"
    assert auto.read(b"", 1, 1, 4, 60).lines[0].text == "稀疏"
    assert (latin.pages, chinese.pages) == (3, 2)


@pytest.mark.parametrize(("choice", "tesseract", "rapidocr", "chosen"), [
    ("auto", True, True, "auto"),
    ("auto", False, True, "rapidocr"),
    ("auto", True, False, "tesseract"),
    ("auto", False, False, None),
    ("tesseract", False, True, None),
    ("rapidocr", True, True, "rapidocr"),
    ("rapidocr", True, False, None),
    ("off", True, True, None),
])
def test_the_setting_picks_the_engine_among_those_installed(
        monkeypatch: pytest.MonkeyPatch, choice: str, tesseract: bool, rapidocr: bool,
        chosen: str | None) -> None:
    monkeypatch.setenv("SCHOLARFLOW_OCR", choice)
    monkeypatch.setattr(ocr, "tesseract_program", lambda: "/bin/tesseract" if tesseract else None)
    monkeypatch.setattr(ocr, "_rapidocr_problem", lambda: None if rapidocr else "")
    picked = ocr_engine()
    assert (picked.name if picked else None) == chosen


def without_engines(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SCHOLARFLOW_TESSERACT", str(tmp_path / "no-such-program"))
    monkeypatch.setitem(sys.modules, "rapidocr_onnxruntime", None)  # as if not installed


def test_without_an_engine_the_refusal_and_the_note_name_the_extra(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    without_engines(monkeypatch, tmp_path)
    scan = tmp_path / "scan.pdf"
    scan.write_bytes(make_scan_pdf([ENGLISH]))
    with pytest.raises(DocumentError) as caught:
        extract_file(scan)
    message = str(caught.value)
    assert "pip install 'scholarflow[ocr]'" in message and "apt install tesseract-ocr" in message
    assert "\n" not in message and "may be scanned images" in message
    half = tmp_path / "half.pdf"
    half.write_bytes(make_text_pdf([ENGLISH, ENGLISH], unmapped=[2]))
    extracted = extract_file(half)
    assert extracted.unreadable_pages == (2,)
    assert "pip install 'scholarflow[ocr]'" in extracted.ocr_note


def test_a_named_engine_missing_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    without_engines(monkeypatch, tmp_path)
    monkeypatch.setenv("SCHOLARFLOW_OCR", "rapidocr")
    assert ocr.install_hint() == ("SCHOLARFLOW_OCR=rapidocr needs scholarflow's ocr extra: "
                                  "pip install 'scholarflow[ocr]'")
    monkeypatch.setenv("SCHOLARFLOW_OCR", "tesseract")
    assert ocr.install_hint().startswith("SCHOLARFLOW_OCR=tesseract needs the program Tesseract")
    monkeypatch.setenv("SCHOLARFLOW_OCR", "off")
    half = tmp_path / "half.pdf"
    half.write_bytes(make_text_pdf([ENGLISH, ENGLISH], unmapped=[2]))
    assert extract_file(half).ocr_note == ""  # turned off on purpose: nothing to install


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


@pytest.mark.parametrize("name", INSTALLED)
def test_a_scanned_page_is_read_into_the_text_with_its_page(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    monkeypatch.setenv("SCHOLARFLOW_OCR", name)
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


@pytest.mark.parametrize("name", [BOTH])
def test_a_chinese_scan_is_read_into_the_text(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    pytest.importorskip("PIL", reason="the Chinese lines are drawn with Pillow")
    monkeypatch.setenv("SCHOLARFLOW_OCR", name)
    path = tmp_path / "scan-zh.pdf"
    path.write_bytes(image_pdf([draw_cjk_lines(["第一节方法", *CHINESE])]))
    extracted = extract_file(path)
    assert extracted.ocr_pages == (1,)
    assert "模型关注局部窗口和少数全局词元" in extracted.document.content


def columns(text: str, gaps: dict[int, int]) -> list[int]:
    """Each character's column, 3 apart, and `gaps[i]` before character i instead."""
    out = [0]
    for index in range(1, len(text)):
        out.append(out[-1] + gaps.get(index, 3))
    return out


def test_words_run_together_are_spaced_where_the_gap_was_wide() -> None:
    text = "controlsthefidelity of Get3"
    wide = columns(text, {8: 6, 11: 5})  # before "the" and "fidelity"
    assert space_joined(text, wide) == "controls the fidelity of Get3"
    assert space_joined("Materialsandmethods", columns("Materialsandmethods", {9: 6, 12: 6})) \
        == "Materials and methods"


def test_a_word_or_an_evenly_set_name_stays_whole() -> None:
    assert space_joined("Actin binds", columns("Actin binds", {})) == "Actin binds"
    assert space_joined("understanding", columns("understanding", {5: 7})) == "understanding"
    assert space_joined("controlsthe", [0, 3]) == "controlsthe"  # no columns to go by
