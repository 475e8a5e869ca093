"""BM25 over a growing list of chunks, in numpy, updated incrementally.

Postings are kept term-major (like a CSC matrix) in two segments: `main`,
the bulk, and `delta`, the chunks added since the last merge. A write
builds a small segment for its new chunks and merges it into `delta`
(cost ~ the size of `delta`); when `delta` outgrows 1/8 of `main` the two
are merged (cost ~ everything, so amortised per posting). Search reads both
segments: a chunk is in exactly one of them.

What a posting scores depends on the whole collection (the number of
chunks, the term's document frequency, the average chunk length), so every
write changes every score. Segments keep the term frequency, and a term's
scores are (re)computed when a query first needs them after a change, with
the same float64 formula as a full build: scores after any sequence of
writes equal those of an index built at once (tested). Lucene BM25 (k1 1.5,
b 0.75), without the constant (k1 + 1) factor hybrid normalisation divides
out; it matched bm25s' "lucene" scores.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

K1 = 1.5
B = 0.75
# Merge `delta` into `main` when it holds more than this share of `main`'s postings.
MERGE_FRACTION = 8
# Postings moved per step of a merge: bounds its temporary index arrays (8 bytes each).
_MERGE_STEP = 1 << 20

IntArray = npt.NDArray[np.int64]
Int32Array = npt.NDArray[np.int32]
# Chunk positions in memory: numpy converts any other index type on every fancy
# index, which would dominate scoring a long query. Saved as int32.
IntpArray = npt.NDArray[np.intp]
FloatArray = npt.NDArray[np.float32]


@dataclass
class Segment:
    """The postings of some chunks, term-major: term t's are [indptr[t], indptr[t + 1])."""

    indptr: IntArray  # len = vocabulary size when built + 1
    docs: IntpArray  # chunk positions, increasing within a term
    tf: npt.NDArray[np.integer]  # times the term occurs in the chunk
    data: FloatArray  # BM25 of each posting, valid for the terms `Bm25Index` marks fresh

    @classmethod
    def empty(cls) -> Segment:
        return cls(np.zeros(1, np.int64), np.zeros(0, np.intp), np.zeros(0, np.uint16),
                   np.zeros(0, np.float32))

    @property
    def postings(self) -> int:
        return len(self.docs)

    def span(self, term: int) -> tuple[int, int]:
        if term + 1 >= len(self.indptr):
            return 0, 0  # a term newer than this segment
        return int(self.indptr[term]), int(self.indptr[term + 1])


def build_segment(ids: Int32Array, lengths: IntArray, first: int, vocab_size: int) -> Segment:
    """Postings of chunks `first`, `first + 1`, ... whose term ids, concatenated, are `ids`."""
    n = len(lengths)
    if n == 0 or len(ids) == 0:
        return Segment(np.zeros(vocab_size + 1, np.int64), np.zeros(0, np.intp),
                       np.zeros(0, np.uint16), np.zeros(0, np.float32))
    doc = np.repeat(np.arange(n, dtype=np.int64), lengths)
    # One sort gives the postings term-major and counts each (term, chunk) pair.
    keys, tf = np.unique(ids.astype(np.int64) * n + doc, return_counts=True)
    terms, docs = np.divmod(keys, n)
    indptr = np.zeros(vocab_size + 1, np.int64)
    np.cumsum(np.bincount(terms, minlength=vocab_size), out=indptr[1:])
    return Segment(indptr, (docs + first).astype(np.intp), _small(tf),
                   np.zeros(len(keys), np.float32))


