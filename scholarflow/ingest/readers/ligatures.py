"""The ligatures fi, ff, fl, ffi and ffl, where an engine gives control codes or drops them.

Old TeX fonts (OT1 and T1 encodings) put the ligature glyphs at control codes
and often map them to no character, so engines give the code itself
("signi\\x0ccant") or nothing ("signi cant", "de ned", "rst"):

- A control code inside a word is the ligature its encoding puts there (OT1:
  0x0B-0x0F; T1: 0x1B-0x1F); when that spells no word and another ligature does,
  the other one (`restore_codes`).
- A dropped ligature is put back in a document whose text has far fewer fi, ff
  and fl than any text of its language, where two pieces joined by a ligature
  ("de" + "fi" + "ned") or one piece with a ligature put in ("rst") make a word
  of the tokenizer's vocabulary, or one the document itself writes whole
  (`restore_dropped`).
- A font may map its ligature glyphs to private-use code points (U+E000-U+F8FF),
  one font's fl at U+E104, another's elsewhere: in each document, a code point
  that stands inside words is read as the ligature that makes the most of those
  words into words, when one clearly does (`restore_private`).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace
from itertools import product
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scholarflow.ingest.readers import PdfContent

__all__ = ["LIGATURES", "LIGATURE_CODES", "restore_codes", "restore_dropped", "restore_private"]

LIGATURES = ("fi", "ff", "fl", "ffi", "ffl")
# TeX's OT1 encoding, then T1's (their ligature slots); PDFium gives "\r" for OT1's fl.
_BY_CODE = {"\x0b": "ff", "\x0c": "fi", "\r": "fl", "\x0e": "ffi", "\x0f": "ffl",
            "\x1b": "ff", "\x1c": "fi", "\x1d": "fl", "\x1e": "ffi", "\x1f": "ffl"}
LIGATURE_CODES = frozenset(_BY_CODE)
_CODES = "".join(_BY_CODE)
_CODED = re.compile(rf"[^\W\d_]*(?:[{_CODES}][^\W\d_]*)+")
_LETTERS = re.compile(r"[^\W\d_]")
# fi, ff and fl per 1,000 letters: English and the other languages written with them
# have a few (technical prose more); a text whose ligatures were dropped has almost
# none, the few left in headings or another font.
_MIN_RATE = 1.0
# Shorter words of the vocabulary are as often pieces of others ("in x" is no "infix").
_MIN_VOCABULARY_WORD = 6
_PIECE = r"[a-z]+"
_PAIR = re.compile(rf"\b(?=([A-Za-z]?{_PIECE}|[A-Za-z]) ({_PIECE})\b)")  # overlapping
_SINGLE = re.compile(rf"\b[A-Za-z]?{_PIECE}\b")
_LIGATURE_RUN = re.compile("f[fil]")
# What a font's private-use glyph inside a word may be: the ligatures, and the "ft"
# and "st" some text fonts draw as one glyph too.
_PRIVATE_CHOICES = (*LIGATURES, "ft", "st")
_PRIVATE = re.compile("[\ue000-\uf8ff]")
_PRIVATE_WORD = re.compile(r"[^\W\d_]*[\ue000-\uf8ff][^\W\d_]*")


def restore_codes(text: str) -> str:
    """`text` with each ligature code next to a letter read as its ligature."""
    if not any(code in text for code in _BY_CODE):
        return text
    return _CODED.sub(_decoded, text)


def _decoded(found: re.Match[str]) -> str:
    from scholarflow.ingest.readers.quality import is_word

    word = found.group(0)
    if not _LETTERS.search(word):
        return word  # a code between non-letters is no ligature: left to cleanup
    codes = [i for i, char in enumerate(word) if char in _BY_CODE]
    default = _spelled(word, codes, [_BY_CODE[word[i]] for i in codes])
    if is_word(default):
        return default
    if len(_LETTERS.findall(word)) < 2:
        return word  # "\x0ei": a math font's Greek letter more likely; left to cleanup
    if len(codes) > 2:
        return default
    for choice in product(LIGATURES, repeat=len(codes)):
        spelled = _spelled(word, codes, list(choice))
        if is_word(spelled):
            return spelled
    return default


def _spelled(word: str, at: list[int], ligatures: list[str]) -> str:
    out = list(word)
    for index, ligature in zip(at, ligatures, strict=True):
        out[index] = ligature
    return "".join(out)


def restore_dropped(texts: Sequence[str]) -> list[str]:
    """The pages of a document whose ligatures were dropped, with them put back; any
    other document's pages as they are."""
    joined = "\n".join(texts)
    letters = len(_LETTERS.findall(joined))
    if not letters or len(_LIGATURE_RUN.findall(joined.lower())) * 1000 >= _MIN_RATE * letters:
        return list(texts)
    whole = Counter(word.lower() for word in re.findall(r"[^\W\d_]+", joined))
    repairs = _repairs(joined, whole)
    if not repairs:
        return list(texts)
    broken = re.compile(r"\b(?:" + "|".join(
        re.escape(form) for form in sorted(repairs, key=len, reverse=True)) + r")\b")
    return [broken.sub(lambda found: repairs[found.group(0)], text) for text in texts]


