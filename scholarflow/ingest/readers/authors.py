"""A paper's authors as its first page names them, or as its metadata does.

The lines under the title that read as person names (capitalised words,
initials, particles; joined by commas, "and", "&" or wide spaces) are its
authors. What a first page sets around them is passed over: affiliations,
emails and addresses (also set in a smaller font than the names), footnote
and affiliation markers ("Fan∗", "Fournet1", "Gonthier2?", a superscript
letter "Lopatovskaa" when the affiliations are lettered "aPratt SILS"), an
affiliation after a name on its line ("Joey J. Lee, Teachers College"). Lines
set side by side on one row (one name in each column) are read as one line.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

from scholarflow.ingest.readers import Line
from scholarflow.ingest.readers.layout import clean_line

__all__ = ["AFFILIATION", "first_page_authors", "metadata_authors", "names"]

_AUTHOR_SPLIT = re.compile(r"\s*(?:,|;|\band\b|&)\s*", re.IGNORECASE)
_PARTICLE = r"(?:van|von|de|der|den|da|di|du|la|le|y|dos|del)(?=\s)"
_UPPER = "A-ZÀ-ÖØ-ÞĀ-Ž"  # capitals of the Latin scripts ("Ćedric", "Łukasz"), some lower too
_NAME = re.compile(rf"^[{_UPPER}][\w'’.-]*(?:\s+(?:[{_UPPER}][\w'’.-]*\.?|\([A-Z][\w'’-]*\)"
                   rf"|{_PARTICLE})){{0,3}}\s+[{_UPPER}][\w'’-]+$")
_SPACED_NAME = re.compile(r"[A-Z][\w'’-]+(?:\s+[A-Z]\.)*\s+[A-Z][\w'’-]+")
_CAPITALISED = re.compile(r"[A-Z][a-z]+(?:[-'’][A-Z]?[a-z]+)?")
_HONORIFIC = re.compile(r"^(?:by|prof\.?|dr\.?)\s+", re.IGNORECASE)
_EMAIL = re.compile(r"<?[\w.+{}-]+@[\w.-]+>?")
_AUTHOR_LINES = 10  # lines under a title that may name its authors
_FIRST_AUTHOR_LINES = 4  # the first of which names one within this many
_NOT_A_NAME = re.compile(
    r"\b(?:institute|university|association|department|center|centre|laboratory|school|"
    r"college|hospital|society|foundation|faculty|division|program|academy|research|science|"
    r"project|paper|corporation|laborator|infolab|solution|report|manuscript|abstract|"
    r"published|works)",
    re.IGNORECASE)
AFFILIATION = re.compile(
    r"\b(?:universit(?:y|à|é|ät|ade|ad|eit)|institut[eo]?|laborator(?:y|ies)|corporation|"
    r"department|dept\.|research cent(?:er|re)|school of|inc\.|ltd\.|gmbh)(?!\w)",
    re.IGNORECASE)
_MARKERS = re.compile(r"[\d*∗?†‡§¶#,]+$|^\W+")
_LETTERED = re.compile(r"^([a-z])[A-Z]")  # "aPratt SILS": an affiliation lettered "a"
_MAX_AUTHORS = 50
_SMALLER = 0.95  # a line this much smaller than the names is their affiliations' detail


def metadata_authors(raw: str) -> tuple[str, ...]:
    raw = html.unescape(raw)
    if ";" in raw:  # "Saproo, Sheetanshu; Leal, Karla": surname first
        parts = [part.strip() for part in raw.split(";") if part.strip()]
        raw = ", ".join(" ".join(reversed(part.split(",", 1))).strip() if part.count(",") == 1
                        else part for part in parts)
    return tuple(names(raw))


def first_page_authors(below: Sequence[Line]) -> tuple[str, ...]:
    """The names in `below` (the lines under the title, in reading order): one line or
    several ("A, B," / "C and D"), or one name a line with its affiliation and email
    under each (those are passed over); the first other line after a name ends them."""
    found: list[str] = []
    size = 0.0
    rows = _rows(below)
    for index, line in enumerate(rows[:_AUTHOR_LINES]):
        if not found and index >= _FIRST_AUTHOR_LINES:
            break
        text = _EMAIL.sub("", line.text).strip(" ,;")
        got = names(text, loose=True) or _name_then_affiliation(text)
        if got and not (found and size and line.size < size * _SMALLER):
            found.extend(got)
            size = max(size, line.size)
        elif found and not (AFFILIATION.search(text) or "@" in line.text or not text
                            or text.lower() in ("and", "&")
                            or (size and line.size < size * _SMALLER)):
            break
    return tuple(dict.fromkeys(_unlettered(found, rows)))[:_MAX_AUTHORS]


def _rows(lines: Sequence[Line]) -> list[Line]:
    """`lines` with those on one row (their heights overlap) read left to right as one,
    joined by a comma unless the next piece starts with one."""
    rows: list[list[Line]] = []
    for line in lines:
        text = clean_line(line.text)
        if not text:
            continue
        line = Line(text, line.x0, line.top, line.x1, line.bottom, line.size)
        last = rows[-1][-1] if rows else None
        if (last is not None and line.bottom > line.top and last.bottom > last.top
                and line.top < last.bottom and last.top < line.bottom):
            rows[-1].append(line)
        else:
            rows.append([line])
    out = []
    for row in rows:
        ordered = sorted(row, key=lambda line: line.x0)
        text = ordered[0].text
        for piece in ordered[1:]:
            text += piece.text if piece.text[0] in ",;" else ", " + piece.text
        first = ordered[0]
        out.append(Line(text, first.x0, min(line.top for line in row), ordered[-1].x1,
                        max(line.bottom for line in row), max(line.size for line in row)))
    return out


def _name_then_affiliation(text: str) -> list[str]:
    """"Marc Shapiro, INRIA & LIP6, Paris": one name, then where its author works."""
    head, comma, rest = text.partition(",")
    if not comma or names(rest):
        return []
    found = names(head)
    return found if len(found) == 1 else []


def _unlettered(found: list[str], rows: Sequence[Line]) -> list[str]:
    """Names without the superscript letter that ties each to a lettered affiliation
    ("Irene Lopatovskaa" over "aPratt SILS"), when every name ends in such a letter."""
    letters = {m.group(1) for line in rows if (m := _LETTERED.match(line.text))}
    if not found or not letters or not all(name[-1] in letters for name in found):
        return found
    return [name[:-1] for name in found]


def names(raw: str, *, loose: bool = False) -> list[str]:
    """The names a line lists, when it lists names (and nothing that is an institution).
    `loose`: names set apart by space alone may lack initials (an author line)."""
    raw = _HONORIFIC.sub("", raw)
    parts = [p for part in _AUTHOR_SPLIT.split(raw) if part.strip()
             for p in _side_by_side(part, loose=loose)]
    found = []
    for part in parts:
        name = _MARKERS.sub("", part.strip()).strip()
        name = re.sub(r"(?<=[a-z])[\d*∗†‡§¶]+$", "", name)
        if _NOT_A_NAME.search(name) or AFFILIATION.search(name):
            return []  # "University of California, Santa Cruz": a place, not a person
        if name and _NAME.match(name):
            found.append(name)
    return found if parts and len(found) * 2 >= len(parts) else []


def _side_by_side(part: str, *, loose: bool) -> list[str]:
    """"Sage A. Weil Andrew W. Leung Carlos Maltzahn": names set apart by space alone, when
    the line is nothing but such names (two or more) and has initials (without them,
    "UC San Diego Previously Published Works" would be three people). On an author
    line, three pairs of capitalised words or more ("Ingo Maier Tiark Rompf Martin
    Odersky") are names too; two may be one name ("Ana Candida Cruz Natali")."""
    bare = " ".join(w for word in part.split() if (w := _MARKERS.sub("", word)))
    words = bare.split()
    if len(words) < 4:
        return [part]
    found = _SPACED_NAME.findall(bare)
    if len(found) >= 2 and " ".join(found) == bare and re.search(r"\b[A-Z]\.", bare):
        return found
    if (loose and len(words) >= 6 and len(words) % 2 == 0
            and all(_CAPITALISED.fullmatch(w) for w in words)
            and not _NOT_A_NAME.search(bare)):
        return [" ".join(words[i:i + 2]) for i in range(0, len(words), 2)]
    return [part]
