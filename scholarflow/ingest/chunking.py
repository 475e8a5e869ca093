"""Chunking along a document's structure: headings, then paragraphs, then sentences.

A chunk never crosses a heading, so its `heading` path is exact. Paragraphs
are packed up to `target_tokens`; a paragraph longer than the hard
`max_tokens` is cut at sentences (English and Chinese punctuation), then at
lines, then at token boundaries, and only those cuts get a small overlap.

Speed: the whole text is encoded once; the character offset where every
token starts is derived from a per-vocabulary table, and the tokens of any
span are then two bisects, instead of encoding each piece again.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from scholarflow.ingest.sections import (
    CAPTION_LEVEL,
    Path,
    blocks,
    heading_text,
    is_reference_list,
    plain_heading_level,
)
from scholarflow.retrieval.kb import Chunk
from scholarflow.tokens import encoding

if TYPE_CHECKING:
    from scholarflow.ingest.extract import ExtractedDocument

__all__ = [
    "MAX_TOKENS",
    "OVERLAP_TOKENS",
    "TARGET_TOKENS",
    "ChunkedDocument",
    "chunk_document",
    "chunk_text",
    "plain_heading_level",
]

TARGET_TOKENS = 400
MAX_TOKENS = 512
OVERLAP_TOKENS = 64
# A span counted inside the whole text can encode to a token or two more on
# its own (a space or newline merges differently at its edges): cut below the max.
_EDGE_MARGIN = 4

# A sentence ends at Chinese end punctuation, or at . ! ? followed by space or a closing mark.
_SENTENCE_END = re.compile(
    r"(?:[。！？；]|[.!?](?=[\s\"'”’)\]]|$))[\"'”’)\]」』）]*\s*"
)
_CONTINUATION_BYTES = bytes(range(0x80, 0xC0))


@dataclass(frozen=True, slots=True)
class ChunkedDocument:
    chunks: tuple[Chunk, ...]
    tokens: int  # of the whole text, the same as count_tokens(text)


def chunk_document(extracted: ExtractedDocument, **options: int) -> ChunkedDocument:
    """Chunks of an extracted file: PDFs get pages, Markdown gets `#` headings."""
    document = extracted.document
    return chunk_text(document.content, document.doc_id, kind=extracted.kind,
                      pages=extracted.pages, **options)


def chunk_text(
    text: str,
    doc_id: str,
    *,
    kind: str = "markdown",
    pages: Sequence[tuple[int, int]] = (),
    target_tokens: int = TARGET_TOKENS,
    max_tokens: int = MAX_TOKENS,
    overlap_tokens: int = OVERLAP_TOKENS,
) -> ChunkedDocument:
    """Cut `text` into chunks with ids `f"{doc_id}:{n:05d}"`, in document order.

    `kind` "markdown" reads `#` headings, "pdf" numbered headings ("3.2
    Training"), "text" both; `pages` are (page number, start offset) pairs.
    """
    if not 0 < target_tokens <= max_tokens or max_tokens <= _EDGE_MARGIN:
        raise ValueError("chunking needs 0 < target_tokens <= max_tokens")
    tokens = _TokenIndex(text)
    packer = _Packer(text, tokens, target_tokens, max_tokens - _EDGE_MARGIN, overlap_tokens)
    for block in blocks(text, markdown=kind != "pdf", plain=kind != "markdown"):
        if block.heading_level:
            packer.heading(block.start, block.end, block.path)
        elif block.caption and not (packer.start >= 0 and not packer.has_body):
            # A caption is a chunk of its own, headed by its label; the section goes on.
            packer.flush()
            section = packer.path
            packer.path = (*block.path, (CAPTION_LEVEL, block.caption))
            packer.body(block.start, block.end)
            packer.flush()
            packer.path = section
        else:
            packer.body(block.start, block.end)
    packer.flush()

    page_starts = [start for _, start in pages]
    bodies: list[tuple[int, int, str, Path]] = []
    for start, end, path in packer.spans:
        raw = text[start:end]
        body = raw.strip()
        if body:
            start += len(raw) - len(raw.lstrip())
            bodies.append((start, start + len(body), body, path))
    counts = tokens.counts([(start, end) for start, end, _, _ in bodies])
    chunks: list[Chunk] = []
    for (start, _, body, path), count in zip(bodies, counts, strict=True):
        page = None
        if pages:
            index = bisect_right(page_starts, start) - 1
            page = pages[max(index, 0)][0]
        n = len(chunks)
        chunks.append(Chunk(
            chunk_id=f"{doc_id}:{n:05d}", doc_id=doc_id, n=n, text=body, tokens=count,
            heading=heading_text(path), page=page,
            kind="references" if is_reference_list(path, body) else "body",
        ))
    return ChunkedDocument(tuple(chunks), tokens.total)


# --- token counting -------------------------------------------------------------


@lru_cache(maxsize=1)
def _chars_starting_in_token() -> npt.NDArray[np.int64]:
    """For each token id: how many characters start in its bytes (UTF-8 lead bytes)."""
    enc = encoding()
    special = {enc.encode_single_token(name) for name in enc.special_tokens_set}
    ids = [token for token in range(enc.n_vocab) if token not in special]
    table = [0] * enc.n_vocab
    # Decoded in batches (one call each, ~3x faster than token by token); a
    # batch with a hole in the vocabulary falls back to one token at a time.
    for first in range(0, len(ids), 8192):
        batch = ids[first:first + 8192]
        try:
            datas = enc.decode_tokens_bytes(batch)
        except KeyError:
            datas = [_token_bytes(token) for token in batch]
        for token, data in zip(batch, datas, strict=True):
            table[token] = len(data.translate(None, _CONTINUATION_BYTES))
    return np.array(table, np.int64)


def _token_bytes(token: int) -> bytes:
    try:
        return encoding().decode_single_token_bytes(token)
    except KeyError:
        return b""  # a hole; encode_ordinary never yields it


class _TokenIndex:
    """Character offset of every token's start; the tokens of a span by binary search."""

    def __init__(self, text: str) -> None:
        # Special-token text ("<|endoftext|>") is ordinary text here, as in count_tokens.
        ids = encoding().encode_to_numpy(text, disallowed_special=())
        self.total = len(ids)
        chars = _chars_starting_in_token()[ids]
        # starts[k] is where token k starts; the last entry is len(text), a sentinel.
        # numpy: ~3x cheaper than accumulating a Python list, token by token.
        self.starts = np.zeros(len(ids) + 1, np.int64)
        np.cumsum(chars, out=self.starts[1:])

    def count(self, start: int, end: int) -> int:
        first, last = self.starts.searchsorted((start, end))
        return int(last - first)

    def counts(self, spans: Sequence[tuple[int, int]]) -> list[int]:
        """`count` of many (start, end) spans in one call."""
        if not spans:
            return []
        found = self.starts.searchsorted(np.array(spans, np.int64))
        return (found[:, 1] - found[:, 0]).tolist()  # type: ignore[no-any-return]

    def cuts(self, start: int, end: int, size: int) -> list[int]:
        """Offsets that cut [start, end) into spans of `size` tokens."""
        first, last = self.starts.searchsorted((start, end))
        return self.starts[first + size:last:size].tolist()  # type: ignore[no-any-return]


class _Packer:
    """Packs blocks into chunk spans (start, end, heading path), never across a heading."""

    def __init__(self, text: str, tokens: _TokenIndex, target: int, hard: int,
                 overlap: int) -> None:
        self.text, self.tokens = text, tokens
        self.target, self.hard, self.overlap = target, hard, overlap
        self.spans: list[tuple[int, int, Path]] = []
        self.start = self.end = -1  # the open chunk, if start >= 0
        self.has_body = False
        self.path: Path = ()

    def heading(self, start: int, end: int, path: Path) -> None:
        # Headings with nothing under them ("3 Method" right before "3.1 Data")
        # ride along with the next section's first chunk instead of standing alone.
        if self.has_body:
            self.flush()
        if self.start < 0:
            self.start = start
        self.end, self.path = end, path

    def body(self, start: int, end: int) -> None:
        if self.start >= 0 and self.tokens.count(self.start, end) <= self.target:
            self.end, self.has_body = end, True
            return
        if self.has_body:
            self.flush()
        first = self.start if self.start >= 0 else start  # a pending heading stays on top
        if self.tokens.count(first, end) <= self.hard:
            self.start, self.end, self.has_body = first, end, True
            return
        self._split(first, start, end)

    def flush(self) -> None:
        if self.start >= 0:
            self.spans.append((self.start, self.end, self.path))
        self.start = self.end = -1
        self.has_body = False

    def _split(self, first: int, start: int, end: int) -> None:
        """A paragraph too long for one chunk: pack its pieces, overlapping at the cuts."""
        pieces = self._pieces(start, end)
        if first < start and self.tokens.count(first, pieces[0][1]) > self.hard:
            self.spans.append((first, self.end, self.path))  # the heading alone, then
            first = start
        chunk: list[tuple[int, int]] = []
        for piece in [(first, pieces[0][1]), *pieces[1:]]:
            if chunk and self.tokens.count(chunk[0][0], piece[1]) > self.target:
                self.spans.append((chunk[0][0], chunk[-1][1], self.path))
                chunk = self._overlap(chunk, piece[1])
            chunk.append(piece)
        self.start, self.end, self.has_body = chunk[0][0], chunk[-1][1], True

    def _overlap(self, previous: list[tuple[int, int]], next_end: int) -> list[tuple[int, int]]:
        """The last pieces of the previous chunk that fit in the overlap and the next chunk."""
        kept: list[tuple[int, int]] = []
        used = 0
        for piece in reversed(previous):
            used += self.tokens.count(*piece)
            if used > self.overlap or self.tokens.count(piece[0], next_end) > self.hard:
                break
            kept.insert(0, piece)
        return kept

    def _pieces(self, start: int, end: int) -> list[tuple[int, int]]:
        """Sentences of [start, end); a sentence over the hard max is cut at lines, then tokens."""
        pieces: list[tuple[int, int]] = []
        for sentence in _spans(_SENTENCE_END, self.text, start, end):
            if self.tokens.count(*sentence) <= self.hard:
                pieces.append(sentence)
                continue
            for line in _spans(_LINE_END, self.text, *sentence):
                if self.tokens.count(*line) <= self.hard:
                    pieces.append(line)
                    continue
                cuts = [line[0], *self.tokens.cuts(*line, self.hard), line[1]]
                pieces.extend((a, b) for a, b in pairwise(cuts) if a < b)
        return pieces


_LINE_END = re.compile(r"\n")


def _spans(boundary: re.Pattern[str], text: str, start: int, end: int) -> list[tuple[int, int]]:
    """[start, end) cut after every match of `boundary`; no empty span."""
    spans: list[tuple[int, int]] = []
    at = start
    for found in boundary.finditer(text, start, end):
        if found.end() > at:
            spans.append((at, found.end()))
            at = found.end()
    if at < end:
        spans.append((at, end))
    return spans
