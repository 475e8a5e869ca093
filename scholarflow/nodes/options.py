"""A multiple-choice question's stem and options: the options are answer candidates,
not search terms.

"Which residue ...? A) Leu288 B) Asn326 C) ... E) Insufficient information"
searched whole matches every passage naming any option, and a list of five
candidates outweighs the stem's few words: recall searches the stem alone
(nodes/recall.py), and the answer prompt still shows the whole question.
Recognised lists: two or more options lettered in order from A (or a)
as "A)", "(A)", "A.", "A:" or "[A]", one a line or on one line, optionally
after a line "Options:" / "Choices:" / "选项："; numbered 1, 2, ... only after
such a line (else a numbered list is part of the question). What follows the last
option on its own lines (an instruction such as "Answer with the letter")
is no search term either.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Options", "insufficient_option", "says_insufficient", "split_options"]

# "A) text", "(A) text", "A. text", "A: text", "[A] text" at the start of a line.
_LINE = re.compile(r"^\s*[(\[]?([A-Ja-j]|[1-9])[).:\]]\s+(\S.*)$")
# The same inline: " (B) text" or " B) text"; a parenthesis is required, since
# "A. " inside a sentence is too common to split on.
_INLINE = re.compile(r"(?:^|\s)\(?([A-Ja-j])\)\s+")
_HEADER = re.compile(
    r"^\s*(?:options|choices|answer choices|candidates|选项|备选答案)\s*[:：]?\s*$", re.I)
_SEQUENCES = ("ABCDEFGHIJ", "abcdefghij", "123456789")


@dataclass(frozen=True, slots=True)
class Options:
    stem: str  # the question without its options (the whole text when it lists none)
    options: tuple[str, ...]  # the options' texts, in order; () when none
    letters: tuple[str, ...] = ()  # their letters (or numbers) as the question gives them


# An option saying the question cannot be answered ("Insufficient information to answer
# this question"): the pick when no passage supports any other.
_INSUFFICIENT = re.compile(
    r"\binsufficient\b|\bnot enough (?:information|data|evidence)\b|"
    r"\bcannot be (?:determined|answered)\b|信息不足|无法确定|无法回答", re.I)


def insufficient_option(options: Options) -> tuple[str, str] | None:
    """(letter, text) of the option that says the question cannot be answered, if any."""
    for letter, text in zip(options.letters, options.options, strict=True):
        if says_insufficient(text):
            return letter, text
    return None


def says_insufficient(text: str) -> bool:
    """Whether `text` says the question cannot be answered ("Insufficient information")."""
    return _INSUFFICIENT.search(text) is not None


def split_options(question: str) -> Options:
    """The question's stem and its lettered options (see the module docstring)."""
    lines = question.splitlines()
    for start in range(len(lines)):
        found = _lettered_lines(lines, start)
        if found:
            stem_lines = lines[:start]
            while stem_lines and (_HEADER.match(stem_lines[-1]) or not stem_lines[-1].strip()):
                stem_lines.pop()
            stem = "\n".join(stem_lines).strip()
            if stem:
                letters = tuple(_LINE.match(line).group(1)  # type: ignore[union-attr]
                                for line in lines[start:start + len(found)])
                return Options(stem, tuple(found), letters)
    return _inline(question)


def _lettered_lines(lines: list[str], start: int) -> list[str]:
    """The options lettered from A (a, 1) on consecutive lines from `start`; [] unless >= 2."""
    first = _LINE.match(lines[start])
    if not first:
        return []
    sequence = next((s for s in _SEQUENCES if s[0] == first.group(1)), None)
    if sequence is None or (sequence[0] == "1" and not (start and _HEADER.match(lines[start - 1]))):
        return []  # a numbered list is the question's own unless headed "Options:"
    found: list[str] = []
    for line in lines[start:]:
        match = _LINE.match(line)
        if not match or len(found) >= len(sequence) or match.group(1) != sequence[len(found)]:
            break
        found.append(match.group(2).strip())
    return found if len(found) >= 2 else []


def _inline(question: str) -> Options:
    """Options written on one line after the stem: "...? (A) x (B) y (C) z"."""
    marks = list(_INLINE.finditer(question))
    for i, mark in enumerate(marks):
        sequence = next((s for s in _SEQUENCES[:2] if s[0] == mark.group(1)), None)
        if sequence is None:
            continue
        run = [mark]
        for later in marks[i + 1:]:
            if len(run) < len(sequence) and later.group(1) == sequence[len(run)]:
                run.append(later)
        stem = question[:mark.start()].strip()
        if len(run) >= 2 and stem:
            ends = [m.start() for m in run[1:]] + [len(question)]
            kept = [(m.group(1), question[m.end():end].strip())
                    for m, end in zip(run, ends, strict=True)]
            kept = [(letter, text) for letter, text in kept if text]
            return Options(stem, tuple(t for _, t in kept), tuple(letter for letter, _ in kept))
    return Options(question.strip(), ())
