"""From an engine's lines to the text a reader sees: the cleanup every reader shares.

- Characters: ligatures (also TeX's control codes for them, and dropped ones:
  `ligatures.py`), spacing accents ("Ho¨ glund" is "Höglund"), letter-spaced
  runs ("B a n n o") and control characters.
- Furniture: running headers and footers (a line at a page's top or bottom whose
  digit-blind form recurs on many pages), page numbers, "Downloaded from ..."
  lines, and text in the side margins (publishers' vertical stamps) are dropped.
- Order: the engine's, which follows the columns in most PDFs; a page
  drawn row by row across its columns is read column by column (`columns.py`),
  and smaller text that cuts a paragraph (figure labels) goes after it.
- Paragraphs: a page's lines become paragraphs, one a line of text, blank lines
  between; a line-end hyphen is joined when the next line goes on in lower case,
  unless the document writes the hyphenated form more often than the joined one.
  A paragraph a page break cuts mid-sentence is finished on its first page, past a
  page of figures if need be.
- Captions ("Figure 3.", "Fig. 2 |", "Table 1:") are paragraphs of their own,
  moved after the page's running text so they never cut a sentence in two.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from scholarflow.ingest.readers import Line, PageText
from scholarflow.ingest.readers.columns import (
    body_size,
    merge_fragments,
    reading_order,
    strip_line_numbers,
)
from scholarflow.ingest.readers.ligatures import restore_codes, restore_dropped
from scholarflow.ingest.sections import CAPTION, plain_heading_level

__all__ = ["DOWNLOADED", "clean_line", "page_texts"]

_LIGATURES = str.maketrans({
    "ﬀ": "ff", "ﬁ": "fi", "ﬂ": "fl", "ﬃ": "ffi", "ﬄ": "ffl", "ﬅ": "st", "ﬆ": "st",
    "\x00": "", "\u00ad": "", "\ufffe": "-", "\u2009": " ", "\u2003": " ", "\u2002": " ",
    "\u00a0": " ", "\u200b": "", "\ufeff": "",
})
# Spacing accents as LaTeX and some typesetters draw them, and their combining forms.
_ACCENTS = {"¨": "\u0308", "´": "\u0301", "ˆ": "\u0302", "˜": "\u0303", "¸": "\u0327",
            "˚": "\u030a", "ˇ": "\u030c", "¯": "\u0304", "˘": "\u0306", "˙": "\u0307",
            "˝": "\u030b"}
_ACCENT_AFTER = re.compile(r"([A-Za-z])([¨´ˆ˜¸˚ˇ¯˘˙˝]) ?(?=[a-z])|([A-Za-z])([¨´ˆ˜¸˚ˇ¯˘˙˝])")
_DOTLESS = re.compile(r"([¨´ˆ˜¸˚ˇ¯˘˙˝]) ?ı")
_ACCENT_BEFORE = re.compile(r"([¨´ˆ˜¸˚ˇ¯˘˙˝]) ?([A-Za-z])")
# Four or more single letters apart ("B a n n o"): one word set letter-spaced.
_SPACED = re.compile(r"(?<!\S)(?:[^\W\d_][ ,.]){3,}[^\W\d_](?!\S)")  # not "0 1 0 1"
_CONTROL = re.compile(r"[\x01-\x08\x0b-\x1f\x7f]")

DOWNLOADED = re.compile(
    r"^(?:downloaded from|this article is protected by copyright|provided by|"
    r"copyright \(c\)|©\s*\d{4}.*all rights reserved)", re.IGNORECASE)
_PAGE_NUMBER = re.compile(
    r"^(?:page\s*)?[\divxlc]{1,5}(?:\s*(?:of|/)\s*\d{1,5})?$", re.IGNORECASE)
_SENTENCE_END = re.compile(r"[.!?:)\]\"”’]$")
_SENTENCE_CUT = re.compile(r"[.!?][\"”’)\]]*\s+(?=[A-Z(\[“\"])")
_WORD = re.compile(r"[\w-]+")
# Lines this close to a page's top or bottom edge (share of its height) may be furniture.
_EDGE_SHARE = 0.09
_MARGIN_SHARE = 0.045
# The first and last lines of a page within this share of its height may be furniture
# too (LaTeX's running heads sit lower than a journal's).
_OUTER_SHARE = 0.2
_OUTER_LINES = 2
# A cut paragraph goes on at most this many pages on (past one page of figures).
_CONTINUATION_PAGES = 2
_LABEL_CHARS = 40  # shorter non-heading text on a figure page: panel letters, axis labels
# How a sentence's second half may start besides in lower case: "13–14), ...", ", and".
_CONTINUES = re.compile(r"^(?:[,;)\]]|\d[\d\u2013\u2010-]*[,;)\]])")


def clean_line(text: str) -> str:
    """One line's characters as meant: ligatures, accents, spacing, control characters."""
    text = text.translate(_LIGATURES)
    if _CONTROL.search(text):
        text = _CONTROL.sub("", restore_codes(text))
    if any(accent in text for accent in _ACCENTS):
        # TeX sets "í" as an accent over a dotless i: "Garc´ıa".
        text = _DOTLESS.sub(lambda m: _accented("i", m.group(1)), text)
        text = _ACCENT_AFTER.sub(_combine_after, text)
        text = _ACCENT_BEFORE.sub(lambda m: _accented(m.group(2), m.group(1)), text)
    if " " in text and _SPACED.search(text):
        text = _SPACED.sub(lambda m: m.group(0).replace(" ", ""), text)
    return " ".join(text.split())


