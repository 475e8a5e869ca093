"""Citations: numbering recalled chunks, and keeping only [n] that point at one.

The answer streams, so invalid citations are dropped as the text goes out.
Models write citations many ways: `[1]`, `[1, 2]`, `[1,2]`, `[2-4]`,
full-width `【1】` or `［1］`, and runs like `[1] [3]`. `CitationFilter`
keeps the numbers that name a recalled chunk, written the prompt's way
(`[1][3]`), and drops the rest. It holds back the end of the text that could
still change: a citation not yet closed ("[12"), and whitespace or
citations at the very end, since whether a dropped citation takes the space
before it depends on what follows ("claim [9]." becomes "claim.").
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from scholarflow.state import RecalledChunkState, Source

_OPEN = "[［【"
_OPEN_SET = r"[\[［【]"
_CLOSE_SET = r"[\]］】]"
_NUMBER = r"\d{1,4}"
_ITEM = rf"{_NUMBER}(?:\s*[-–—~]\s*{_NUMBER})?"  # 3, or a range 2-4
_LIST = rf"{_ITEM}(?:\s*[,，、;；]\s*{_ITEM})*"  # 1, 2 / 1,2 / 1、2
_ONE = rf"{_OPEN_SET}\s*{_LIST}\s*{_CLOSE_SET}"
_CITATION = re.compile(_ONE)
# A run of citations, with the horizontal space before it (dropped with it when
# all its numbers go); never a newline, so no paragraph is joined.
_RUN = re.compile(rf"(?P<space>[ \t\u3000]*)(?P<run>{_ONE}(?:[ \t\u3000]*{_ONE})*)")
_RUN_ITEM = re.compile(rf"({_NUMBER})(?:\s*[-–—~]\s*({_NUMBER}))?")
# What may follow a dropped citation that had a space before it, so the space goes too.
_CLOSING = frozenset(".,;:!?)]}'\"。，；：！？、）】」』》…")
# The start of a citation that is not closed yet; longer than this, it is not one.
_UNCLOSED = re.compile(rf"{_OPEN_SET}[\d\s,，、;；\-–—~]{{0,100}}$")
_LONGEST = 120  # characters of one citation, to look back for its opening bracket


def drop_citations(text: str) -> str:
    """`text` with every citation ("[2]", "[1, 3]", "【2-4】") replaced by a space."""
    return _CITATION.sub(" ", text)


def number_chunks(chunks: Iterable[RecalledChunkState]) -> list[RecalledChunkState]:
    """Unique chunks, best score first (a chunk found by two steps counts once)."""
    best: dict[str, RecalledChunkState] = {}
    for chunk in chunks:
        kept = best.get(chunk["chunk_id"])
        if kept is None or chunk["score"] > kept["score"]:
            best[chunk["chunk_id"]] = chunk
    return sorted(best.values(), key=lambda c: -c["score"])


class CitationFilter:
    """Streams text through, keeping only the cited numbers that are in `valid`."""

    def __init__(self, valid: Iterable[int]) -> None:
        self.valid = frozenset(valid)
        self.cited: list[int] = []
        self._held = ""

    def feed(self, text: str) -> str:
        text = self._held + text
        cut = _unsettled_start(text)
        self._held = text[cut:]
        return _RUN.sub(self._rewrite, text[:cut])

    def flush(self) -> str:
        held, self._held = self._held, ""
        return _RUN.sub(self._rewrite, held)

    def _rewrite(self, match: re.Match[str]) -> str:
        kept = [n for n in dict.fromkeys(self._numbers(match.group("run"))) if n in self.valid]
        for n in kept:
            if n not in self.cited:
                self.cited.append(n)
        if kept:
            return match.group("space") + "".join(f"[{n}]" for n in kept)
        after = match.string[match.end():match.end() + 1]
        # "claim [9]." -> "claim.", "claim [9] and" -> "claim and", "claim [9]and" -> "claim and"
        return "" if not after or after.isspace() or after in _CLOSING else match.group("space")

    def _numbers(self, run: str) -> list[int]:
        numbers: list[int] = []
        for item in _RUN_ITEM.finditer(run):
            first = int(item.group(1))
            if item.group(2) is None:
                numbers.append(first)
            else:  # a range names the valid numbers in it; a huge one costs nothing
                low, high = sorted((first, int(item.group(2))))
                numbers += [n for n in sorted(self.valid) if low <= n <= high]
        return numbers


def _unsettled_start(text: str) -> int:
    """Where the end of `text` that the next piece could still change begins.

    That is an unclosed citation, and before it any complete citations and
    horizontal space: a citation run may go on, and what follows it decides
    whether the space before a dropped one goes too.
    """
    end = len(text)
    if unclosed := _UNCLOSED.search(text):
        end = unclosed.start()
    while True:
        end = len(text[:end].rstrip(" \t\u3000"))
        start = max(text.rfind(c, max(0, end - _LONGEST), end) for c in _OPEN)
        if start < 0 or not _CITATION.fullmatch(text, start, end):
            return end
        end = start


def sources_for(cited: Sequence[int], numbered: Sequence[RecalledChunkState]) -> list[Source]:
    """The sources an answer cited, in the order they were first cited."""
    sources = []
    for n in cited:
        c = numbered[n - 1]
        sources.append(Source(n=n, doc_id=c["doc_id"], title=c["title"], chunk_id=c["chunk_id"],
                              location=c["location"], page=c.get("page"),
                              heading=c.get("heading")))
    return sources


def format_chunks(numbered: Sequence[RecalledChunkState],
                  numbers: Sequence[int] | None = None) -> str:
    """The recalled chunks as the prompt's numbered material: numbered from 1, or by
    `numbers` (a part of them keeps the numbers the whole has)."""
    return "\n\n".join(
        f'<chunk n="{i}" title="{c["title"]}" where="{c["location"]}">\n{c["text"]}\n</chunk>'
        for i, c in zip(numbers or range(1, len(numbered) + 1), numbered, strict=True)
    )