def _repairs(text: str, whole: Counter[str]) -> dict[str, str]:
    """Broken form -> word, for the pieces in `text` a ligature makes into a word."""
    from scholarflow.ingest.readers.quality import is_word
    from scholarflow.tokens import encoding

    encode = encoding().encode_ordinary

    def word(candidate: str) -> bool:
        return whole[candidate.lower()] > 0 or (
            len(candidate) >= _MIN_VOCABULARY_WORD and len(encode(" " + candidate)) == 1)

    found: dict[str, str] = {}
    for first, second in set(_PAIR.findall(text)):
        broken = f"{first} {second}"
        if len(encode(" " + broken)) < 2:
            continue
        for ligature in LIGATURES:
            if word(candidate := first + ligature + second):
                found[broken] = candidate
                break
    for piece in set(_SINGLE.findall(text)):
        if len(piece) < 3 or is_word(piece):
            continue  # "at" + fl is "flat": a piece that is a word stays one
        for at, ligature in product(range(len(piece) + 1), LIGATURES):
            candidate = piece[:at] + ligature + piece[at:]
            if (at == 0 or piece[:at].islower()) and word(candidate):
                found[piece] = candidate
                break
    return found


def restore_private(content: PdfContent) -> PdfContent:
    """`content` with each private-use code point that stands for a ligature read as it
    in every line, before anything reads the lines (the text, the title, the authors);
    any other code point left as it is."""
    readings = private_ligatures([line.text for page in content.pages for line in page.lines])
    if not readings:
        return content
    table = str.maketrans(readings)
    pages = tuple(replace(page, lines=tuple(replace(line, text=line.text.translate(table))
                                            for line in page.lines))
                  for page in content.pages)
    return replace(content, pages=pages)


def private_ligatures(texts: Sequence[str]) -> dict[str, str]:
    """Private-use code point -> the ligature it stands for in `texts`.

    A code point's words (letters around it) vote: each for the ligatures that make
    it a word of the vocabulary or one the text writes whole. The winner needs half
    the words at least and more votes than any other, so a symbol font's glyph
    (a bullet, an arrow between words) is never read as letters.
    """
    joined = "\n".join(texts)
    if not _PRIVATE.search(joined):
        return {}
    from scholarflow.ingest.readers.quality import is_word

    words: dict[str, list[str]] = {}
    for word in _PRIVATE_WORD.findall(joined):
        codes = set(_PRIVATE.findall(word))
        if len(codes) == 1 and len(word) > 1:
            words.setdefault(codes.pop(), []).append(word)
    whole = Counter(word.lower() for word in re.findall(r"[^\W\d_]+", joined))
    readings: dict[str, str] = {}
    for code, found in words.items():
        votes = Counter(choice for word in found for choice in _PRIVATE_CHOICES
                        if _known(word.replace(code, choice), whole, is_word))
        ranked = [*votes.most_common(2), ("", 0), ("", 0)]
        (best, count), (_, runner_up) = ranked[0], ranked[1]
        if count * 2 >= len(found) and count > runner_up:
            readings[code] = best
    return readings


def _known(word: str, whole: Counter[str], is_word: Callable[[str], bool]) -> bool:
    return whole[word.lower()] > 0 or is_word(word)
