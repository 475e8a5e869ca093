"""Text extraction: PDF (pypdf, page by page), Markdown and plain text.

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

import io
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from scholarflow.ingest.chunking import plain_heading_level
from scholarflow.ingest.documents import (
    Document,
    DocumentError,
    document_from_bytes,
    document_from_text,
    extract_title,
    is_pdf,
    read_document_bytes,
)

if TYPE_CHECKING:
    from pypdf import PdfReader

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
_LIGATURES = str.maketrans({"ﬀ": "ff", "ﬁ": "fi", "ﬂ": "fl", "ﬃ": "ffi", "ﬄ": "ffl", "\x00": ""})
# A paragraph's last line ends a sentence and is clearly shorter than the page's lines.
_SENTENCE_END = re.compile(r"[.!?:。！？：”\"')）]\s*$")
_SHORT_LINE_RATIO = 0.7
# Metadata titles that name the authoring tool or file rather than the paper.
_JUNK_TITLE = re.compile(
    r"^(?:untitled|microsoft word|document\d*|title)\b|\.(?:docx?|tex|dvi|pdf|pptx?)\s*$",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class ExtractedDocument:
    document: Document
    kind: Kind
    # (1-based page number, offset of the page's first character in document.content),
    # ascending; empty for anything but a PDF. Pages without text are left out.
    pages: tuple[tuple[int, int], ...] = field(default=())

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


def extract_file(path: str | Path) -> ExtractedDocument:
    """Read one file; `DocumentError` with a one-line reason when it cannot be used."""
    shown = str(path)
    raw = read_document_bytes(path)
    if is_pdf(path, raw):
        return extract_pdf(raw, shown)
    kind: Kind = "markdown" if Path(path).suffix.lower() in MARKDOWN_SUFFIXES else "text"
    return ExtractedDocument(document_from_bytes(raw, shown), kind)


def extract_pdf(raw: bytes, shown: str) -> ExtractedDocument:
    """A PDF's text, page by page; encrypted, corrupt and scanned PDFs are clear errors."""
    from pypdf import PdfReader  # lazy: pypdf costs ~100 ms of imports
    from pypdf.errors import FileNotDecryptedError

    try:
        reader = PdfReader(io.BytesIO(raw))
        if reader.is_encrypted and not _decrypt_with_empty_password(reader, shown):
            raise DocumentError(f"{shown} is encrypted; decrypt it first")
        texts = [_page_text(page.extract_text()) for page in reader.pages]
        title = _metadata_title(reader)
    except DocumentError:
        raise
    except FileNotDecryptedError:
        raise DocumentError(f"{shown} is encrypted; decrypt it first") from None
    except Exception as exc:  # pypdf raises many types on damaged files; all mean the same
        raise DocumentError(f"{shown} is not a readable PDF ({_reason(exc)}): re-export it "
                            "as PDF, or give its text as a .txt or .md file") from None

    if not texts:
        raise DocumentError(f"{shown} is a PDF without pages; re-export it, or give its text "
                            "as a .txt or .md file")
    if not any(texts):
        raise DocumentError(
            f"{shown} has no extractable text (its {len(texts)} page(s) may be scanned "
            "images); run OCR on it first"
        )
    content, pages = _join_pages(texts)
    document = document_from_text(content, title=title, source=shown)
    return ExtractedDocument(document, "pdf", pages)


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


def _decrypt_with_empty_password(reader: PdfReader, shown: str) -> bool:
    """Many PDFs are encrypted only to set permissions, with an empty user password."""
    from pypdf import PasswordType
    from pypdf.errors import DependencyError

    try:
        return reader.decrypt("") != PasswordType.NOT_DECRYPTED
    except DependencyError:
        raise DocumentError(
            f"{shown} is AES-encrypted and opening it needs the 'cryptography' package: "
            "pip install 'pypdf[crypto]'"
        ) from None


def _page_text(text: str) -> str:
    """One page's text, cleaned, with paragraphs and headings separated by blank lines."""
    text = text.translate(_LIGATURES)
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = [line.rstrip() for line in text.split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    while lines and not lines[0]:
        lines.pop(0)
    if not lines:
        return ""
    # pypdf puts no blank line between paragraphs; without them a whole page
    # would be one paragraph and every chunk a mid-paragraph split.
    lengths = sorted(len(line) for line in lines if line)
    typical = lengths[len(lengths) * 3 // 4] if lengths else 0
    out: list[str] = []
    for i, line in enumerate(lines):
        heading = plain_heading_level(line.strip()) is not None and len(line) < typical
        if heading and out and out[-1]:
            out.append("")
        out.append(line)
        last = i == len(lines) - 1
        ends_paragraph = (
            heading
            or (bool(line) and _SENTENCE_END.search(line) is not None
                and len(line) < typical * _SHORT_LINE_RATIO)
        )
        if ends_paragraph and not last:
            out.append("")
    return "\n".join(out)


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


def _metadata_title(reader: PdfReader) -> str | None:
    metadata = reader.metadata
    raw = metadata.title if metadata is not None else None
    title = " ".join(str(raw).split()) if raw else ""
    if len(title) < 3 or _JUNK_TITLE.search(title) or not any(c.isalpha() for c in title):
        return None  # the first line of the text is the better title
    return title


def _reason(exc: Exception) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text[:200]
