"""What a paper says of itself: title, authors, year and DOI, from its metadata and first page.

PDF metadata is often junk ("OP-GENE210101 1..14", "Microsoft Word - draft3"):
a metadata title is taken only when it reads like a title; otherwise the first
page's largest-font lines are. A line that recurs on later pages (a running
header), a line number, a download stamp or a vertical margin note never
names the paper.
"""

from __future__ import annotations

import html
import re
import unicodedata
from dataclasses import dataclass
from datetime import UTC, datetime

from scholarflow.ingest.readers import Line, PdfContent
from scholarflow.ingest.readers.columns import strip_line_numbers
from scholarflow.ingest.readers.layout import DOWNLOADED as _DOWNLOADED
from scholarflow.ingest.readers.layout import clean_line
from scholarflow.ingest.sections import CAPTION

__all__ = ["PaperFacts", "paper_facts"]

_JUNK_TITLE = re.compile(
    r"^(?:untitled|microsoft word|document\d*|title|slide \d+)\b|\.(?:docx?|tex|dvi|pdf|pptx?"
    r"|indd|qxd)\s*$|\d\.\.\d|^[\w.-]*\d[\w.-]*$|^\S+\s+\d+\.\.\d+", re.IGNORECASE)
_DOI = re.compile(r"\b(10\.\d{4,9}/[^\s\"<>,;]+)", re.IGNORECASE)
_YEAR_NEAR = re.compile(
    r"(?:published|accepted|received|©|copyright|\(c\))\D{0,40}?((?:19|20)\d\d)\b", re.IGNORECASE)
_YEAR = re.compile(r"(?<!\d)((?:19|20)\d\d)(?!\d)")
_AUTHOR_SPLIT = re.compile(r"\s*(?:,|;|\band\b|&)\s*", re.IGNORECASE)
_NAME = re.compile(r"^[A-Z][\w'’.-]*(?:\s+[A-Z][\w'’.-]*\.?){0,3}\s+[A-Z][\w'’-]+$")
_NOT_A_NAME = re.compile(
    r"\b(?:institute|university|association|department|center|centre|laboratory|school|"
    r"college|hospital|society|foundation|faculty|division|program|academy|research|science)",
    re.IGNORECASE)
_MARKERS = re.compile(r"[\d*†‡§¶#,]+$|^\W+")
_MAX_AUTHORS = 50
_TITLE_MAX_LINES = 4


@dataclass(frozen=True, slots=True)
class PaperFacts:
    title: str | None = None
    authors: tuple[str, ...] = ()
    year: int | None = None
    doi: str | None = None


def paper_facts(content: PdfContent) -> PaperFacts:
    """Title, authors, year and DOI, from the metadata and the first page's lines."""
    metadata = content.metadata
    first = _first_page_lines(content)
    # The DOI and the year are often in a running footer ("2 of 7 https://doi.org/..."):
    # looked for in all of page 1 but its download stamps.
    raw_first = "\n".join(line.text for line in content.pages[0].lines
                          if not _DOWNLOADED.match(line.text)) if content.pages else ""
    title_lines = _title_lines(content, first)
    found = " ".join(line.text for line in title_lines)
    title = _metadata_title(metadata.get("title", ""))
    if found and (title is None or _normal(found).startswith(_normal(title))):
        title = found  # metadata titles are often cut short ("A loss-of-function mutation in")
    title = title or _first_line(first)
    # The page's own names first: metadata orders them either way ("Saproo Sheetanshu").
    authors = _first_page_authors(first, title_lines) or _metadata_authors(
        metadata.get("author", ""))
    doi = _doi(metadata, raw_first)
    return PaperFacts(title, authors, _year(metadata, raw_first, doi), doi)


def _normal(text: str) -> str:
    return re.sub(r"\W+", "", unicodedata.normalize("NFKC", text).lower())


