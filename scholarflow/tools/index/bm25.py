"""BM25 over a growing list of chunks, in numpy.

The corpus is kept as one flat int32 array of term ids plus offsets, so new
chunks are appended without re-tokenising the old ones, and the scoring
matrix (Lucene BM25, term-major like a CSC matrix) is rebuilt in one
vectorised pass: about 1 s for 100k chunks, against 9 s to rebuild a bm25s
index from stored terms. Scores equal bm25s' "lucene" method (k1 1.5, b 0.75)
without its constant (k1 + 1) factor, which hybrid normalisation divides out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

K1 = 1.5
B = 0.75

IntArray = npt.NDArray[np.int64]
Int32Array = npt.NDArray[np.int32]
FloatArray = npt.NDArray[np.float32]


@dataclass
class Bm25Index:
    vocab: dict[str, int] = field(default_factory=dict)
    ids: Int32Array = field(default_factory=lambda: np.zeros(0, np.int32))
    offsets: IntArray = field(default_factory=lambda: np.zeros(1, np.int64))
    # The scoring matrix, term-major: term t's postings are [indptr[t], indptr[t+1]).
    data: FloatArray = field(default_factory=lambda: np.zeros(0, np.float32))
    docs: Int32Array = field(default_factory=lambda: np.zeros(0, np.int32))
    indptr: IntArray = field(default_factory=lambda: np.zeros(1, np.int64))

    @property
    def size(self) -> int:
        return len(self.offsets) - 1

    def extend(self, documents: Sequence[Sequence[str]]) -> None:
        """Append documents (each a list of terms) and rebuild the matrix."""
        if not documents:
            return
        setdefault = self.vocab.setdefault
        new_ids = [setdefault(term, len(self.vocab)) for doc in documents for term in doc]
        lengths = np.fromiter((len(doc) for doc in documents), np.int64, len(documents))
        self.ids = np.concatenate([self.ids, np.asarray(new_ids, np.int32)])
        self.offsets = np.concatenate([self.offsets, self.offsets[-1] + np.cumsum(lengths)])
        self._build()

    def _build(self) -> None:
        n, vocab_size = self.size, len(self.vocab)
        lengths = np.diff(self.offsets)
        doc = np.repeat(np.arange(n, dtype=np.int64), lengths)
        # One sort gives the postings term-major and counts each (term, doc) pair.
        keys, tf = np.unique(self.ids.astype(np.int64) * n + doc, return_counts=True)
        terms, docs = np.divmod(keys, n)
        df = np.bincount(terms, minlength=vocab_size)
        idf = np.log1p((n - df + 0.5) / (df + 0.5))
        avgdl = max(float(lengths.mean()), 1.0) if n else 1.0
        norm = K1 * (1.0 - B + B * lengths[docs] / avgdl)
        self.data = (idf[terms] * tf / (tf + norm)).astype(np.float32)
        self.docs = docs.astype(np.int32)
        self.indptr = np.concatenate([[0], np.cumsum(df)]).astype(np.int64)

    def term_ids(self, terms: Sequence[str]) -> list[int]:
        return [self.vocab[t] for t in terms if t in self.vocab]

    def bound(self, term_ids: Sequence[int]) -> float:
        """The most these terms can score: a term adds at most its idf (tf/(tf+norm) < 1)."""
        n = self.size
        df = (self.indptr[np.asarray(term_ids, np.int64) + 1]
              - self.indptr[np.asarray(term_ids, np.int64)])
        return float(np.log1p((n - df + 0.5) / (df + 0.5)).sum())

    def scores(self, term_ids: Sequence[int]) -> FloatArray:
        """BM25 of every document for these (distinct) query terms."""
        out = np.zeros(self.size, np.float32)
        for t in term_ids:
            start, end = self.indptr[t], self.indptr[t + 1]
            # A term has one posting per document, so plain fancy += is exact.
            out[self.docs[start:end]] += self.data[start:end]
        return out
