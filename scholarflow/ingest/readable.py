"""Which pages of a PDF can be read, and the one line that says what to do when none can.

A page is unreadable when its text is not text (fonts that map glyphs to no
characters: `readers/quality.py`) or when it has no text but is a scanned
image. Such a page never becomes part of the paper's text: it is read by
OCR when an engine is installed (`scholarflow.ingest.ocr`), and else left
out and named, with what to install. A paper keeps its good pages; one with
none is refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from scholarflow.ingest.documents import DocumentError
from scholarflow.ingest.pages import page_ranges
from scholarflow.ingest.readers import PageText, PdfContent

__all__ = ["ReadPages", "no_readable_page", "page_ranges", "readable_pages"]

_ROUNDS = 3


@dataclass(frozen=True, slots=True)
class ReadPages:
    content: PdfContent  # as read: pages OCR read put in, pages not read emptied
    texts: list[str]  # each page's text, "" for a blank or unread page
    ocr_pages: tuple[int, ...] = ()  # 1-based
    unreadable_pages: tuple[int, ...] = ()  # 1-based
    note: str = ""  # why pages were left out: what stopped OCR, or no engine to read them
    ocr_tried: bool = False  # an OCR engine was there for the unreadable pages


def readable_pages(content: PdfContent, shown: str, *, raw: bytes = b"",
                   ocr: bool | None = None) -> ReadPages:
    """The pages whose text is text; the others read by OCR (`ocr`: None, when it is
    installed; False, never; `raw` is the PDF, for OCR to render), or left out and named."""
    texts, unread, kept = _text_pages(content, set())
    if not unread or ocr is False or not raw:
        return _read(kept, texts, unread)
    from scholarflow.ingest.ocr import ocr_engine, ocr_pages

    engine = ocr_engine()
    if engine is None:
        return replace(_read(kept, texts, unread), note=_no_engine_note())
    result = ocr_pages(raw, sorted(unread), shown, engine)
    pages = list(kept.pages)
    for index, page in result.pages.items():
        pages[index] = replace(page, number=index + 1)
    with_ocr = PdfContent(tuple(pages), content.metadata)
    still = set(result.failed)
    texts, unread, kept = _text_pages(with_ocr, still)
    done = tuple(i + 1 for i in sorted(result.pages) if i not in unread)
    return replace(_read(kept, texts, unread), ocr_pages=done, note=result.note,
                   ocr_tried=True)


def _text_pages(content: PdfContent, unread: set[int]) -> tuple[list[str], set[int], PdfContent]:
    """Each page's text without the pages that are not text (found, and `unread`)."""
    from scholarflow.ingest.readers.layout import page_texts
    from scholarflow.ingest.readers.quality import garbage_pages

    kept = _emptied(content, sorted(unread)) if unread else content
    texts = page_texts(kept.pages)
    unread = unread | {i for i, page in enumerate(kept.pages) if page.scanned and not texts[i]}
    # Emptying a page changes what the others read as furniture or as a paragraph's
    # continuation, so the text is made again until no page is found out anew.
    for _ in range(_ROUNDS):
        found = set(garbage_pages(texts, known=len(unread))) - unread
        if not found:
            break
        unread |= found
        kept = _emptied(content, sorted(unread))
        texts = page_texts(kept.pages)
    for index in unread:
        texts[index] = ""
    return texts, unread, kept


def _no_engine_note() -> str:
    """The note on pages left out for want of an engine; none when OCR was turned off."""
    from scholarflow.ingest.ocr import install_hint
    from scholarflow.settings import get_settings

    return "" if get_settings().ocr == "off" else install_hint()


def _read(kept: PdfContent, texts: list[str], unread: set[int]) -> ReadPages:
    return ReadPages(kept, texts, unreadable_pages=tuple(i + 1 for i in sorted(unread)))


def _emptied(content: PdfContent, indices: Sequence[int]) -> PdfContent:
    drop = set(indices)
    pages = tuple(replace(page, lines=()) if i in drop else page
                  for i, page in enumerate(content.pages))
    return PdfContent(pages, content.metadata)


def no_readable_page(shown: str, content: PdfContent, read: ReadPages) -> DocumentError:
    """The error for a PDF none of whose pages could be read: why, and what to do."""
    from scholarflow.ingest.ocr import install_hint

    count = len(content.pages)
    if read.ocr_tried:
        why = read.note or f"OCR found no text on its {count} page(s)"
        return DocumentError(f"{shown} has no readable text: {why}; check that the pages "
                             "hold text, or run OCR on it yourself")
    unread = set(read.unreadable_pages)
    garbled = sum(1 for page in content.pages if _has_text(page) and page.number in unread)
    if garbled == 0:
        why = f"has no extractable text (its {count} page(s) may be scanned images)"
    elif garbled == count:
        why = (f"has no readable text: the fonts of its {count} page(s) map glyphs to no real "
               "characters")
    else:
        why = (f"has no readable text: {garbled} of its {count} page(s) use fonts that map "
               "glyphs to no real characters, the others are blank or scanned")
    return DocumentError(f"{shown} {why}; {install_hint()}, or run OCR on it first")


def _has_text(page: PageText) -> bool:
    return bool(page.lines)
