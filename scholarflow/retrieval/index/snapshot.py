"""The in-memory search arrays of one knowledge base, derived from its SQLite file.

SQLite is the truth; a snapshot is a cache of it: every chunk's vector and
BM25 terms, in chunk rowid order. Chunks are appended (a document is one
transaction, so its chunks have consecutive rowids), so a stale snapshot is
brought up to date by appending the rows past its watermark. A document
removed is a rowid range in SQLite's `removals`: its rows are marked dead
here (left out of every search) instead of rebuilding the arrays; once a
share of them is dead (DEAD_SHARE), or a row went missing any other way, it
is rebuilt from scratch. Until then BM25's statistics still count the dead
rows: scores differ from a fresh build's by that share at most.

Appending is incremental: the new rows' BM25 postings go into a small
segment (see `bm25`) and their vectors into spare rows behind the matrix,
so one more document costs about its own size, not the knowledge base's.
The snapshot is saved (`snapshot_file`: atomically, in a background thread)
only when the BM25 segments are merged, i.e. after the knowledge base grew
by ~1/8: rows added since are re-read from SQLite by the next process to
load it, which is cheap because they are few. A new process thus loads it
in a fraction of a second instead of re-reading and re-indexing every chunk.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from scholarflow.retrieval.index import snapshot_file
from scholarflow.retrieval.index.bm25 import Bm25Index, Segment
from scholarflow.retrieval.index.crosslingual import LexicalQuery
from scholarflow.retrieval.index.hybrid import hybrid_scores, lexical_scores

FloatArray = npt.NDArray[np.float32]
# Free rows kept behind the vectors (a share of the rows), so appends rarely copy the matrix.
SPARE_ROWS = 0.125
# What a snapshot file must hold besides its header (`save`); one without them is rebuilt.
_ARRAYS = ("vocab", "rowids", "lengths", "vectors", "refs", "dead", "indptr", "docs", "tf")
# Rebuilt when more than this share of the rows belongs to removed documents.
DEAD_SHARE = 0.125


class ChunkRow(NamedTuple):
    rowid: int
    doc_id: str
    terms: str  # space-separated BM25 terms
    vector: bytes  # float32, dim values; empty for a reference-list chunk (never embedded)
    kind: str = "body"  # "references": a reference list, searched only when asked for


@dataclass(frozen=True, slots=True)
class Hit:
    rowid: int
    score: float


@dataclass
class Snapshot:
    embedder: str
    dim: int
    rowids: npt.NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, np.int64))
    vectors: FloatArray | None = None
    bm25: Bm25Index = field(default_factory=Bm25Index)
    # True for reference-list chunks: left out of a search unless it asks for them.
    refs: npt.NDArray[np.bool_] = field(default_factory=lambda: np.zeros(0, bool))
    # True for rows of removed documents; replaced, never written into (a save may read it).
    dead: npt.NDArray[np.bool_] = field(default_factory=lambda: np.zeros(0, bool))
    removed: int = 0  # the last of SQLite's `removals` applied
    doc_ranges: dict[str, tuple[int, int]] = field(default_factory=dict)
    # `vectors` is the head of this buffer: rows past it are free for appends.
    _buffer: FloatArray | None = field(default=None, repr=False)
    _file: snapshot_file.SnapshotFile = field(
        default_factory=snapshot_file.SnapshotFile, repr=False)
    _saved: int = 0  # chunks in the file this snapshot was loaded from or last saved to

    def __post_init__(self) -> None:
        if self.vectors is None:
            self.vectors = np.zeros((0, self.dim), np.float32)
        if self._buffer is None:
            self._buffer = self.vectors

    @property
    def size(self) -> int:
        return len(self.rowids)

    @property
    def watermark(self) -> tuple[int, int]:
        """(live chunks, last rowid): what the snapshot covers."""
        live = self.size - int(np.count_nonzero(self.dead))
        return live, int(self.rowids[-1]) if self.size else 0

    @property
    def worn(self) -> bool:
        """Enough rows dead that rebuilding beats carrying them."""
        return int(np.count_nonzero(self.dead)) > DEAD_SHARE * max(self.size, 1)

    def remove(self, removals: Sequence[tuple[int, str, int, int]]) -> None:
        """Mark dead the rows of removed documents: (seq, doc_id, first rowid, last rowid)."""
        if not removals:
            return
        dead = self.dead.copy()
        for _seq, doc_id, first, last in removals:
            a = int(np.searchsorted(self.rowids, first, "left"))
            b = int(np.searchsorted(self.rowids, last, "right"))
            dead[a:b] = True
            span = self.doc_ranges.get(doc_id)
            if span is not None and a <= span[0] and span[1] <= b:  # not a later re-add
                del self.doc_ranges[doc_id]
        self.dead = dead
        self.removed = max(self.removed, max(r[0] for r in removals))

    def reserve(self, rows: int) -> None:
        """Room for `rows` more vectors (and spare rows): the matrix is copied at most once."""
        assert self.vectors is not None and self._buffer is not None
        end = self.size + rows
        if end > len(self._buffer):
            # Grown by a share, so n appends copy the matrix O(log n) times; a
            # background save may still be reading the old buffer, which stays as it was.
            grown = np.empty((end + int(end * SPARE_ROWS) + 16, self.dim), np.float32)
            grown[:self.size] = self.vectors
            self._buffer = grown

    def extend(self, rows: Sequence[ChunkRow]) -> None:
        """Append rows, which must come after every row already here (any batch size)."""
        if not rows:
            return
        self.reserve(len(rows))
        assert self.vectors is not None and self._buffer is not None
        start, end = self.size, self.size + len(rows)
        width = 4 * self.dim
        if all(len(r.vector) == width for r in rows):
            blob = b"".join([r.vector for r in rows])
            self._buffer[start:end] = np.frombuffer(blob, np.float32).reshape(len(rows), self.dim)
        else:  # reference-list chunks have no vector: a zero row (cosine 0, BM25 alone)
            block = self._buffer[start:end]
            block.fill(0.0)
            for i, r in enumerate(rows):
                if len(r.vector) == width:
                    block[i] = np.frombuffer(r.vector, np.float32)
        self.vectors = self._buffer[:end]
        self.refs = np.concatenate([self.refs, np.fromiter(
            (r.kind == "references" for r in rows), bool, len(rows))])
        self.dead = np.concatenate([self.dead, np.zeros(len(rows), bool)])
        self.rowids = np.concatenate([self.rowids, np.fromiter((r.rowid for r in rows), np.int64)])
        self.bm25.add([r.terms for r in rows])
        for i, row in enumerate(rows, start):
            first, _ = self.doc_ranges.get(row.doc_id, (i, i))
            self.doc_ranges[row.doc_id] = (first, i + 1)

    def settle(self) -> bool:
        """Index what `extend` gathered; True when the saved file is due for an update."""
        self.bm25.settle()
        return self.bm25.delta.postings == 0 and self.size > self._saved

    def search(
        self,
        terms: Sequence[str] | LexicalQuery,
        query_vector: FloatArray,
        *,
        doc_ids: Sequence[str] | None,
        weight: float,
        threshold: float,
        top_n: int,
        include_references: bool = False,
    ) -> list[Hit]:
        """Hybrid ranking, best first: `hybrid.hybrid_scores` of the candidates.

        `terms` are the query's BM25 terms, or a `LexicalQuery` that also
        holds its translation. Every candidate is scored in full (100k
        chunks: one 384-dim matrix-vector product), so a question in the
        other language still ranks by meaning.
        """
        assert self.vectors is not None
        if top_n <= 0 or self.size == 0:
            return []
        if doc_ids is None:
            positions: npt.NDArray[np.int64] | None = None
            cosine = self.vectors @ query_vector
        else:
            spans = sorted({self.doc_ranges[d] for d in doc_ids if d in self.doc_ranges})
            if not spans:
                return []
            positions = np.concatenate([np.arange(a, b, dtype=np.int64) for a, b in spans])
            # Only the chosen documents' rows: a document's chunks are contiguous.
            cosine = np.concatenate([self.vectors[a:b] @ query_vector for a, b in spans])
        hidden = self.dead if include_references else self.dead | self.refs
        if positions is not None:
            hidden = hidden[positions]
        some_hidden = bool(hidden.any())
        if some_hidden:
            cosine[hidden] = 0.0  # a removed chunk's cosine must not be the best one
        # The scoring itself (both languages' BM25, the fusion) lives in `hybrid`.
        query = terms if isinstance(terms, LexicalQuery) else LexicalQuery.of_terms(terms)
        lexical = lexical_scores(self.bm25, query)
        if positions is not None:
            lexical = lexical[positions]
        # In place, and the threshold before top-n (the same result): few chunks
        # pass it, and at 100k chunks an argpartition of all costs ~0.8 ms, the
        # comparison ~0.1 ms.
        score = hybrid_scores(lexical, cosine, weight)
        if some_hidden:
            score[hidden] = -np.inf
        best = np.flatnonzero(score >= threshold)
        if len(best) > top_n:
            best = best[np.argpartition(score[best], len(best) - top_n)[-top_n:]]
        keep = best[np.argsort(-score[best], kind="stable")]
        rows = keep if positions is None else positions[keep]
        return [Hit(int(self.rowids[r]), float(score[k])) for r, k in zip(rows, keep, strict=True)]

    # --- persistence -------------------------------------------------------

    def save(self, path: Path) -> None:
        """Save everything (BM25 segments merged first) in the background; see `snapshot_file`."""
        assert self.vectors is not None
        self.bm25.merge()
        bm25 = self.bm25
        header = {"embedder": self.embedder, "dim": self.dim, "removed": self.removed,
                  "docs": sorted(self.doc_ranges.items(), key=lambda kv: kv[1])}
        self._file.save(path, header, {
            # in id order: ids only ever grow
            "vocab": snapshot_file.text_bytes("\n".join(bm25.vocab)),
            "rowids": self.rowids, "refs": self.refs, "dead": self.dead,
            "vectors": self.vectors,
            "lengths": bm25.lengths,
            "indptr": bm25.main.indptr, "docs": bm25.main.docs.astype(np.int32), "tf": bm25.main.tf,
        })
        self._saved = self.size

    def wait_saved(self) -> None:
        """Until a save under way is on disk."""
        self._file.wait()

    @property
    def saving(self) -> bool:
        return self._file.busy

    @classmethod
    def load(cls, path: Path, *, embedder: str, dim: int) -> Snapshot | None:
        """The saved snapshot, or None when missing, unreadable or for other vectors."""
        z = snapshot_file.read(path, embedder=embedder, dim=dim, spare=SPARE_ROWS)
        # A file written by another version of this format may lack an array: rebuilt then.
        if z is None or any(key not in z for key in _ARRAYS):
            return None
        raw_vocab = z["vocab"].tobytes().decode()
        vocab = {t: i for i, t in enumerate(raw_vocab.split("\n"))} if raw_vocab else {}
        rowids, lengths, buffer, refs = z["rowids"], z["lengths"], z["vectors"], z["refs"]
        dead = z["dead"]
        indptr, docs, tf = z["indptr"], z["docs"], z["tf"]
        n = len(rowids)
        if (buffer.shape[1] != dim or len(buffer) < n or len(lengths) != n or len(refs) != n
                or len(dead) != n
                or len(indptr) != len(vocab) + 1 or not indptr[-1] == len(docs) == len(tf)):
            return None
        main = Segment(indptr, docs.astype(np.intp), tf, np.zeros(len(docs), np.float32))
        return cls(
            embedder=embedder, dim=dim, rowids=rowids, vectors=buffer[:n], refs=refs.astype(bool),
            dead=dead.astype(bool), removed=int(z["header"].get("removed", 0)),
            bm25=Bm25Index.from_arrays(vocab, lengths, main),
            doc_ranges={d: (a, b) for d, (a, b) in z["header"]["docs"]},
            _buffer=buffer, _saved=n,
        )