def _combine_after(found: re.Match[str]) -> str:
    if found.group(1):
        return _accented(found.group(1), found.group(2))
    return _accented(found.group(3), found.group(4))


def _accented(letter: str, accent: str) -> str:
    return unicodedata.normalize("NFC", letter + _ACCENTS[accent])


@dataclass(slots=True)
class _Paragraph:
    lines: list[Line] = field(default_factory=list)
    caption: bool = False


def page_texts(pages: Sequence[PageText]) -> list[str]:
    """Every page's text: paragraphs one a line, a blank line between; "" for a blank page."""
    cleaned = [[replace(line, text=clean_line(line.text)) for line in page.lines]
               for page in pages]
    cleaned = [[line for line in lines if line.text] for lines in cleaned]
    kept = _drop_furniture(pages, cleaned)
    ordered = [merge_fragments(page, reading_order(page, strip_line_numbers(lines)))
               for page, lines in zip(pages, kept, strict=True)]
    size = body_size(ordered)
    paragraphs = [_paragraphs(page, lines, size)
                  for page, lines in zip(pages, ordered, strict=True)]
    counts = _word_counts(ordered)
    texts = [[_joined(p.lines, counts) for p in page] for page in paragraphs]
    _join_across_pages(texts, counts)
    return restore_dropped(["\n\n".join(t for t in page if t) for page in texts])


# --- furniture ------------------------------------------------------------------


def _key(text: str) -> str:
    return re.sub(r"\d+", "#", text.lower().replace(" ", ""))


def _drop_furniture(pages: Sequence[PageText], lines: list[list[Line]]) -> list[list[Line]]:
    """Without running headers, footers, page numbers, download stamps and margin text."""
    edges = [_edge_lines(page, page_lines) for page, page_lines in zip(pages, lines, strict=True)]
    seen = Counter(key for page_edges in edges for key in {_key(line.text) for line in page_edges})
    repeated = max(3, round(len(pages) * 0.25)) if len(pages) >= 3 else len(pages) + 1
    out = []
    for page, page_lines, page_edges in zip(pages, lines, edges, strict=True):
        edge_ids = {id(line) for line in page_edges}
        kept = []
        for line in page_lines:
            text = line.text
            if DOWNLOADED.match(text):
                continue
            if id(line) in edge_ids and (seen[_key(text)] >= repeated
                                         or _PAGE_NUMBER.match(text)):
                continue
            if page.positioned and page.width and (
                    line.x1 < page.width * _MARGIN_SHARE
                    or line.x0 > page.width * (1 - _MARGIN_SHARE)):
                continue
            kept.append(line)
        out.append(kept)
    return out


