"""PyMuPDF (AGPL-3.0): only as the opt-in extra `scholarflow[pymupdf]`, never the default.

Lines with their boxes and font sizes from `get_text("dict")`.
"""

from __future__ import annotations

from typing import Any

from scholarflow.ingest.documents import DocumentError
from scholarflow.ingest.readers import MAX_PAGES, Line, PageText, PdfContent
from scholarflow.ingest.readers.common import too_many_pages, unreadable

__all__ = ["READER", "PymupdfReader"]


class PymupdfReader:
    name = "pymupdf"

    def read(self, raw: bytes, shown: str) -> PdfContent:
        try:
            import pymupdf
        except ImportError:
            from scholarflow.extras import MissingExtraError

            raise MissingExtraError(
                "SCHOLARFLOW_PDF_READER=pymupdf needs scholarflow's pymupdf extra (AGPL-3.0; "
                "pymupdf is not installed): pip install 'scholarflow[pymupdf]', or unset "
                "SCHOLARFLOW_PDF_READER") from None
        try:
            document = pymupdf.open(stream=raw, filetype="pdf")
        except Exception as exc:
            raise unreadable(shown, exc) from None
        try:
            if document.needs_pass and not document.authenticate(""):
                raise DocumentError(f"{shown} is encrypted; decrypt it first")
            if document.page_count > MAX_PAGES:
                raise too_many_pages(shown, document.page_count)
            pages = tuple(_page(page, number)
                          for number, page in enumerate(document, start=1))
            metadata = {key.lower(): str(value)
                        for key, value in (document.metadata or {}).items() if value}
        except DocumentError:
            raise
        except Exception as exc:
            raise unreadable(shown, exc) from None
        finally:
            document.close()
        return PdfContent(pages, metadata)


def _page(page: Any, number: int) -> PageText:
    lines = []
    for block in page.get_text("dict")["blocks"]:
        for line in block.get("lines", ()):
            spans = line["spans"]
            text = "".join(span["text"] for span in spans).strip()
            if text:
                x0, top, x1, bottom = line["bbox"]
                lines.append(Line(text, x0, top, x1, bottom, float(spans[0]["size"])))
    rect = page.rect
    return PageText(number, tuple(lines), rect.width, rect.height)


READER = PymupdfReader()