def _first_page_lines(content: PdfContent) -> list[Line]:
    """Page 1's lines without line numbers, download stamps and what recurs on later pages."""
    if not content.pages:
        return []
    later = {_key(line.text) for page in content.pages[1:4] for line in page.lines}
    return [line for line in strip_line_numbers(list(content.pages[0].lines))
            if _key(line.text) not in later and not _DOWNLOADED.match(line.text)]


def _key(text: str) -> str:
    return re.sub(r"\d+", "#", text.lower().replace(" ", ""))


def _metadata_title(raw: str) -> str | None:
    title = " ".join(html.unescape(raw).split())
    if (len(title) < 3 or _JUNK_TITLE.search(title)
            or sum(c.isalpha() for c in title) < len(title) / 2):
        return None
    return title


def _title_lines(content: PdfContent, first: list[Line]) -> list[Line]:
    """The first page's largest text near its top: consecutive lines of that size."""
    if not content.pages or not content.pages[0].positioned:
        return []
    page = content.pages[0]
    lines = [line for line in first if _titlelike(line.text)
             and line.x1 - line.x0 > line.bottom - line.top  # not a vertical margin note
             and (not page.height or line.top < page.height * 0.6)]
    if not lines:
        return []
    largest = max(line.size for line in lines)
    sizes = sorted(line.size for line in first)
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


def _first_line(first: list[Line]) -> str | None:
    for line in first:
        if _titlelike(text := clean_line(line.text)):
            return text
    return None


def _titlelike(text: str) -> bool:
    text = text.strip()
    return (sum(c.isalpha() for c in text) >= 3 and CAPTION.match(text) is None
            and not _DOI.search(text))


def _metadata_authors(raw: str) -> tuple[str, ...]:
    raw = html.unescape(raw)
    if ";" in raw:  # "Saproo, Sheetanshu; Leal, Karla": surname first
        parts = [part.strip() for part in raw.split(";") if part.strip()]
        raw = ", ".join(" ".join(reversed(part.split(",", 1))).strip() if part.count(",") == 1
                        else part for part in parts)
    return tuple(_names(raw))


def _first_page_authors(first: list[Line], title_lines: list[Line]) -> tuple[str, ...]:
    """The line(s) right under the title, when they read as a list of names."""
    if not title_lines:
        return ()
    below = sorted((line for line in first if line.top > title_lines[-1].bottom - 1),
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
        if name and _NAME.match(name) and not _NOT_A_NAME.search(name):
            names.append(name)
    parts = [p for p in _AUTHOR_SPLIT.split(raw) if p.strip()]
    return names if parts and len(names) * 2 >= len(parts) else []


def _year(metadata: dict[str, str], first_page: str, doi: str | None) -> int | None:
    latest = datetime.now(UTC).year + 1

    def plausible(years: list[str]) -> list[int]:
        return [int(y) for y in years if 1900 <= int(y) <= latest]

    if near := plausible(_YEAR_NEAR.findall(first_page)):
        return max(near)  # "Received 2023 ... Published 2024": the latest
    if doi and (dated := plausible(_YEAR.findall(doi.split("/", 1)[-1][:4]))):
        return dated[0]  # bioRxiv's "10.1101/2024.05.07.593022"
    if created := plausible(_YEAR.findall(metadata.get("creationdate", "")[:8])):
        return created[0]
    years = plausible(_YEAR.findall(first_page))
    return max(set(years), key=lambda y: (years.count(y), y)) if years else None


def _doi(metadata: dict[str, str], first_page: str) -> str | None:
    for text in (metadata.get("doi", ""), metadata.get("subject", ""), first_page,
                 metadata.get("keywords", "")):
        found: list[str] = [doi.rstrip(".)]").lower() for doi in _DOI.findall(text)]
        found = [doi for doi in found if re.search(r"/.*[\d.].*\w", doi)]
        if found:
            return max(found, key=len)  # "10.1073/pnas." of a cut link loses to the whole
    return None