def _edge_lines(page: PageText, lines: list[Line]) -> list[Line]:
    """Lines that could be a running header or footer: the page's top and bottom ones."""
    if not page.positioned or not page.height:
        return lines[:2] + lines[-2:]
    by_top = sorted(lines, key=lambda line: line.top)
    top_edge = page.height * _EDGE_SHARE
    bottom_edge = page.height * (1 - _EDGE_SHARE)
    edges = [line for line in by_top[:4] if line.top < top_edge]
    edges += [line for line in by_top[-4:] if line.bottom > bottom_edge and line not in edges]
    # Margins differ: the page's first and last lines are candidates further in too,
    # unless they end a sentence (a heading or a title does not).
    edges += [line for line in by_top[:_OUTER_LINES] if line.top < page.height * _OUTER_SHARE
              and line not in edges and not line.text.endswith((".", "?", "!"))]
    edges += [line for line in by_top[-_OUTER_LINES:]
              if line.bottom > page.height * (1 - _OUTER_SHARE) and line not in edges
              and not line.text.endswith((".", "?", "!"))]
    return edges


# --- paragraphs -----------------------------------------------------------------


def _paragraphs(page: PageText, lines: list[Line], body: float) -> list[_Paragraph]:
    """Lines grouped into paragraphs; captions and smaller text moved after the running text."""
    paragraphs: list[_Paragraph] = []
    current = _Paragraph()
    previous: Line | None = None
    for line in lines:
        # "...as shown in\nFig. 3. The" is running text: a caption starts a paragraph.
        caption = not line.hidden and CAPTION.match(line.text) is not None and (
            previous is None or _breaks(page, previous, line)
            or bool(_SENTENCE_END.search(previous.text)))
        # A caption drawn apart from the text ends where the text resumes above it.
        caption_ends = current.caption and previous is not None and line.top < previous.top
        if previous is not None and (caption or caption_ends or _breaks(page, previous, line)):
            paragraphs.append(current)
            current = _Paragraph(caption=caption)
        elif previous is None:
            current.caption = caption
        current.lines.append(line)
        previous = line
    if current.lines:
        paragraphs.append(current)
    running: list[_Paragraph] = []
    asides: list[_Paragraph] = []
    for paragraph in paragraphs:
        sizes = sorted(line.size for line in paragraph.lines)
        smaller = page.positioned and body > 0 and sizes[len(sizes) // 2] < body * 0.85
        if paragraph.caption or smaller:
            asides.append(paragraph)
        elif running and _goes_on(running[-1], paragraph):
            running[-1].lines.extend(paragraph.lines)  # cut by a figure or a column break
        else:
            running.append(paragraph)
    return running + asides


def _goes_on(paragraph: _Paragraph, following: _Paragraph) -> bool:
    return _continues(paragraph.lines[-1].text, following.lines[0].text)


def _continues(last: str, first: str) -> bool:
    """`first` finishes the sentence `last` leaves open: it goes on in lower case, or
    `last` ends in a hyphen."""
    return not _SENTENCE_END.search(last) and (first[:1].islower() or last.endswith("-"))


def _breaks(page: PageText, previous: Line, line: Line) -> bool:
    """Whether `line` starts a new paragraph after `previous`."""
    if previous.hidden or line.hidden:
        return False  # unseen text never stands alone, as a heading or a caption would
    if _heading(previous.text) and len(previous.text) < 0.7 * len(line.text):
        return True
    if _heading(line.text) and (_SENTENCE_END.search(previous.text)
                                or len(line.text) < 0.7 * len(previous.text)):
        return True
    if not page.positioned:
        return bool(_SENTENCE_END.search(previous.text)) and len(previous.text) < 50
    size = max(previous.size, line.size, 1.0)
    if abs(previous.size - line.size) > 0.15 * size:
        return True
    pitch = line.top - previous.top
    if pitch < -size or line.x0 > previous.x1:  # the next column: the paragraph goes on
        return False
    if pitch > 1.9 * size:
        return True
    width = max(previous.x1 - previous.x0, line.x1 - line.x0)
    short = previous.x1 < line.x1 - 0.15 * width
    return short and bool(_SENTENCE_END.search(previous.text))


def _heading(text: str) -> bool:
    return len(text) < 60 and plain_heading_level(text) is not None


# --- hyphens --------------------------------------------------------------------


def _word_counts(pages: list[list[Line]]) -> Counter[str]:
    counts: Counter[str] = Counter()
    for lines in pages:
        for line in lines:
            counts.update(word.lower() for word in _WORD.findall(line.text))
    return counts


def _joined(lines: list[Line], counts: Counter[str]) -> str:
    """A paragraph's lines as one line of text, line-end hyphens resolved."""
    out = ""
    for line in lines:
        out = _append(out, line.text, counts) if out else line.text
    return out


def _append(text: str, line: str, counts: Counter[str]) -> str:
    if text.endswith("-") and len(text) > 1 and text[-2].isalpha() and line[:1].islower():
        head = text[:-1].rsplit(" ", 1)[-1]
        tail = _WORD.match(line)
        # "metallo-β-lactamase-|associated" keeps its hyphen: a compound whose last part
        # is a word of its own; "N-termi-|nus" does not.
        compound = "-" in head and counts[head.rsplit("-", 1)[-1].lower()] >= 1
        if tail is not None and not compound:
            joined = (head + tail.group(0)).lower()
            hyphenated = f"{head}-{tail.group(0)}".lower()
            if counts[hyphenated] <= counts[joined] or not counts[hyphenated]:
                return text[:-1] + line
            return text + line
    if text.endswith("-") and len(text) > 1 and text[-2].isalnum() and line[:1].isalnum():
        return text + line  # "Hardy-|Weinberg", "SARS-|CoV-2": the hyphen is the word's
    return f"{text} {line}"


def _join_across_pages(texts: list[list[str]], counts: Counter[str]) -> None:
    """A paragraph a page break cuts mid-sentence is finished on the page it started on.

    The chunker takes a page break for a paragraph break, so the sentence's two
    halves would land in two chunks and neither would hold what it says. Papers
    often end a page in a body paragraph without a sentence end, the next page
    going on in lower case, a digit or punctuation.
    The continuation is the next body paragraph (or, when it is most of its page,
    as a scan's text layer makes it, that paragraph's first sentence), when it
    goes on in lower case or with a number's tail ("13-14), reflective of ..."), looked for past
    figure pages (captions, panel labels) up to `_CONTINUATION_PAGES` ahead.
    """
    for index, page in enumerate(texts):
        body = [i for i, t in enumerate(page) if t and not CAPTION.match(t)]
        if not body or _SENTENCE_END.search(page[body[-1]]):
            continue
        last = body[-1]
        for following in texts[index + 1:index + 1 + _CONTINUATION_PAGES]:
            at = next((i for i, t in enumerate(following) if t and not _figure_text(t)), None)
            if at is None:
                continue  # a page of figures: the paragraph may go on after it
            text = following[at]
            # Past a page break a number's tail goes on too: "(Figure 5, lanes" | "13-14), ...".
            if _continues(page[last], text) or _CONTINUES.match(text):
                # A page that is one paragraph (a scan's text layer) keeps its text: only
                # the cut sentence's end goes back, so a citation's page stays the page.
                whole = sum(len(t) for t in following)
                cut = _SENTENCE_CUT.search(text) if len(text) * 2 > whole else None
                tail = text[cut.end():] if cut else ""
                page[last] = _append(page[last], text[:cut.end()].rstrip() if cut else text,
                                     counts)
                following[at] = tail
            break


def _goes_on_with(text: str) -> bool:
    return text[:1].islower() or bool(_CONTINUES.match(text))


def _figure_text(text: str) -> bool:
    """A caption, or a short label of a figure ("A", "B C"), not a sentence's tail."""
    return bool(CAPTION.match(text)) or (
        len(text) < _LABEL_CHARS and not _goes_on_with(text) and not _heading(text))
