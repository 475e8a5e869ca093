"""OCR for the pages a PDF's text does not hold: scans, and fonts mapped to no characters.

The engine is Tesseract (Apache-2.0), the program, with its English and
Simplified Chinese data (Debian: tesseract-ocr, tesseract-ocr-chi-sim): it
reads typewriter scans and journal pages better than RapidOCR's PP-OCR models
and at a fraction of the CPU, when it runs on one thread (OMP_THREAD_LIMIT=1;
left to itself it spins a core per thread for no gain). It is used when it is
on the PATH (or at SCHOLARFLOW_TESSERACT) and SCHOLARFLOW_OCR is not "off",
and only for the pages that need it: a PDF whose text is text never starts it.

A page is rendered by PDFium in grey at `DPI`, given to Tesseract on its
standard input, and its words come back with their boxes (TSV), which make
the page's lines (`PageText`), so the OCR'd text goes through the same
cleanup and structure as any other. Time is bounded: a page over
SCHOLARFLOW_OCR_PAGE_SECONDS is killed and left out; past
SCHOLARFLOW_OCR_DOCUMENT_SECONDS the remaining pages are left out; either
is said. A progress line goes to `ocr_progress` (the CLI prints it).
"""

from __future__ import annotations

import contextvars
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Protocol

from scholarflow.ingest.readers import Line, PageText

__all__ = ["DPI", "OcrEngine", "OcrResult", "ocr_engine", "ocr_pages", "ocr_progress",
           "progress_printer"]

DPI = 200  # enough for 9-point type; 300 costs twice the time for the same words
_SCALE = DPI / 72
_MIN_CONFIDENCE = 30  # of Tesseract's 0-100: below it a "word" is a speck or a rule
INSTALL_HINT = ("install Tesseract to read it (Debian/Ubuntu: apt install tesseract-ocr "
                "tesseract-ocr-chi-sim; macOS: brew install tesseract tesseract-lang), or run "
                "OCR on it first")

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
                [self.program, "stdin", "stdout", "-l", _languages(self.program), "--psm", "3",
                 "tsv"], input=pgm, capture_output=True, timeout=timeout, env=env, check=False)
        except subprocess.TimeoutExpired:  # run() has killed it
            raise PageTimeout from None
        if done.returncode != 0:
            return PageText(number, (), width / _SCALE, height / _SCALE)
        return PageText(number, tuple(_lines(done.stdout.decode("utf-8", "replace"))),
                        width / _SCALE, height / _SCALE)


def ocr_engine() -> OcrEngine | None:
    """The OCR engine when it is installed and OCR is not turned off, else None."""
    from scholarflow.settings import get_settings

    settings = get_settings()
    if settings.ocr == "off":
        return None
    program = str(settings.tesseract or "") or shutil.which("tesseract")
    return Tesseract(program) if program and os.access(program, os.X_OK) else None


@lru_cache(maxsize=4)
def _languages(program: str) -> str:
    """English, and Simplified Chinese when its data is installed."""
    try:
        listed = subprocess.run([program, "--list-langs"], capture_output=True, timeout=30,
                                check=False).stdout.decode("utf-8", "replace").split()
    except (OSError, subprocess.TimeoutExpired):
        listed = []
    return "+".join(lang for lang in ("eng", "chi_sim") if lang in listed) or "eng"


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
        out.append(Line(" ".join(w[11] for w in words), left / _SCALE, top / _SCALE,
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
    started, cpu_start = time.monotonic(), _cpu()
    name = os.path.basename(shown)
    for done, index in enumerate(indices):
        elapsed = time.monotonic() - started
        if elapsed >= document_limit:
            failed.extend(indices[done:])
            break
        image, width, height = _render(raw, index)
        try:
            read[index] = engine.read(image, width, height, index + 1,
                                      min(page_limit, document_limit - elapsed))
        except PageTimeout:
            failed.append(index)
            slow.append(index)
        if progress is not None:
            cpu = (_cpu() - cpu_start) / (done + 1)
            progress(f"ocr: {name}: page {done + 1} of {len(indices)} read "
                     f"({cpu:.1f} CPU-s a page)")
    return OcrResult(read, tuple(failed), _note(failed, slow, page_limit, document_limit),
                     _cpu() - cpu_start)


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


def _render(raw: bytes, index: int) -> tuple[bytes, int, int]:
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


def _cpu() -> float:
    """CPU seconds of this process and the programs it ran."""
    import resource

    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(
        resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime
