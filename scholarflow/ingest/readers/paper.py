"""What a paper says of itself: title, authors, year and DOI, from its metadata and first page.

PDF metadata is often junk ("OP-GENE210101 1..14", "Microsoft Word - draft3"):
a metadata title is taken only when it reads like a title; otherwise the first
page's largest-font lines are. Text drawn invisibly (white, or off the page)
never names the paper: those lines are not offered here by the readers'
geometry, and a title must also be among the page's largest text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

from scholarflow.ingest.readers import Line, PdfContent
from scholarflow.ingest.readers.layout import CAPTION, clean_line

__all__ = ["PaperFacts", "paper_facts"]

_JUNK_TITLE = re.compile(
    r"^(?:untitled|microsoft word|document\d*|title|slide \d+)\b|\.(?:docx?|tex|dvi|pdf|pptx?"
    r"|indd|qxd)\s*$|\d\.\.\d|^[\w.-]*\d[\w.-]*$|^\S+\s+\d+\.\.\d+", re.IGNORECASE)
_DOI = re.compile(r"\b(10\.\d{4,9}/[^\s\"<>,;]+)", re.IGNORECASE)
_YEAR_NEAR = re.compile(
    r"(?:published|accepted|received|©|copyright|\(c\))\D{0,40}?((?:19|20)\d\d)\b", re.IGNORECASE)
_YEAR = re.compile(r"(?<!\d)((?:19|20)\d\d)(?!\d)")
_AUTHOR_SPLIT = re.compile(r"\s*(?:,|;|\band\b|&)\s*")
_NAME = re.compile(r"^[A-Z][\w'’.-]*(?:\s+[A-Z][\w'’.-]*\.?){0,3}\s+[A-Z][\w'’-]+$")
_MARKERS = re.compile(r"[\d*†‡§¶#,]+$|^\W+")
_MAX_AUTHORS = 50
_TITLE_MAX_LINES = 4


@dataclass(frozen=True, slots=True)
class PaperFacts:
    title: str | None = None
    authors: tuple[str, ...] = ()
    year: int | None = None
    doi: str | None = None


def paper_facts(content: PdfContent, first_page: str) -> PaperFacts:
    """Title, authors, year and DOI; `first_page` is the first page's cleaned text."""
    metadata = content.metadata
    title_lines = _title_lines(content)
    title = (_metadata_title(metadata.get("title", ""))
             or " ".join(line.text for line in title_lines) or _first_line(content))
    authors = _metadata_authors(metadata.get("author", "")) or _first_page_authors(
        content, title_lines)
    return PaperFacts(title, authors, _year(metadata, first_page), _doi(metadata, first_page))


def _metadata_title(raw: str) -> str | None:
    title = " ".join(raw.split())
    if (len(title) < 3 or _JUNK_TITLE.search(title)
            or sum(c.isalpha() for c in title) < len(title) / 2):
        return None
    return title


def _title_lines(content: PdfContent) -> list[Line]:
    """The first page's largest text near its top: consecutive lines of that size."""
    if not content.pages or not content.pages[0].positioned:
        return []
    page = content.pages[0]
    lines = [line for line in page.lines if _titlelike(line.text)
             and (not page.height or line.top < page.height * 0.6)]
    if not lines:
        return []
    largest = max(line.size for line in lines)
    sizes = sorted(line.size for line in page.lines)
    if largest <= 0 or largest < sizes[len(sizes) // 2] * 1.15:
        return []  # nothing stands out: the text's first line is the title
    chosen: list[Line] = []
    for line in sorted(lines, key=lambda line: line.top):
        if line.size >= largest * 0.92:
            if chosen and line.top - chosen[-1].bottom > largest * 1.5:
                break
            chosen.append(line)
        elif chosen:
            break
    chosen = chosen[:_TITLE_MAX_LINES]
    return [Line(clean_line(line.text), line.x0, line.top, line.x1, line.bottom, line.size)
            for line in chosen]


def _first_line(content: PdfContent) -> str | None:
    for page in content.pages[:1]:
        for line in page.lines:
            if _titlelike(text := clean_line(line.text)):
                return text
    return None


def _titlelike(text: str) -> bool:
    text = text.strip()
    return (sum(c.isalpha() for c in text) >= 3 and CAPTION.match(text) is None
            and not _DOI.search(text))


def _metadata_authors(raw: str) -> tuple[str, ...]:
    names = tuple(_names(raw))
    return names if names else ()


def _first_page_authors(content: PdfContent, title_lines: list[Line]) -> tuple[str, ...]:
    """The line(s) right under the title, when they read as a list of names."""
    if not title_lines:
        return ()
    page = content.pages[0]
    below = sorted((line for line in page.lines if line.top > title_lines[-1].bottom - 1),
                   key=lambda line: line.top)
    names: list[str] = []
    for line in below[:4]:
        found = _names(clean_line(line.text))
        if not found:
            if names:
                break
            continue
        names.extend(found)
    return tuple(dict.fromkeys(names))[:_MAX_AUTHORS]


def _names(raw: str) -> list[str]:
    names = []
    for part in _AUTHOR_SPLIT.split(raw):
        name = _MARKERS.sub("", part.strip()).strip()
        name = re.sub(r"(?<=[a-z])[\d*†‡§¶]+$", "", name)
        if name and _NAME.match(name):
            names.append(name)
    parts = [p for p in _AUTHOR_SPLIT.split(raw) if p.strip()]
    return names if parts and len(names) * 2 >= len(parts) else []


def _year(metadata: dict[str, str], first_page: str) -> int | None:
    latest = datetime.now(UTC).year + 1
    head = first_page[:6000]
    for pattern in (_YEAR_NEAR, _YEAR):
        years = [int(y) for y in pattern.findall(head) if 1900 <= int(y) <= latest]
        if years:
            return max(set(years), key=years.count) if pattern is _YEAR else years[0]
    created = _YEAR.search(metadata.get("creationdate", ""))
    return int(created.group(1)) if created else None


def _doi(metadata: dict[str, str], first_page: str) -> str | None:
    for text in (metadata.get("doi", ""), metadata.get("subject", ""), first_page,
                 metadata.get("keywords", "")):
        found = _DOI.search(text)
        if found:
            return found.group(1).rstrip(".)]").lower()
    return None
