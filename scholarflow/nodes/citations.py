"""Citations: numbering recalled chunks, and keeping only [n] that point at one.

The answer streams, so invalid citations are dropped as the text goes out:
`CitationFilter` holds back only a possible citation ("[12") until it can
tell whether it names a recalled chunk.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from scholarflow.state import RecalledChunkState, Source

_CITATION = re.compile(r"\[(\d{1,4})\]")
_PENDING = re.compile(r"\[\d{0,4}$")


def number_chunks(chunks: Iterable[RecalledChunkState]) -> list[RecalledChunkState]:
    """Unique chunks, best score first (a chunk found by two steps counts once)."""
    best: dict[str, RecalledChunkState] = {}
    for chunk in chunks:
        kept = best.get(chunk["chunk_id"])
        if kept is None or chunk["score"] > kept["score"]:
            best[chunk["chunk_id"]] = chunk
    return sorted(best.values(), key=lambda c: -c["score"])


class CitationFilter:
    """Streams text through, dropping [n] whose n is not in `valid`."""

    def __init__(self, valid: Iterable[int]) -> None:
        self.valid = frozenset(valid)
        self.cited: list[int] = []
        self._held = ""

    def feed(self, text: str) -> str:
        text = self._held + text
        pending = _PENDING.search(text)
        self._held = pending.group(0) if pending else ""
        ready = text[: pending.start()] if pending else text
        return _CITATION.sub(self._keep, ready)

    def flush(self) -> str:
        held, self._held = self._held, ""
        return held

    def _keep(self, match: re.Match[str]) -> str:
        n = int(match.group(1))
        if n not in self.valid:
            return ""
        if n not in self.cited:
            self.cited.append(n)
        return match.group(0)


def sources_for(cited: Sequence[int], numbered: Sequence[RecalledChunkState]) -> list[Source]:
    """The sources an answer cited, in the order they were first cited."""
    return [
        Source(n=n, doc_id=numbered[n - 1]["doc_id"], title=numbered[n - 1]["title"],
               chunk_id=numbered[n - 1]["chunk_id"], location=numbered[n - 1]["location"])
        for n in cited
    ]


def format_chunks(numbered: Sequence[RecalledChunkState]) -> str:
    """The recalled chunks as the prompt's numbered material."""
    return "\n\n".join(
        f'<chunk n="{i}" title="{c["title"]}" where="{c["location"]}">\n{c["text"]}\n</chunk>'
        for i, c in enumerate(numbered, 1)
    )
