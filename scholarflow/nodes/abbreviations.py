"""Abbreviations the passages define, so an answer in one form names an option in the other.

A paper defines an abbreviation once, "exogenous lipopolysaccharide (LPS)", and uses
the short form after: a model reading a later sentence answers "LPS" where the option
says "lipopolysaccharide", or "carboxylesterase" where the option says "CXE". Both
forms name the same thing, so a reading naming no option by its words is tried again
with each defined form written the other way (nodes/option_free.py).

Definitions are found as Schwartz and Hearst do ("A simple algorithm for identifying
abbreviation definitions in biomedical text", PSB 2003): a short form in parentheses
after the words it abbreviates, its letters found in those words in order, from the
end, its first letter starting a word. It finds definitions of any field without a
dictionary. A short form has ten characters at most, in one or two words, and letters
the words before it hold in order: "(n = 5)" is no short form, and "(DAPI)" after
"cells were stained" defines nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

__all__ = ["defined_abbreviations", "spelled_other_ways", "spelled_out"]

_PARENTHESISED = re.compile(r"\(([^()]{2,12})\)")
_TERM = re.compile(r"[^\W_]+(?:-[^\W_]+)*", re.UNICODE)  # "LPS", "IL-6"
SHORT_MIN, SHORT_MAX = 2, 10  # characters of a short form
EXTRA_WORDS = 5  # the long form has at most min(letters + this, letters x 2) words
WORD_CHARS = 40  # a long form's words are read from at most this many characters each


def defined_abbreviations(texts: Iterable[str]) -> dict[str, str]:
    """{short form, lower case: its long form} of every definition in `texts`; a short form
    defined two ways is left out, since either could be meant."""
    found: dict[str, str] = {}
    clashing: set[str] = set()
    for text in texts:
        for match in _PARENTHESISED.finditer(text):
            short = match.group(1).strip()
            if not _is_short_form(short):
                continue
            long = _long_form(short, text[:match.start()])
            if long is None:
                continue
            key = short.lower()
            if key in found and found[key].lower() != long.lower():
                clashing.add(key)
            found.setdefault(key, long)
    return {short: long for short, long in found.items() if short not in clashing}


def spelled_other_ways(answer: str, abbreviations: Mapping[str, str]) -> list[str]:
    """`answer` with each defined short form it holds written out, then with each long
    form it holds abbreviated: the ways it may name an option the passages call
    otherwise. [] when it holds neither."""
    ways: list[str] = []
    expanded = spelled_out(answer, abbreviations)
    if expanded != answer:
        ways.append(expanded)
    shortened = answer
    for short, long in sorted(abbreviations.items(), key=lambda item: -len(item[1])):
        shortened = re.sub(rf"(?<!\w){re.escape(long)}(?!\w)", short, shortened, flags=re.I)
    if shortened != answer:
        ways.append(shortened)
    return ways


def spelled_out(text: str, abbreviations: Mapping[str, str]) -> str:
    """`text` with each short form of `abbreviations` (short form: long form) written out."""
    if not abbreviations:
        return text
    return _TERM.sub(lambda m: abbreviations.get(m.group(0).lower(), m.group(0)), text)


def _is_short_form(text: str) -> bool:
    """One or two words, with a letter, starting with a letter or digit."""
    return (SHORT_MIN <= len(text) <= SHORT_MAX and len(text.split()) <= 2
            and text[0].isalnum() and any(c.isalpha() for c in text))


def _long_form(short: str, before: str) -> str | None:
    """The words ending `before` that `short` abbreviates, or None."""
    letters = sum(c.isalnum() for c in short)
    window = min(letters + EXTRA_WORDS, letters * 2)
    # Only the text just before is split: a passage with many parentheses stays linear.
    candidate = " ".join(before[-window * WORD_CHARS:].split()[-window:])
    candidate = re.split(r"[.;:!?]\s", candidate)[-1]  # not across a sentence's end
    s, position = len(short) - 1, len(candidate) - 1
    while s >= 0:
        c = short[s].lower()
        if not c.isalnum():
            s -= 1
            continue
        # The short form's first letter must start a word of the long form.
        while position >= 0 and (candidate[position].lower() != c or (
                s == 0 and position > 0 and candidate[position - 1].isalnum())):
            position -= 1
        if position < 0:
            return None
        position -= 1
        s -= 1
    long = candidate[candidate.rfind(" ", 0, position + 1) + 1:].strip()
    # Not the short form itself, nor words around an earlier parenthesis.
    if (len(long) <= len(short) or "(" in long or ")" in long
            or short.lower() in (t.lower() for t in _TERM.findall(long))):
        return None
    return long