def merge_segments(segments: Sequence[Segment], vocab_size: int) -> Segment:
    """One segment holding the postings of `segments`, which cover chunks in increasing order.

    A counting merge: each term's postings land after those of the same term
    in the earlier segments, so chunks stay increasing within a term. Linear
    in postings plus vocabulary x segments; no sort.
    """
    parts = [s for s in segments if s.postings]
    if len(parts) <= 1:
        only = parts[0] if parts else Segment.empty()
        return Segment(_padded(only.indptr, vocab_size), only.docs, only.tf,
                       np.zeros(only.postings, np.float32))
    df = np.zeros(vocab_size, np.int64)
    for s in parts:
        df[:len(s.indptr) - 1] += np.diff(s.indptr)
    indptr = np.zeros(vocab_size + 1, np.int64)
    np.cumsum(df, out=indptr[1:])
    docs = np.empty(int(indptr[-1]), np.intp)
    tf = np.empty(int(indptr[-1]), np.result_type(*(s.tf for s in parts)))
    free = indptr[:-1].copy()  # where each term's next postings go
    for s in parts:
        terms = len(s.indptr) - 1
        counts = np.diff(s.indptr)
        shift = free[:terms] - s.indptr[:-1]  # posting j of term t goes to j + shift[t]
        first = 0
        while first < terms:  # in steps of ~_MERGE_STEP postings
            last = int(np.searchsorted(s.indptr, s.indptr[first] + _MERGE_STEP, "right")) - 1
            last = min(max(last, first + 1), terms)
            a, b = int(s.indptr[first]), int(s.indptr[last])
            where = np.repeat(shift[first:last], counts[first:last])
            where += np.arange(a, b)
            docs[where] = s.docs[a:b]
            tf[where] = s.tf[a:b]
            first = last
        free[:terms] += counts
    return Segment(indptr, docs, tf, np.zeros(len(docs), np.float32))


class _Vocab(dict[str, int]):
    """Term -> id. Inside `numbering()`, looking up a new term gives it the next id.

    So `map(vocab.__getitem__, terms)` numbers a batch in one pass in C, with
    Python only for the new terms; outside, a missing term is a KeyError as usual.
    """

    numbering = False

    def __missing__(self, term: str) -> int:
        if not self.numbering:
            raise KeyError(term)
        number = self[term] = len(self)
        return number


class Bm25Index:
    """BM25 of chunks 0..size-1, appended in order; scores identical to a one-shot build."""

    def __init__(self) -> None:
        self.vocab: dict[str, int] = _Vocab()
        self.lengths: IntArray = np.zeros(0, np.int64)  # terms per chunk
        self.main = Segment.empty()
        self.delta = Segment.empty()
        self._pending: list[Segment] = []
        self._df: IntArray = np.zeros(0, np.int64)  # chunks holding each term
        self._idf: npt.NDArray[np.float64] = np.zeros(0)
        self._norm: npt.NDArray[np.floating[Any]] = np.zeros(0)  # k1 (1 - b + b len / avgdl)
        self._fresh = np.zeros(0, bool)  # terms whose `data` matches the statistics
        self._stale = True  # statistics changed since `_idf` / `_fresh` were set

    @classmethod
    def from_arrays(cls, vocab: dict[str, int], lengths: IntArray, main: Segment) -> Bm25Index:
        """An index whose chunks are all in `main` (a loaded snapshot)."""
        index = cls()
        index.vocab, index.lengths, index.main = _Vocab(vocab), lengths, main
        index._df = np.diff(_padded(main.indptr, len(vocab)))
        return index

    @property
    def size(self) -> int:
        return len(self.lengths)

    # --- writing ------------------------------------------------------------

    def add(self, texts: Sequence[str]) -> None:
        """Append chunks, each given as its space-separated terms (as stored)."""
        if not texts:
            return
        words: list[str] = []
        lengths = np.zeros(len(texts), np.int64)
        for i, text in enumerate(texts):
            terms = text.split()
            lengths[i] = len(terms)
            words += terms
        vocab = self.vocab
        assert isinstance(vocab, _Vocab)
        vocab.numbering = True  # new terms get the next ids, in order of first appearance
        try:
            ids = np.fromiter(map(vocab.__getitem__, words), np.int32, len(words))
        finally:
            vocab.numbering = False
        segment = build_segment(ids, lengths, self.size, len(vocab))
        self._pending.append(segment)
        self.lengths = np.concatenate([self.lengths, lengths])
        df = np.zeros(len(vocab), np.int64)
        df[:len(self._df)] = self._df
        df += np.diff(segment.indptr)
        self._df = df
        self._stale = True

    def settle(self) -> None:
        """Fold the chunks `add` gathered into `delta`, and `delta` into `main` once it grew."""
        self._fold()
        if self.delta.postings * MERGE_FRACTION > self.main.postings:
            self.merge()

    def merge(self) -> None:
        """Everything into `main` (before it is saved)."""
        self._fold()
        if self.delta.postings or len(self.main.indptr) != len(self.vocab) + 1:
            self.main = merge_segments([self.main, self.delta], len(self.vocab))
            self.delta = Segment.empty()
            self._stale = True  # merged segments start with no scores

    def _fold(self) -> None:
        if self._pending:
            self.delta = merge_segments([self.delta, *self._pending], len(self.vocab))
            self._pending = []
            self._stale = True

    # --- reading ------------------------------------------------------------

    def term_ids(self, terms: Sequence[str]) -> list[int]:
        return [self.vocab[t] for t in terms if t in self.vocab]

    def bound(self, term_ids: Sequence[int]) -> float:
        """The most these terms can score: a term adds at most its idf (tf/(tf+norm) < 1)."""
        n = self.size
        df = self._df[np.asarray(term_ids, np.int64)]
        return float(np.log1p((n - df + 0.5) / (df + 0.5)).sum())

    def scores(self, term_ids: Sequence[int]) -> FloatArray:
        """BM25 of every chunk for these (distinct) query terms."""
        out = np.zeros(self.size, np.float32)
        for t in term_ids:
            self._refresh(t)
            for segment in (self.main, self.delta):
                start, end = segment.span(t)
                if start < end:
                    # A term has one posting per chunk, so plain fancy += is exact.
                    out[segment.docs[start:end]] += segment.data[start:end]
        return out

    def postings(self, term: int) -> tuple[IntpArray, FloatArray]:
        """(chunks, BM25) of one term's postings, chunks increasing."""
        self._refresh(term)
        a, b = self.main.span(term)
        c, d = self.delta.span(term)
        if c == d:
            return self.main.docs[a:b], self.main.data[a:b]
        if a == b:
            return self.delta.docs[c:d], self.delta.data[c:d]
        return (np.concatenate([self.main.docs[a:b], self.delta.docs[c:d]]),
                np.concatenate([self.main.data[a:b], self.delta.data[c:d]]))

    def _refresh(self, term: int) -> None:
        """Make `term`'s BM25 in every segment match the current statistics."""
        self._fold()
        if self._stale:
            n = self.size
            df = self._df
            self._idf = np.log1p((n - df + 0.5) / (df + 0.5))
            avgdl = max(float(self.lengths.mean()), 1.0) if n else 1.0
            self._norm = K1 * (1.0 - B + B * self.lengths / avgdl)
            self._fresh = np.zeros(len(df), bool)
            self._stale = False
        if self._fresh[term]:
            return
        idf = self._idf[term]
        for segment in (self.main, self.delta):
            start, end = segment.span(term)
            if start == end:
                continue
            tf = segment.tf[start:end]
            segment.data[start:end] = idf * tf / (tf + self._norm[segment.docs[start:end]])
        self._fresh[term] = True


def _small(counts: IntArray) -> npt.NDArray[np.integer]:
    """Term frequencies as uint16 when they fit (they do for any chunk of sane size)."""
    return counts.astype(np.uint16 if counts.max(initial=0) < 1 << 16 else np.int32)


def _padded(indptr: IntArray, vocab_size: int) -> IntArray:
    """`indptr` extended to `vocab_size` terms (newer terms have no postings here)."""
    if len(indptr) == vocab_size + 1:
        return indptr
    return np.concatenate([indptr, np.full(vocab_size + 1 - len(indptr), indptr[-1])])
