"""The default reader: PDFium through pypdfium2 (Apache-2.0 / BSD-3-Clause wheels, ~3 MB).

PDFium gives each page's characters in content order with line breaks of its
own ("\\r\\n") and marks a hyphen that ends a line with U+FFFE; a line's box is
read from its first and last characters only, a few calls a line instead of
one per character.
"""

from __future__ import annotations

import ctypes
import re
import threading
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from scholarflow.ingest.documents import DocumentError
from scholarflow.ingest.readers import MAX_PAGES, Line, PageText, PdfContent
from scholarflow.ingest.readers.common import too_many_pages, unreadable
from scholarflow.ingest.readers.ligatures import LIGATURE_CODES

if TYPE_CHECKING:
    import pypdfium2

__all__ = ["READER", "PdfiumReader"]

# PDFium is not thread-safe: one document at a time in a process.
LOCK = threading.Lock()
_HYPHEN_MARK = "\ufffe"
_LINE_BREAK = re.compile(r"\r?\n|\r(?=\r|$)")
_PASSWORD_ERROR = 4  # FPDF_ERR_PASSWORD
_WHITE = 245  # of 255, each of red, green and blue
# A page without text whose images cover this share of it is a scan.
_SCANNED_SHARE = 0.5
# Share of a page's characters drawn invisibly for them to be a scan's text layer.
_SCAN_LAYER_SHARE = 0.9


class PdfiumReader:
    name = "pdfium"

    def read(self, raw: bytes, shown: str) -> PdfContent:
        import pypdfium2

        with LOCK:
            try:
                document = pypdfium2.PdfDocument(raw)
            except pypdfium2.PdfiumError as exc:
                if getattr(exc, "err_code", None) == _PASSWORD_ERROR:
                    raise DocumentError(f"{shown} is encrypted; decrypt it first") from None
                raise unreadable(shown, exc) from None
            try:
                count = len(document)
                if count > MAX_PAGES:
                    raise too_many_pages(shown, count)
                pages = tuple(_page(document, index) for index in range(count))
                metadata = {key.lower(): str(value) for key, value
                            in document.get_metadata_dict(skip_empty=True).items()}
            except DocumentError:
                raise
            except Exception as exc:  # a damaged page: PdfiumError and friends
                raise unreadable(shown, exc) from None
            finally:
                document.close()
        return PdfContent(pages, metadata)


def _page(document: pypdfium2.PdfDocument, index: int) -> PageText:
    import pypdfium2.raw as pdfium_c

    page = document[index]
    try:
        width, height = page.get_size()
        textpage = page.get_textpage()
        try:
            count = textpage.count_chars()
            text = textpage.get_text_range(0, count) if count > 0 else ""
            if not text.strip():
                return PageText(index + 1, (), width, height,
                                scanned=_image_share(page, width, height) >= _SCANNED_SHARE)
            if len(text) != count:  # characters outside the BMP: no per-character boxes
                lines = tuple(Line(t) for t in _LINE_BREAK.split(text.replace(_HYPHEN_MARK, "-\n"))
                              if t)
                return PageText(index + 1, lines, width, height, positioned=False)
            lines = tuple(_lines(pdfium_c, textpage.raw, text, height))
            if _text_layer_of_a_scan(page, lines, width, height):
                lines = tuple(replace(line, hidden=False) for line in lines)
        finally:
            textpage.close()
    finally:
        page.close()
    return PageText(index + 1, lines, width, height)


def _text_layer_of_a_scan(page: Any, lines: tuple[Line, ...], width: float,
                          height: float) -> bool:
    """Invisible text over a page-sized image: a scan's OCR layer, which says what the
    image shows (unlike white text among visible text, which no reader sees)."""
    hidden = sum(len(line.text) for line in lines if line.hidden)
    if not hidden or hidden < _SCAN_LAYER_SHARE * sum(len(line.text) for line in lines):
        return False
    return _image_share(page, width, height) >= _SCANNED_SHARE


def _blank(char: str) -> bool:
    """White space, but not a control code that stands for a ligature ("\\x0cnd": "find")."""
    return char.isspace() and char not in LIGATURE_CODES


def _breaks_at(text: str, index: int) -> bool:
    """PDFium ends a line with "\\r\\n"; a lone "\\r" is a glyph's code (TeX's fl ligature)."""
    char = text[index]
    return char == "\n" or (char == "\r" and (index + 1 == len(text) or text[index + 1] in "\r\n"))


def _image_share(page: Any, width: float, height: float) -> float:
    """How much of the page its largest image covers (0 to 1)."""
    import pypdfium2.raw as pdfium_c

    area = max(width * height, 1.0)
    largest = 0.0
    for image in page.get_objects(filter=(pdfium_c.FPDF_PAGEOBJ_IMAGE,), max_depth=3):
        left, bottom, right, top = image.get_bounds()
        covered = (min(right, width) - max(left, 0.0)) * (min(top, height) - max(bottom, 0.0))
        largest = max(largest, covered)
    return min(largest / area, 1.0)


def _lines(pdfium_c: Any, handle: Any, text: str, height: float) -> list[Line]:
    left, right = ctypes.c_double(), ctypes.c_double()
    bottom, top = ctypes.c_double(), ctypes.c_double()
    loose = pdfium_c.FS_RECTF()
    red, green, blue, alpha = (ctypes.c_uint(), ctypes.c_uint(), ctypes.c_uint(), ctypes.c_uint())
    colour = tuple(ctypes.byref(c) for c in (red, green, blue, alpha))
    refs = (ctypes.byref(left), ctypes.byref(right), ctypes.byref(bottom), ctypes.byref(top))
    lines: list[Line] = []
    start = 0
    length = len(text)
    while start < length:
        end = start
        while end < length and text[end] != _HYPHEN_MARK and not _breaks_at(text, end):
            end += 1
        stop = end + 1 if end < length and text[end] == _HYPHEN_MARK else end
        first, last = start, stop - 1
        while first <= last and _blank(text[first]):
            first += 1
        while last >= first and _blank(text[last]):
            last -= 1
        if first <= last:
            pdfium_c.FPDFText_GetCharBox(handle, first, *refs)
            x0, y_top, y_bottom = left.value, top.value, bottom.value
            # The loose box spans the font's ascent to descent, scaled as drawn:
            # GetFontSize is the size before the text matrix (often 1 in journal PDFs).
            pdfium_c.FPDFText_GetLooseCharBox(handle, first, ctypes.byref(loose))
            size = loose.top - loose.bottom
            pdfium_c.FPDFText_GetCharBox(handle, last, *refs)
            line = text[first:last + 1].replace(_HYPHEN_MARK, "-")
            pdfium_c.FPDFText_GetFillColor(handle, first, *colour)
            hidden = min(red.value, green.value, blue.value) >= _WHITE and alpha.value > 0
            lines.append(Line(line, x0, height - max(y_top, top.value), max(right.value, x0),
                              height - min(y_bottom, bottom.value), float(size), hidden))
        start = stop
        while start < length and _breaks_at(text, start):
            start += 1
    return lines


READER = PdfiumReader()
