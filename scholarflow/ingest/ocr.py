"""OCR for the pages a PDF's text does not hold: scans, and fonts mapped to no characters.

Two engines, both permissively licensed, English and Simplified Chinese:

- RapidOCR (Apache-2.0: `rapidocr-onnxruntime`, the `ocr` extra, `pip install
  'scholarflow[ocr]'`): PP-OCR's models, which ship inside its wheel, on ONNX Runtime,
  in this process on one thread (a second thread costs twice the CPU for little
  time on a busy machine). It finds the page's lines first, then reads them a few
  at a time, so a page over its limit stops between two batches of lines; the
  spaces it leaves out between English words are put back (`joined_words.py`).
- Tesseract (Apache-2.0: the program, with Debian's tesseract-ocr and
  tesseract-ocr-chi-sim), on its standard input, on one thread
  (OMP_THREAD_LIMIT=1: left to itself it spins a core per thread for no gain); a
  page over its limit is killed. It is used when it is on the PATH (or at
  SCHOLARFLOW_TESSERACT).

SCHOLARFLOW_OCR picks them. `auto` (the default) with both installed reads a page
with Tesseract, which reads Latin text better for a fraction of RapidOCR's CPU,
and gives it to RapidOCR when Tesseract finds it Chinese, as every page of the
document after it: RapidOCR reads Chinese better, short lines above all
(`bench/ocr.py` measures both). With one installed, `auto` is that one;
`tesseract` or `rapidocr` is that one only; `off` is none. Only the pages that
need it are read: a PDF whose text is text never starts an engine. Without an
engine, the refusal or the note on the pages left out says what to install
(`install_hint`).

A page is rendered by PDFium in grey at `DPI` and its lines come back with their
boxes (`PageText`), so the OCR'd text goes through the same cleanup and
structure as any other. Time is bounded: a page over
SCHOLARFLOW_OCR_PAGE_SECONDS is left out; past SCHOLARFLOW_OCR_DOCUMENT_SECONDS
the remaining pages are left out; either is said. A progress line goes to
`ocr_progress` (the CLI prints it).
"""

from __future__ import annotations

import contextvars
import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Protocol

from scholarflow.ingest.readers import Line, PageText
from scholarflow.language import CJK, HAN_CHAR

__all__ = ["DPI", "ChineseToRapidOcr", "OcrEngine", "OcrResult", "RapidOcr", "Tesseract",
           "cpu_seconds", "install_hint", "ocr_engine", "ocr_pages", "ocr_progress",
           "progress_printer", "rapidocr_model", "render_page", "tesseract_languages",
           "tesseract_program"]

DPI = 200  # enough for 9-point type; 300 costs twice the time for the same words
_SCALE = DPI / 72
_MIN_CONFIDENCE = 30  # of Tesseract's 0-100: below it a "word" is a speck or a rule
_CJK_MARKS = "\u3000-\u303f\uff00-\uffef"  # CJK punctuation, full-width forms
_EXTRA = "pip install 'scholarflow[ocr]'"
_TESSERACT = ("Tesseract (Debian/Ubuntu: apt install tesseract-ocr tesseract-ocr-chi-sim; "
              "macOS: brew install tesseract tesseract-lang)")

# Called with one line of progress ("ocr: paper.pdf: page 3 of 30 ..."); None: silent.
ocr_progress: contextvars.ContextVar[Callable[[str], None] | None] = contextvars.ContextVar(
    "ocr_progress", default=None)


def progress_printer(write: Callable[[str], None], every: float = 5.0,
                     clock: Callable[[], float] = time.monotonic) -> Callable[[str], None]:
    """An `ocr_progress` that passes on the first line and then one every `every` seconds."""
    last = [float("-inf")]

    def show(line: str) -> None:
        now = clock()
        if now - last[0] >= every:
            last[0] = now
            write(line)

    return show


class PageTimeout(Exception):
    """One page took longer than its limit."""


class OcrEngine(Protocol):
    """Reads one page's image (grey, 8 bits, rows of pixels) into lines, in points."""

    name: str

    def read(self, image: bytes, width: int, height: int, number: int,
             timeout: float) -> PageText: ...


