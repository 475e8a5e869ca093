"""Text extraction: PDF (a reader of scholarflow.ingest.readers, page by page), Markdown, text.

Whatever the format, the result is a `Document` (so `doc_id` and
`content_hash` are the canonical ones of `scholarflow.ingest.documents`) plus where
each PDF page starts in its text, so chunks can say which page they are on.

A request carries a document given directly as text only, so a PDF given
that way (`ask --file`) keeps its structure in the text: a form feed between
pages (extracted text has none of its own), and a metadata title that is not
the text's own first line as a `#` line on top. `extracted_from_text` reads
form feeds back as pages, so recall over that text cites pages too.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from scholarflow.ingest.documents import (
    Document,
    DocumentError,
    document_from_bytes,
    document_from_text,
    extract_title,
    is_pdf,
    read_document_bytes,
)

__all__ = [
    "PAGE_BREAK",
    "SUPPORTED_SUFFIXES",
    "ExtractedDocument",
    "Kind",
    "extract_file",
    "extract_pdf",
    "extracted_from_text",
    "load_document_file",
    "paged_document",
]

Kind = Literal["pdf", "markdown", "text"]
MARKDOWN_SUFFIXES = frozenset({".md", ".markdown", ".mdown", ".mkd"})
TEXT_SUFFIXES = frozenset({".txt", ".text", ".rst"})
# A PDF's bytes are mostly not text: `max_bytes` of text allows a file this many times larger.
_PDF_BYTES_PER_TEXT_BYTE = 5
# What a directory walk picks up; a file named on the command line is tried whatever its name.
SUPPORTED_SUFFIXES = MARKDOWN_SUFFIXES | TEXT_SUFFIXES | {".pdf"}

# Pages are joined by a blank line: a page break is a paragraph break for the chunker.
PAGE_SEPARATOR = "\n\n"
# Between pages of a text given directly; on a line of its own, as plain-text page breaks are.
PAGE_BREAK = "\f"


@dataclass(frozen=True, slots=True)
class ExtractedDocument:
    document: Document
    kind: Kind
    # (1-based page number, offset of the page's first character in document.content),
    # ascending; empty for anything but a PDF. Pages without text are left out.
    pages: tuple[tuple[int, int], ...] = field(default=())
    # What a PDF says of itself (its first page, its metadata), when it does.
    authors: tuple[str, ...] = ()
    year: int | None = None
    doi: str | None = None
    page_count: int | None = None  # a PDF's pages, blank ones too
    # Pages read by OCR (scanned, or fonts that map to no characters), and pages whose
    # text could not be read at all (left out of `document.content`), 1-based.
    ocr_pages: tuple[int, ...] = ()
    unreadable_pages: tuple[int, ...] = ()
    ocr_note: str = ""  # why pages were left out (a time limit, no OCR engine), when some were

    def page_at(self, offset: int) -> int | None:
        """The page the character at `offset` is on."""
        page = None
        for number, start in self.pages:  # short; chunking uses a bisect of its own
            if start > offset:
                break
            page = number
        return page


def load_document_file(path: str | Path, *, max_bytes: int | None = None) -> Document:
    """Read a PDF, Markdown or text file into a `Document`, or raise `DocumentError`.

    The document is to be given directly (`--file`): a PDF's text keeps its
    page breaks as form feeds and its metadata title on top (`paged_document`),
    since the text is all a request carries.
    """
    shown = str(path)
    # `max_bytes` bounds text; a PDF's bytes are mostly not text, so its file may be larger.
    pdf_name = Path(path).suffix.lower() == ".pdf"
    limit = max_bytes * _PDF_BYTES_PER_TEXT_BYTE if max_bytes and pdf_name else max_bytes
    raw = read_document_bytes(path, max_bytes=limit)
    if is_pdf(path, raw):
        return paged_document(extract_pdf(raw, shown))
    return document_from_bytes(raw, shown)


def extract_file(path: str | Path, *, ocr: bool | None = None) -> ExtractedDocument:
    """Read one file; `DocumentError` with a one-line reason when it cannot be used.

    `ocr`: whether a PDF's unreadable pages go to OCR; None: when an engine is installed.
    """
    shown = str(path)
    raw = read_document_bytes(path)
    if is_pdf(path, raw):
        return extract_pdf(raw, shown, ocr=ocr)
    kind: Kind = "markdown" if Path(path).suffix.lower() in MARKDOWN_SUFFIXES else "text"
    return ExtractedDocument(document_from_bytes(raw, shown), kind)


def extract_pdf(raw: bytes, shown: str, *, reader: str | None = None,
                ocr: bool | None = None) -> ExtractedDocument:
    """A PDF's text as a reader sees it, page by page, and what the paper says of itself.

    `reader` names the engine (scholarflow.ingest.readers); None: the configured one.
    `ocr`: whether unreadable pages go to OCR; None: when an engine is installed.
    Pages whose text is not text, and scanned pages, are read by OCR or left out
    (`scholarflow.ingest.readable`). Encrypted, corrupt and oversized PDFs, and PDFs
    with no readable page, are one-line `DocumentError`s.
    """
    from scholarflow.ingest.readable import no_readable_page, readable_pages
    from scholarflow.ingest.readers import get_reader
    from scholarflow.ingest.readers.guard import check_inflation
    from scholarflow.ingest.readers.ligatures import restore_private
    from scholarflow.ingest.readers.paper import paper_facts

    chosen = get_reader(reader)
    check_inflation(raw, shown)  # before any engine: PDFium aborts the process on a bomb
    # A font's ligatures at private-use code points are read before any page or title is.
    content = restore_private(chosen.read(raw, shown))
    if not content.pages:
        raise DocumentError(f"{shown} is a PDF without pages; re-export it, or give its text "
                            "as a .txt or .md file")
    read = readable_pages(content, shown, raw=raw, ocr=ocr)
    if not any(read.texts):
        raise no_readable_page(shown, content, read)
    content_text, pages = _join_pages(read.texts)
    facts = paper_facts(read.content)
    document = document_from_text(content_text, title=facts.title, source=shown)
    return ExtractedDocument(document, "pdf", pages, authors=facts.authors, year=facts.year,
                             doi=facts.doi, page_count=len(read.texts),
                             ocr_pages=read.ocr_pages, unreadable_pages=read.unreadable_pages,
                             ocr_note=read.note)


def paged_document(extracted: ExtractedDocument) -> Document:
    """The text to give directly for an extracted PDF: its pages and title kept in it."""
    document = extracted.document
    if not extracted.pages:
        return document
    texts = [""] * extracted.pages[-1][0]  # a blank page stays, as an empty one: numbers hold
    ends = [start - len(PAGE_SEPARATOR) for _, start in extracted.pages[1:]]
    for (number, start), end in zip(extracted.pages, [*ends, len(document.content)], strict=True):
        texts[number - 1] = document.content[start:end]
    if document.title != extract_title(document.content):  # the metadata's title
        texts[0] = f"# {document.title}\n\n{texts[0]}"
    return document_from_text(f"\n{PAGE_BREAK}\n".join(texts), title=document.title,
                              source=document.source)


def extracted_from_text(document: Document, kind: Kind = "markdown") -> ExtractedDocument:
    """A document given as text; form feeds in it are page breaks, pages numbered from 1.

    With pages, the text is the one extraction gives (pages apart by a blank
    line) and headings are read as in plain text; `doc_id` and `content_hash`
    stay those of the text as given, which is how the request names it.
    """
    if PAGE_BREAK not in document.content:
        return ExtractedDocument(document, kind)
    texts = [t.strip("\n") for t in document.content.split(PAGE_BREAK)]
    content, pages = _join_pages([t if t.strip() else "" for t in texts])
    return ExtractedDocument(replace(document, content=content), "text", pages)


def _join_pages(texts: list[str]) -> tuple[str, tuple[tuple[int, int], ...]]:
    parts: list[str] = []
    pages: list[tuple[int, int]] = []
    offset = 0
    for number, text in enumerate(texts, start=1):
        if not text:
            continue  # a blank page (figure, scan) holds nothing to find
        if parts:
            parts.append(PAGE_SEPARATOR)
            offset += len(PAGE_SEPARATOR)
        pages.append((number, offset))
        parts.append(text)
        offset += len(text)
    return "".join(parts), tuple(pages)
