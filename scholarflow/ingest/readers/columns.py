"""Geometry on a page: line numbers, sub- and superscripts, and what interrupts the text.

- Preprints number their lines ("382 In the first FST ..."): a run of lines whose
  leading numbers count up by one loses those numbers.
- PDFium ends a line where a subscript starts ("Nav1.8 for E" / "CLI" / "are
  much larger"); a fragment on the same baseline band, right after the previous
  line, is joined back to it.
- Text smaller than the running text that cuts into it (figure labels, tables,
  footnotes drawn between two halves of a paragraph) is moved after it.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from itertools import pairwise

from scholarflow.ingest.readers import Line, PageText

__all__ = ["body_size", "merge_fragments", "strip_line_numbers"]

_LEADING_NUMBER = re.compile(r"^(\d{1,5})(?:\s+|$)")
# Lines that must count up for the page's leading numbers to be line numbers.
_MIN_NUMBERED = 5


def strip_line_numbers(lines: list[Line]) -> list[Line]:
    """The page's lines without the line numbers of a numbered manuscript."""
    numbers = [_number(line.text) for line in lines]
    steps = sum(1 for a, b in pairwise(numbers)
                if a is not None and b is not None and 0 < b - a <= 2)
    if steps < _MIN_NUMBERED or steps * 3 < len(lines):
        return lines
    out = []
    for line, number in zip(lines, numbers, strict=True):
        if number is None:
            out.append(line)
            continue
        text = _LEADING_NUMBER.sub("", line.text, count=1)
        if text:
            out.append(Line(text, line.x0, line.top, line.x1, line.bottom, line.size))
    return out


def _number(text: str) -> int | None:
    found = _LEADING_NUMBER.match(text)
    return int(found.group(1)) if found else None


def merge_fragments(page: PageText, lines: list[Line]) -> list[Line]:
    """Lines PDFium broke at a sub- or superscript, joined back."""
    if not page.positioned or not lines:
        return lines
    out = [lines[0]]
    for line in lines[1:]:
        previous = out[-1]
        overlap = min(previous.bottom, line.bottom) - max(previous.top, line.top)
        height = min(previous.bottom - previous.top, line.bottom - line.top)
        gap = line.x0 - previous.x1
        # Two columns' lines side by side are both long and a gutter apart.
        short = min(len(previous.text), len(line.text)) <= 20
        reach = max(previous.size, 4.0) * (1.0 if short else 0.4)
        if height > 0 and overlap > 0.4 * height and -2 <= gap < reach:
            joiner = "" if gap < 0.15 * max(previous.size, 1.0) else " "
            size = previous.size if len(previous.text) >= len(line.text) else line.size
            out[-1] = Line(previous.text + joiner + line.text, previous.x0,
                           min(previous.top, line.top), line.x1,
                           max(previous.bottom, line.bottom), size)
        else:
            out.append(line)
    return out


def body_size(pages: Sequence[Sequence[Line]]) -> float:
    """The size of most of the document's characters: its running text."""
    sizes: Counter[float] = Counter()
    for lines in pages:
        for line in lines:
            sizes[round(line.size, 1)] += len(line.text)
    return sizes.most_common(1)[0][0] if sizes else 0.0