@dataclass(frozen=True, slots=True)
class OcrResult:
    pages: dict[int, PageText] = field(default_factory=dict)  # 0-based index -> page read
    failed: tuple[int, ...] = ()  # 0-based: over the page limit, or past the document's
    note: str = ""  # why pages were not read, when some were not
    cpu_seconds: float = 0.0


class Tesseract:
    name = "tesseract"

    def __init__(self, program: str) -> None:
        self.program = program

    def read(self, image: bytes, width: int, height: int, number: int,
             timeout: float) -> PageText:
        pgm = b"P5 %d %d 255\n" % (width, height) + image
        env = {**os.environ, "OMP_THREAD_LIMIT": "1"}  # its own environment, one thread
        try:
            done = subprocess.run(
                [self.program, "stdin", "stdout", "-l", tesseract_languages(self.program),
                 "--psm", "3", "tsv"],
                input=pgm, capture_output=True, timeout=timeout, env=env, check=False)
        except subprocess.TimeoutExpired:  # run() has killed it
            raise PageTimeout from None
        if done.returncode != 0:
            return PageText(number, (), width / _SCALE, height / _SCALE)
        return PageText(number, tuple(_lines(done.stdout.decode("utf-8", "replace"))),
                        width / _SCALE, height / _SCALE)


class RapidOcr:
    """RapidOCR's PP-OCR models (Chinese and English) in this process, one thread."""

    name = "rapidocr"

    def __init__(self, threads: int = 1) -> None:
        self.threads = threads  # ONNX Runtime's: more buys wall time with the CPU of others

    def read(self, image: bytes, width: int, height: int, number: int,
             timeout: float) -> PageText:
        import numpy

        from scholarflow.ingest.joined_words import space_joined

        deadline = time.monotonic() + timeout
        engine = rapidocr_model(self.threads)
        grey = numpy.frombuffer(image, numpy.uint8).reshape(height, width)
        colour = numpy.repeat(grey[:, :, None], 3, axis=2)  # its models take three channels
        # The lines' boxes first (in pixels), then their text, a batch at a time: a page
        # over its limit stops between batches. Lines of like width share a batch, as a
        # batch is padded to its widest. The angle classifier is not run: a page is
        # upright, and it turns some upright lines upside down.
        boxes, _ = engine(colour, use_cls=False, use_rec=False)
        quads = numpy.asarray(boxes or [], numpy.float32)
        crops = engine.get_crop_img_list(colour, quads) if len(quads) else []
        order = sorted(range(len(crops)), key=lambda i: crops[i].shape[1] / crops[i].shape[0])
        read: dict[int, Line] = {}
        for start in range(0, len(order), _BATCH):
            if time.monotonic() > deadline:
                raise PageTimeout
            batch = order[start:start + _BATCH]
            found, _ = engine.text_rec([crops[i] for i in batch], True)  # and columns
            for i, (text, score, (_, _, columns, _, _)) in zip(batch, found, strict=True):
                text = space_joined(str(text), [c for word in columns for c in word])
                if score >= _MIN_SCORE and text.strip():
                    left, top = quads[i].min(axis=0) / _SCALE
                    right, bottom = quads[i].max(axis=0) / _SCALE
                    read[i] = Line(text.strip(), float(left), float(top), float(right),
                                   float(bottom), float(bottom - top))
        lines = [read[i] for i in sorted(read)]  # the boxes' order: top to bottom
        return PageText(number, tuple(lines), width / _SCALE, height / _SCALE)


