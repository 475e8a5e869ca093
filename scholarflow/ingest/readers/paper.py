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
from scholarflow.ingest.readers.authors import AFFILIATION as _AFFILIATION
from scholarflow.ingest.readers.authors import first_page_authors, metadata_authors, names
from scholarflow.ingest.readers.columns import body_size, strip_line_numbers
from scholarflow.ingest.readers.layout import DOWNLOADED as _DOWNLOADED
from scholarflow.ingest.readers.layout import clean_line
from scholarflow.ingest.sections import CAPTION

__all__ = ["PaperFacts", "paper_facts"]

_JUNK_TITLE = re.compile(
    r"^(?:untitled|microsoft word|document\d*|title|slide \d+|template)\b"
    r"|\.(?:docx?|tex|dvi|pdf|pptx?"
    r"|indd|qxd)\s*$|\d\.\.\d|^[\w.-]*\d[\w.-]*$|^\S+\s+\d+\.\.\d+", re.IGNORECASE)
_MARKUP = re.compile(r"<[^<>]{1,80}>")
_ARCHIVE_ID = re.compile(r"^\[[\w.-]+-\d+,\s*v\d+\]")
# Never a title: an email or a set of them, an arXiv stamp, a reference to the paper itself
# ("Smith, J., & Lee, K. (2011). Title. Journal."), a line of a paragraph set large by its
# drop cap.
_NOT_A_TITLE = re.compile(
    r"@|^arXiv:|\(\d{4}\)\.\s|\bdoi:|\b(?:vol\.|pp\.)\s*\d|^\{", re.IGNORECASE)
_TITLE_MAX_WORDS = 14
_DOI = re.compile(r"\b(10\.\d{4,9}/[^\s\"<>,;]+)", re.IGNORECASE)
_YEAR_NEAR = re.compile(
    r"(?:published|accepted|received|©|copyright|\(c\))\D{0,40}?((?:19|20)\d\d)\b", re.IGNORECASE)
_YEAR = re.compile(r"(?<!\d)((?:19|20)\d\d)(?!\d)")
_CREATED = re.compile(r"^(?:D:)?((?:19|20)\d\d)")  # "D:20010515093000"
# Where a first page's front matter ends; how many lines it and the footers may have.
_BODY_START = re.compile(r"(?:abstract|summary|introduction|\d\.?\s+introduction)\b",
                         re.IGNORECASE)
_FRONT_LINES = 25
_LINK = re.compile(r"\b(?:doi:\s*|https?://)\S+|\b10\.\d{4,9}/\S+", re.IGNORECASE)
_VENUE = re.compile(r"\b\d{1,3}\s?\(\d{1,2}\)[:,]\s*\d|\bproceedings of\b|\bvol(?:ume)?\.?\s*\d",
                    re.IGNORECASE)
_FOOTER_LINES = 6
# When a copy was made, not the paper: "Retrieved on: 18 March 2016", "Accessed ...".
_STAMP = re.compile(r"\b(?:retrieved|downloaded|accessed|available from|printed)\b",
                    re.IGNORECASE)
_TITLE_MAX_LINES = 4
# A title's font is this much larger than page 1's middle size, at least.
_TITLE_SIZE = 1.1
# A title is in the top part of its page (a table of contents or a figure further down
# may be set larger).
_TITLE_ZONE = 0.45
_RUN_SIZES = 0.08  # how much smaller a title's next line may be set
_RUN_GROWTH = 0.02  # and how much larger
_NEARLY = 0.95  # a run this large above the largest is the title (authors set larger)


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
    title = _metadata_title(metadata.get("title", ""), raw_first)
    if found and (title is None or _normal(found).startswith(_normal(title))):
        title = found  # metadata titles are often cut short ("A loss-of-function mutation in")
    title = title or _first_line(first)
    # The page's own names first: metadata orders them either way ("Saproo Sheetanshu").
    authors = first_page_authors(_below(content, first, title_lines, title)) or (
        metadata_authors(metadata.get("author", "")))
    doi = _doi(metadata, raw_first)
    return PaperFacts(title, authors, _year(metadata, content, raw_first, doi), doi)


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


def _metadata_title(raw: str, first_page: str) -> str | None:
    """The metadata's title when it reads as one: markup and an archive's id ("[hal-0123,
    v1]") taken off; an acronym only when page 1 prints it (else it is a journal's)."""
    title = " ".join(_MARKUP.sub("", html.unescape(raw)).split())
    title = _ARCHIVE_ID.sub("", title).strip()
    if (len(title) < 3 or _JUNK_TITLE.search(title)
            or sum(c.isalpha() for c in title) < len(title) / 2):
        return None
    if " " not in title and title.isupper() and _normal(title) not in _normal(first_page):
        return None
    return title


def _title_lines(content: PdfContent, first: list[Line]) -> list[Line]:
    """The first page's largest text near its top: a run of lines of that size.

    Lines are grouped into runs (one size, one after the other, the other
    column's lines skipped); a run with a line that is no title's (an email, a
    citation of the paper, a stamp) is no title at all, nor its first line's
    paragraph. The largest run that stands out from the page's text wins.
    """
    if not content.pages or not content.pages[0].positioned:
        return []
    page = content.pages[0]
    lines = sorted((line for line in first if not line.hidden
                    and line.x1 - line.x0 > line.bottom - line.top  # no vertical margin note
                    and (not page.height or line.top < page.height * _TITLE_ZONE)),
                   key=lambda line: line.top)
    runs: list[list[Line]] = []
    for line in lines:
        for run in runs[-3:]:
            last = run[-1]
            # One title's lines may shrink a little ("Title:" / "its subtitle"); a larger
            # line after it is the authors' or a banner's.
            if (last.size * (1 - _RUN_SIZES) <= line.size <= last.size * (1 + _RUN_GROWTH)
                    and line.top - last.bottom <= last.size and not _beside(line, run)):
                run.append(line)
                break
        else:
            runs.append([line])
    candidates = [run[:_TITLE_MAX_LINES] for run in runs
                  if all(_titlelike(clean_line(line.text)) for line in run)
                  and not _signed(run, sorted(first, key=lambda line: line.top))]
    if not candidates:
        return []
    text_size = body_size([first])
    largest = max(max(line.size for line in run) for run in candidates)
    if largest >= text_size * _TITLE_SIZE:
        # The largest text, or a run nearly as large above it (authors set larger).
        best = next(run for run in candidates
                    if max(line.size for line in run) >= largest * _NEARLY)
    else:  # nothing stands out: the first run as large as the text (no banner, no stamp)
        found = [run for run in candidates if max(line.size for line in run) >= text_size]
        if not found:
            return []
        best = found[0][:1]  # its first line: the lines after it may be the text's own
    return [Line(clean_line(line.text), line.x0, line.top, line.x1, line.bottom, line.size)
            for line in best]


def _signed(run: list[Line], lines: list[Line]) -> bool:
    """Whether `run` reads as names and the line right under it is an affiliation or an
    email: it names an author, however large it is set."""
    if not names(" ".join(clean_line(line.text) for line in run)):
        return False
    below = next((line for line in lines if line.top >= run[-1].bottom - 1
                  and not _beside(line, run)), None)
    return below is not None and bool(_AFFILIATION.search(below.text) or "@" in below.text)


def _below(content: PdfContent, first: list[Line], title_lines: list[Line],
           title: str | None) -> list[Line]:
    """Page 1's lines under its title, top down; on a page without positions, the lines
    after the one that is the title, in the engine's order."""
    if title_lines:
        return sorted((line for line in first if line.top > title_lines[-1].bottom - 1
                       and not line.hidden), key=lambda line: line.top)
    if content.pages and not content.pages[0].positioned and title:
        texts = [clean_line(line.text) for line in first]
        if title in texts:
            return first[texts.index(title) + 1:]
    return []


def _beside(line: Line, chosen: list[Line]) -> bool:
    """Whether `line` shares no width with the title's lines (another column's)."""
    left, right = min(c.x0 for c in chosen), max(c.x1 for c in chosen)
    return line.x0 >= right or line.x1 <= left


def _first_line(first: list[Line]) -> str | None:
    for line in first:
        if not line.hidden and _titlelike(text := clean_line(line.text)):
            return text
    return None


def _titlelike(text: str) -> bool:
    text = text.strip()
    return (sum(c.isalpha() for c in text) >= 3 and CAPTION.match(text) is None
            and not _DOI.search(text) and not _NOT_A_TITLE.search(text)
            and len(text.split()) <= _TITLE_MAX_WORDS and not _AFFILIATION.search(text))


def _year(metadata: dict[str, str], content: PdfContent, first_page: str,
          doi: str | None) -> int | None:
    """The paper's year as its first page gives it, the PDF's creation date only when the
    page gives none: a scan or a reprint is made years after the paper.

    In order: a dated line ("Received 2023 ... Published 2024": the latest); the DOI's
    year (bioRxiv's "10.1101/2024.05.07.593022": first posted, whatever the version);
    the page's front matter, then its footers (venue, date line, copyright, arXiv
    stamp: the most frequent, then the latest), a download stamp left out; the
    creation date; any year on the page.
    """
    latest = datetime.now(UTC).year + 1

    def plausible(years: list[str]) -> list[int]:
        return [int(y) for y in years if 1900 <= int(y) <= latest]

    def frequent(years: list[int]) -> int:
        return max(set(years), key=lambda y: (years.count(y), y))

    if near := plausible(_YEAR_NEAR.findall(first_page)):
        return max(near)
    if doi and (dated := plausible(_YEAR.findall(doi.split("/", 1)[-1][:4]))):
        return dated[0]
    front, footers = _front_and_footers(content)
    for framed in (front, footers):
        if years := plausible(_YEAR.findall(framed)):
            return frequent(years)
    created_at = metadata.get("creationdate", "")
    if created := plausible((_CREATED.findall(created_at) or _YEAR.findall(created_at))[:1]):
        return created[0]
    years = plausible(_YEAR.findall(first_page))
    return frequent(years) if years else None


def _front_and_footers(content: PdfContent) -> tuple[str, str]:
    """Page 1's front matter (its lines above the abstract or first section, and any line
    naming a venue: "PVLDB, 14(3): 268-280, 2021"), and its last lines; without DOIs,
    links and download stamps, whose digits are no year of the paper."""
    if not content.pages:
        return "", ""
    lines = [_LINK.sub("", line.text)
             for line in sorted(content.pages[0].lines, key=lambda line: line.top)
             if not _DOWNLOADED.match(line.text) and not _STAMP.search(line.text)]
    front: list[str] = []
    for text in lines[:_FRONT_LINES]:
        if _BODY_START.match(text):
            break
        front.append(text)
    front += [text for text in lines if _VENUE.search(text)]
    return "\n".join(front), "\n".join(lines[-_FOOTER_LINES:])


def _doi(metadata: dict[str, str], first_page: str) -> str | None:
    for text in (metadata.get("doi", ""), metadata.get("subject", ""), first_page,
                 metadata.get("keywords", "")):
        found: list[str] = [doi.rstrip(".)]").lower() for doi in _DOI.findall(text)]
        found = [doi for doi in found if re.search(r"/.*[\d.].*\w", doi)]
        if found:
            return max(found, key=len)  # "10.1073/pnas." of a cut link loses to the whole
    return None
