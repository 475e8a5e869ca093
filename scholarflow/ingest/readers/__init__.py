"""PDF readers: one small interface, one module per engine, the engine picked by config.

A reader turns a PDF's bytes into pages of positioned lines (`PageText`);
`layout.py` turns those into the text a reader of the paper sees (columns in
order, hyphens joined, running headers and footers gone), whatever the engine.
Each engine's SDK is imported only when that engine is used.

- "pdfium" (default): pypdfium2, Apache-2.0/BSD; fast, positions and font sizes.
- "pypdf": pure Python, BSD; no positions, so no column or header geometry.
- "pymupdf": AGPL-3.0, so only as the opt-in extra `scholarflow[pymupdf]`.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Protocol

from scholarflow.errors import ConfigurationError

__all__ = [
    "DEFAULT_READER",
    "MAX_PAGES",
    "READERS",
    "Line",
    "PageText",
    "PdfContent",
    "PdfReader",
    "get_reader",
]

DEFAULT_READER = "pdfium"
# engine name -> module under scholarflow.ingest.readers
READERS = {"pdfium": "pdfium", "pypdf": "pypdf", "pymupdf": "pymupdf"}
# A paper, a thesis or a book has fewer; past this a file is refused in one line
# rather than tying up a core for minutes (10,000 blank pages are a known attack).
MAX_PAGES = 3000


@dataclass(frozen=True, slots=True)
class Line:
    """One line of text as laid out on the page; coordinates in points, origin top left."""

    text: str
    x0: float = 0.0
    top: float = 0.0
    x1: float = 0.0
    bottom: float = 0.0
    size: float = 0.0  # font size of its first character; 0: the engine does not say
    # Drawn white: text a reader does not see. It stays in the text (it is the
    # document's), but never names the paper or heads a section.
    hidden: bool = False


@dataclass(frozen=True, slots=True)
class PageText:
    number: int  # 1-based
    lines: tuple[Line, ...]  # in the engine's order
    width: float = 0.0
    height: float = 0.0
    positioned: bool = True  # False: the engine gave no geometry (lines' boxes are 0)
    # No text, but an image over most of the page: a scan, for OCR to read.
    scanned: bool = False


@dataclass(frozen=True, slots=True)
class PdfContent:
    pages: tuple[PageText, ...]
    metadata: dict[str, str] = field(default_factory=dict)  # "title", "author", ...


class PdfReader(Protocol):
    """Reads a PDF's bytes; raises `DocumentError` (one line naming `shown`) when it cannot."""

    name: str

    def read(self, raw: bytes, shown: str) -> PdfContent: ...


def get_reader(name: str | None = None) -> PdfReader:
    """The reader called `name`, else the configured one (SCHOLARFLOW_PDF_READER)."""
    if name is None:
        from scholarflow.settings import get_settings

        name = get_settings().pdf_reader
    module = READERS.get(name)
    if module is None:
        raise ConfigurationError(
            f"unknown PDF reader {name!r}: use one of {', '.join(sorted(READERS))} "
            "(SCHOLARFLOW_PDF_READER)")
    reader: PdfReader = importlib.import_module(f"{__name__}.{module}").READER
    return reader