class ChineseToRapidOcr:
    """`auto` with both engines: Tesseract, cheaper and better at Latin text, and RapidOCR,
    better at Chinese, for a page in which Tesseract finds Chinese and for every page of
    the document after it."""

    name = "auto"

    def __init__(self, tesseract: OcrEngine, rapidocr: OcrEngine) -> None:
        self.tesseract, self.rapidocr = tesseract, rapidocr
        self.chinese = False  # one engine is made for each document

    def read(self, image: bytes, width: int, height: int, number: int,
             timeout: float) -> PageText:
        if not self.chinese:
            started = time.monotonic()
            page = self.tesseract.read(image, width, height, number, timeout)
            text = "".join(line.text for line in page.lines)
            han = len(HAN_CHAR.findall(text))
            latin = sum(c.isascii() and c.isalpha() for c in text)
            if han < _FEWEST_HAN or han < _CHINESE_SHARE * (han + latin):
                return page  # Latin text, a blank page, a few specks read as characters
            self.chinese = True
            timeout -= time.monotonic() - started
            if timeout <= 0:  # no time left to read it again: Tesseract's reading it is
                return page
        return self.rapidocr.read(image, width, height, number, timeout)


_CHINESE_SHARE = 0.2  # of a page's letters: Chinese, not a stray character in a reference
_FEWEST_HAN = 5
_BATCH = 6  # lines RapidOCR reads between two looks at the clock (its own batch size)
_MIN_SCORE = 0.5  # of RapidOCR's 0-1 line scores: below it a "line" is a rule or a figure


@lru_cache(maxsize=2)
def rapidocr_model(threads: int) -> Any:
    """One RapidOCR a thread count, its models loaded once (a second or so)."""
    from rapidocr_onnxruntime import RapidOCR

    # "max": a page is looked at no larger than 2,000 pixels a side, and never enlarged
    return RapidOCR(intra_op_num_threads=threads, inter_op_num_threads=1, det_limit_type="max")


def ocr_engine() -> OcrEngine | None:
    """The engine SCHOLARFLOW_OCR names, when it is installed; None when none is or OCR
    is off (`install_hint` says what to do then)."""
    from scholarflow.settings import get_settings

    choice = get_settings().ocr
    if choice == "off":
        return None
    program = tesseract_program() if choice in ("auto", "tesseract") else None
    rapidocr = RapidOcr() if choice in ("auto", "rapidocr") and _rapidocr_problem() is None \
        else None
    if program and rapidocr:
        return ChineseToRapidOcr(Tesseract(program), rapidocr)
    return Tesseract(program) if program else rapidocr


def install_hint() -> str:
    """What to do when pages need OCR and `ocr_engine` has none, said for the setting."""
    from scholarflow.settings import get_settings

    choice = get_settings().ocr
    if choice == "off":
        return "OCR is off (SCHOLARFLOW_OCR=off): set it to auto to read such pages"
    problem = _rapidocr_problem()
    why = f" (RapidOCR is installed but did not load: {problem})" if problem else ""
    if choice == "rapidocr":
        return f"SCHOLARFLOW_OCR=rapidocr needs scholarflow's ocr extra: {_EXTRA}{why}"
    if choice == "tesseract":
        return f"SCHOLARFLOW_OCR=tesseract needs the program {_TESSERACT}"
    return f"install OCR to read such pages: {_EXTRA}{why}, or {_TESSERACT}"


def tesseract_program() -> str | None:
    """The Tesseract program to run (the setting, else the PATH's), None when there is none."""
    from scholarflow.settings import get_settings

    program = str(get_settings().tesseract or "") or shutil.which("tesseract")
    return program if program and os.access(program, os.X_OK) else None


def _rapidocr_problem() -> str | None:
    """None when RapidOCR imports; "" when it is not installed; else why it did not load
    (a library of its own missing, as OpenCV's libGL on a bare server)."""
    try:
        import rapidocr_onnxruntime  # noqa: F401
    except ImportError as exc:
        if isinstance(exc, ModuleNotFoundError) and exc.name == "rapidocr_onnxruntime":
            return ""
        return " ".join(str(exc).split())[:160] or type(exc).__name__
    return None


@lru_cache(maxsize=4)
def tesseract_languages(program: str) -> str:
    """English, and Simplified Chinese when its data is installed."""
    try:
        listed = subprocess.run([program, "--list-langs"], capture_output=True, timeout=30,
                                check=False).stdout.decode("utf-8", "replace").split()
    except (OSError, subprocess.TimeoutExpired):
        listed = []
    return "+".join(lang for lang in ("eng", "chi_sim") if lang in listed) or "eng"


