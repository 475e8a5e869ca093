"""The embedded knowledge base: one SQLite file plus a numpy snapshot, under SCHOLARFLOW_HOME.

`<home>/kb/<name>/index.sqlite` holds the documents, their whole texts, and
their chunks with BM25 terms and vectors (`embedded_sql`: schema and
migration). A document goes in, is replaced or is removed in one
transaction, so a crash (even kill -9) leaves it whole or absent, and the
UNIQUE doc_id makes adding it again a no-op. Reference-list chunks get no
vector. `snapshot.npz` beside it is a disposable cache of the search arrays
(see `snapshot`).

All file, SQLite and numpy work runs in worker threads: LangGraph server
rejects blocking calls on the event loop.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import replace
from functools import partial
from pathlib import Path

import numpy as np

from scholarflow.errors import ConfigurationError, InputError
from scholarflow.retrieval.embeddings import Embedder, Vectors, default_embedder, embedder_named
from scholarflow.retrieval.index import check_stored_name
from scholarflow.retrieval.index import embedded_sql as sql
from scholarflow.retrieval.index.crosslingual import lexical_query
from scholarflow.retrieval.index.lexicon import lexicon
from scholarflow.retrieval.index.snapshot import Snapshot
from scholarflow.retrieval.index.snapshot_sync import synced
from scholarflow.retrieval.index.tokenize import has_words, terms_text, without_option_pointers
from scholarflow.retrieval.kb import (
    Chunk,
    DocumentNotFoundError,
    KnowledgeBaseInfo,
    KnowledgeBaseNotFoundError,
    RecalledChunk,
    RecallParams,
    StoredDocument,
)
from scholarflow.retrieval.rerank import rerank
from scholarflow.storage.paths import home_path
from scholarflow.storage.sqlite import SqliteDatabase, transaction

DB_FILENAME = "index.sqlite"
SNAPSHOT_FILENAME = "snapshot.npz"

class EmbedderMismatchError(ConfigurationError):
    """The knowledge base's vectors came from another embedding model."""


def _remedy(name: str) -> str:
    return f"; then ingest the documents of knowledge base {name!r} again"


def kb_root() -> Path:
    return home_path() / "kb"


class EmbeddedKnowledgeBase:
    """One knowledge base; safe to share between tasks, threads and processes."""

    def __init__(self, name: str, folder: Path, embedder: Embedder, dim: int | None) -> None:
        self.name = name
        self.folder = folder
        self.embedder = embedder
        self._dim = dim  # None until the first document fixes it
        self._db = SqliteDatabase(folder / DB_FILENAME, sql.SCHEMA, remedy=_remedy(name))
        self._snapshot: Snapshot | None = None
        self._seen_version: tuple[int, int] | None = None  # (data_version, own writes)
        self._writes = 0
        # Searches and refreshes of this object take turns: a refresh replaces the arrays.
        self._lock = threading.Lock()

    @classmethod
    async def open(
        cls, name: str, *, create: bool = False, embedder: Embedder | None = None
    ) -> EmbeddedKnowledgeBase:
        """Open `<home>/kb/<name>/`; with `create`, make it when missing.

        Without an `embedder` it uses the one the knowledge base was built
        with; with one, that must be the same model.
        """
        check_stored_name(name)
        folder = kb_root() / name
        exists = await asyncio.to_thread((folder / DB_FILENAME).is_file)
        if not exists and not create:
            raise KnowledgeBaseNotFoundError(
                f"no knowledge base {name!r}; create one with `scholarflow ingest FILE --kb {name}`"
            )
        # Creates folder and schema; a damaged file is one error naming it.
        db = SqliteDatabase(folder / DB_FILENAME, sql.SCHEMA, remedy=_remedy(name))
        try:
            await db.run(sql.migrate)  # an older file gains the columns added since
            meta = await db.run(sql.read_meta)
            if "embedder" not in meta:
                embedder = embedder or default_embedder()
                meta = await db.run(partial(sql.claim_embedder, name=embedder.name))
        finally:
            await db.close()
        stored = meta["embedder"]
        if embedder is None:
            embedder = embedder_named(stored)
            if embedder is None:
                raise EmbedderMismatchError(
                    f"knowledge base {name!r} was built with embeddings {stored!r}, "
                    "which this process cannot make; pass that embedder"
                )
        elif embedder.name != stored:
            raise EmbedderMismatchError(
                f"knowledge base {name!r} was built with embeddings {stored!r}, not "
                f"{embedder.name!r}: vectors of two models cannot be compared; use the same "
                "model (SCHOLARFLOW_EMBEDDING_MODEL) or ingest into a new knowledge base"
            )
        dim = int(meta["dim"]) if "dim" in meta else None
        return cls(name, folder, embedder, dim)

    @staticmethod
    async def describe(name: str) -> KnowledgeBaseInfo:
        """Its counts, read without opening it for search (no embedder needed)."""
        folder = kb_root() / check_stored_name(name)
        if not await asyncio.to_thread((folder / DB_FILENAME).is_file):
            raise KnowledgeBaseNotFoundError(f"no knowledge base {name!r}")
        db = SqliteDatabase(folder / DB_FILENAME, sql.SCHEMA, remedy=_remedy(name))
        try:
            documents, chunks = await db.run(sql.counts)
        finally:
            await db.close()
        return KnowledgeBaseInfo(name, documents, chunks, "embedded")

    # --- writing -------------------------------------------------------------

    async def add(
        self, document: StoredDocument, text: str, chunks: Sequence[Chunk], *,
        replaces: Sequence[str] = (),
    ) -> bool:
        """Store a document atomically; False (and nothing changed) if it is already there.

        The documents of `replaces` (earlier versions of the same file) are
        removed in the same transaction: a reader sees the old version or the
        new one, never both or neither. Reference-list chunks are not embedded.
        """
        for chunk in chunks:
            if chunk.doc_id != document.doc_id:
                raise InputError(
                    f"chunk {chunk.chunk_id!r} belongs to {chunk.doc_id!r}, "
                    f"not to {document.doc_id!r}"
                )
        terms = await asyncio.to_thread(self._terms_if_new, document.doc_id, chunks)
        if terms is None:
            return False  # before embedding: re-ingesting a file costs one lookup
        embedded = [i for i, c in enumerate(chunks) if c.kind != "references"]
        vectors = await self.embedder.embed_passages([_embedding_text(chunks[i]) for i in embedded])
        if vectors.shape[0] != len(embedded):
            raise ConfigurationError(
                f"the embedder {self.embedder.name!r} returned {vectors.shape[0]} vectors "
                f"for {len(embedded)} chunks"
            )
        dim = int(vectors.shape[1]) if embedded else None
        rows = sql.vector_bytes(vectors, embedded)
        added = await self._db.run(
            lambda conn: self._insert(conn, document, text, chunks, terms, rows, dim, replaces)
        )
        if added:
            self._writes += 1
        return added

    def _terms_if_new(self, doc_id: str, chunks: Sequence[Chunk]) -> list[str] | None:
        """The chunks' BM25 terms, or None when the document is stored (one thread hop)."""
        if self._db.locked(lambda conn: sql.has_document(conn, doc_id)):
            return None
        return _chunk_terms(chunks)

    def _insert(
        self,
        conn: sqlite3.Connection,
        document: StoredDocument,
        text: str,
        chunks: Sequence[Chunk],
        terms: list[str],
        vectors: dict[int, bytes],
        dim: int | None,
        replaces: Sequence[str],
    ) -> bool:
        with transaction(conn):
            stored_dim = sql.read_meta(conn).get("dim")
            if dim is not None and stored_dim is None:
                sql.write_meta(conn, {"dim": str(dim)})
            elif dim is not None and int(stored_dim) != dim:  # type: ignore[arg-type]
                raise ConfigurationError(
                    f"knowledge base {self.name!r} holds {stored_dim}-dimensional vectors, but "
                    f"{self.embedder.name!r} gave {dim}"
                )
            if not sql.insert_document(conn, document, text, chunks, terms, vectors):
                return False
            sql.delete_documents(conn, [d for d in replaces if d != document.doc_id])
        if dim is not None and self._dim is None:
            self._dim = dim
        return True

    async def remove(self, doc_id: str) -> None:
        """Delete a document, its text and chunks, in one transaction; DocumentNotFoundError
        when absent. A search under way sees it whole or not at all."""
        def delete(conn: sqlite3.Connection) -> int:
            with transaction(conn):
                return sql.delete_documents(conn, [doc_id])

        if not await self._db.run(delete):
            raise DocumentNotFoundError(f"no document {doc_id!r} in knowledge base {self.name!r}")
        self._writes += 1

    async def info(self) -> KnowledgeBaseInfo:
        documents, chunks = await self._db.run(sql.counts)
        return KnowledgeBaseInfo(self.name, documents, chunks, "embedded")

    # --- reading -------------------------------------------------------------

    async def documents(self, doc_ids: Sequence[str] | None = None) -> list[StoredDocument]:
        """The documents in the order added, or those of `doc_ids` (absent ones skipped)."""
        wanted = None if doc_ids is None else list(dict.fromkeys(doc_ids))
        return await self._db.run(lambda conn: sql.documents(conn, wanted))

    async def document_text(self, doc_id: str) -> str:
        row = await self._db.run(
            lambda conn: conn.execute(
                "SELECT text FROM texts WHERE doc_id = ?", (doc_id,)
            ).fetchone()
        )
        if row is None:
            raise DocumentNotFoundError(f"no document {doc_id!r} in knowledge base {self.name!r}")
        return str(row["text"])

    async def search(
        self, query: str, *, doc_ids: Sequence[str] | None, params: RecallParams
    ) -> list[RecalledChunk]:
        if not has_words(query):
            raise InputError("the query has no searchable words")
        if doc_ids is not None and not doc_ids:
            return []
        vector = await self.embedder.embed_query(without_option_pointers(query))
        wide = replace(params, top_n=4 * params.top_n) if params.use_rerank else params
        found = await asyncio.to_thread(self._search, query, vector, doc_ids, wide)
        return await rerank(query, found, top_n=params.top_n) if params.use_rerank else found

    def _search(
        self,
        query: str,
        vector: Vectors,
        doc_ids: Sequence[str] | None,
        params: RecallParams,
    ) -> list[RecalledChunk]:
        lexicon()  # parsed once per process (~2 s), before taking the lock
        with self._lock:
            snapshot = self._fresh_snapshot()
            known = snapshot.doc_ranges if snapshot is not None else {}
            if doc_ids is not None and (missing := [d for d in doc_ids if d not in known]):
                self._check_documents(missing)  # a document without chunks is no error
            if snapshot is None:
                return []  # no chunk was ever added
            return self._ranked(snapshot, query, vector, doc_ids, params)

    def _ranked(
        self,
        snapshot: Snapshot,
        query: str,
        vector: Vectors,
        doc_ids: Sequence[str] | None,
        params: RecallParams,
    ) -> list[RecalledChunk]:
        terms = lexical_query(query)
        hits = snapshot.search(
            terms, np.asarray(vector, np.float32), doc_ids=doc_ids,
            weight=params.vector_similarity_weight, threshold=params.similarity_threshold,
            top_n=params.top_n, include_references=params.include_references,
        )
        if not hits:
            return []
        rows = self._db.locked(lambda conn: sql.chunk_rows(conn, [h.rowid for h in hits]))
        return [
            RecalledChunk(
                doc_id=r["doc_id"], chunk_id=r["chunk_id"], score=round(h.score, 6),
                text=r["text"], title=r["title"], heading=r["heading"], page=r["page"],
                kind=r["kind"],
            )
            for h in hits
            if (r := rows.get(h.rowid)) is not None
        ]

    def _check_documents(self, doc_ids: Sequence[str]) -> None:
        """Unknown ids are an error; known ones without chunks (empty documents) are not."""
        found = self._db.locked(lambda conn: {d.doc_id for d in sql.documents(conn, list(doc_ids))})
        for doc_id in doc_ids:
            if doc_id not in found:
                raise DocumentNotFoundError(
                    f"no document {doc_id!r} in knowledge base {self.name!r}"
                )

    def _fresh_snapshot(self) -> Snapshot | None:
        """The search arrays, brought up to date with SQLite; call holding `_lock`."""
        data_version = self._db.locked(
            lambda conn: int(conn.execute("PRAGMA data_version").fetchone()[0])
        )
        version = (data_version, self._writes)
        if self._snapshot is not None and version == self._seen_version:
            return self._snapshot  # nobody wrote since: the common, microsecond path
        if self._dim is None:
            meta = self._db.locked(sql.read_meta)
            if "dim" not in meta:
                return None  # nothing with chunks was ever added
            self._dim = int(meta["dim"])
        self._snapshot = synced(self._db, self.folder / SNAPSHOT_FILENAME, self._snapshot,
                                embedder=self.embedder.name, dim=self._dim)
        self._seen_version = version
        return self._snapshot

    async def close(self) -> None:
        """Release the SQLite connection; it reopens if the object is used again.

        The search arrays stay: the registry shares this object, and the next
        search only checks them against SQLite instead of reloading them.
        """
        await self._db.close()
        await asyncio.to_thread(self._forget_version)

    def _forget_version(self) -> None:
        with self._lock:  # data_version numbers are per connection: start over
            self._seen_version = None
            if self._snapshot is not None:
                self._snapshot.wait_saved()  # a closed knowledge base leaves no write behind


def _embedding_text(chunk: Chunk) -> str:
    # The heading says what a chunk is about when its own text does not.
    return f"{chunk.heading}\n{chunk.text}" if chunk.heading else chunk.text


def _chunk_terms(chunks: Sequence[Chunk]) -> list[str]:
    return [terms_text(_embedding_text(c)) for c in chunks]