# Tesseract cuts Chinese into "words" of a character or two: no space goes between them.
_CJK_GAP = re.compile(f"(?<=[{CJK}{_CJK_MARKS}]) (?=[{CJK}{_CJK_MARKS}])")


def _lines(tsv: str) -> list[Line]:
    """Tesseract's words (level 5 rows) grouped by their line, boxes in points."""
    lines: dict[tuple[str, str, str], list[list[str]]] = {}
    for row in tsv.splitlines()[1:]:
        cells = row.split("\t")
        if len(cells) < 12 or cells[0] != "5" or not cells[11].strip():
            continue
        try:
            if float(cells[10]) < _MIN_CONFIDENCE:
                continue
        except ValueError:
            continue
        lines.setdefault((cells[2], cells[3], cells[4]), []).append(cells)
    out = []
    for words in lines.values():
        left = min(int(w[6]) for w in words)
        top = min(int(w[7]) for w in words)
        right = max(int(w[6]) + int(w[8]) for w in words)
        bottom = max(int(w[7]) + int(w[9]) for w in words)
        text = _CJK_GAP.sub("", " ".join(w[11] for w in words))
        out.append(Line(text, left / _SCALE, top / _SCALE,
                        right / _SCALE, bottom / _SCALE, (bottom - top) / _SCALE))
    return out


def ocr_pages(raw: bytes, indices: Sequence[int], shown: str, engine: OcrEngine) -> OcrResult:
    """The pages at `indices` (0-based) of the PDF `raw`, read by `engine`, within the limits."""
    from scholarflow.settings import get_settings

    settings = get_settings()
    page_limit, document_limit = settings.ocr_page_seconds, settings.ocr_document_seconds
    progress = ocr_progress.get()
    read: dict[int, PageText] = {}
    failed: list[int] = []
    slow: list[int] = []
    started, cpu_start = time.monotonic(), cpu_seconds()
    name = os.path.basename(shown)
    for done, index in enumerate(indices):
        elapsed = time.monotonic() - started
        if elapsed >= document_limit:
            failed.extend(indices[done:])
            break
        image, width, height = render_page(raw, index)
        try:
            read[index] = engine.read(image, width, height, index + 1,
                                      min(page_limit, document_limit - elapsed))
        except PageTimeout:
            failed.append(index)
            slow.append(index)
        if progress is not None:
            cpu = (cpu_seconds() - cpu_start) / (done + 1)
            progress(f"ocr: {name}: page {done + 1} of {len(indices)} read "
                     f"({cpu:.1f} CPU-s a page)")
    return OcrResult(read, tuple(failed), _note(failed, slow, page_limit, document_limit),
                     cpu_seconds() - cpu_start)


def _note(failed: list[int], slow: list[int], page_limit: float, document_limit: float) -> str:
    from scholarflow.ingest.pages import page_ranges

    parts = []
    if slow:
        parts.append(f"OCR took over {page_limit:g} s on page(s) {page_ranges(i + 1 for i in slow)}"
                     " (SCHOLARFLOW_OCR_PAGE_SECONDS)")
    if late := [i for i in failed if i not in slow]:
        pages = page_ranges(i + 1 for i in late)
        parts.append(f"OCR stopped at the {document_limit:g} s limit a document has "
                     f"(SCHOLARFLOW_OCR_DOCUMENT_SECONDS): page(s) {pages} not read")
    return "; ".join(parts)


def render_page(raw: bytes, index: int) -> tuple[bytes, int, int]:
    """Page `index` in grey at `DPI`: its pixels, width and height."""
    import pypdfium2

    from scholarflow.ingest.readers.pdfium import LOCK

    with LOCK:
        document = pypdfium2.PdfDocument(raw)
        try:
            page = document[index]
            bitmap = page.render(scale=_SCALE, grayscale=True)
            pixels = bitmap.to_numpy()
            page.close()
        finally:
            document.close()
    if pixels.ndim == 3:
        pixels = pixels[:, :, 0]
    height, width = pixels.shape[:2]
    return pixels.tobytes(), width, height


def cpu_seconds() -> float:
    """CPU seconds of this process and the programs it ran."""
    import resource

    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(
        resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime
