"""A library in the embedded index: reference lists, document fields, removal, replacement,
the migration of older files, and listing knowledge bases."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from contextlib import closing
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest

from scholarflow.retrieval.embeddings import Vectors
from scholarflow.retrieval.index.embedded import DB_FILENAME, EmbeddedKnowledgeBase
from scholarflow.retrieval.kb import (
    Chunk,
    DocumentNotFoundError,
    KnowledgeBaseInfo,
    KnowledgeBaseNotFoundError,
    RecallParams,
    StoredDocument,
)
from scholarflow.retrieval.kb_registry import (
    close_all,
    describe_knowledge_bases,
    open_knowledge_base,
)
from tests.support.embeddings import HashingEmbedder

BODY = "Gentamicin resistance evolved in Acinetobacter lwoffii after serial passage."
REFS = ("Smith J. Acinetobacter lwoffii resistance to gentamicin. J Bacteriol 2019; "
        "Jones K. Gentamicin and Acinetobacter. Nature 2020.")
OTHER = "Convolutional layers extract image features for classification."
ALL = RecallParams(top_n=100, similarity_threshold=-1.0)


class CountingEmbedder(HashingEmbedder):
    """Counts the passages it embeds."""

    def __init__(self) -> None:
        super().__init__()
        self.passages: list[str] = []

    async def embed_passages(self, texts: Sequence[str]) -> Vectors:
        self.passages += texts
        return await super().embed_passages(texts)


def paper(doc_id: str, texts: Sequence[tuple[str, str]], **fields: object) -> tuple[
    StoredDocument, str, list[Chunk]
]:
    chunks = [Chunk(f"{doc_id}:{n:05d}", doc_id, n, t, len(t.split()), None, 1,
                    kind="references" if kind == "references" else "body")
              for n, (kind, t) in enumerate(texts)]
    text = "\n\n".join(t for _, t in texts)
    document = StoredDocument(doc_id, f"Paper {doc_id}", f"/papers/{doc_id}.pdf", f"h-{doc_id}",
                              len(text.split()), len(chunks), **fields)  # type: ignore[arg-type]
    return document, text, chunks


async def test_reference_lists_are_not_embedded_and_not_recalled_unless_asked(home: Path) -> None:
    embedder = CountingEmbedder()
    kb = await open_knowledge_base("lib", create=True, embedder=embedder)
    await kb.add(*paper("p1", [("body", BODY), ("references", REFS)]))
    assert embedder.passages == [BODY]  # the reference list cost no embedding
    query = "Acinetobacter lwoffii gentamicin resistance"
    hits = await kb.search(query, doc_ids=None, params=ALL)
    assert [(h.chunk_id, h.kind) for h in hits] == [("p1:00000", "body")]
    with_refs = RecallParams(top_n=100, similarity_threshold=-1.0, include_references=True)
    hits = await kb.search(query, doc_ids=["p1"], params=with_refs)
    assert {(h.chunk_id, h.kind) for h in hits} == {("p1:00000", "body"),
                                                    ("p1:00001", "references")}
    # A fresh process (the saved snapshot) keeps the mark.
    await close_all()
    again = await open_knowledge_base("lib", embedder=embedder)
    assert [h.kind for h in await again.search(query, doc_ids=None, params=ALL)] == ["body"]


async def test_document_fields_are_stored_and_added_is_utc_now(home: Path) -> None:
    kb = await open_knowledge_base("lib", create=True, embedder=HashingEmbedder())
    before = datetime.now().astimezone()
    await kb.add(*paper("p1", [("body", BODY)], authors=("A. Author", "B. Author"), year=2021,
                        doi="10.5555/lib.2021.0014", pages=14))
    [doc] = await kb.documents()
    assert (doc.authors, doc.year, doc.doi, doc.pages) == (
        ("A. Author", "B. Author"), 2021, "10.5555/lib.2021.0014", 14)
    assert doc.added is not None
    added = datetime.fromisoformat(doc.added)
    assert added.utcoffset() is not None and added.utcoffset().total_seconds() == 0  # type: ignore[union-attr]
    assert before.replace(microsecond=0) <= added <= datetime.now().astimezone()


async def test_remove_deletes_a_document_whole(home: Path) -> None:
    kb = await open_knowledge_base("lib", create=True, embedder=HashingEmbedder())
    await kb.add(*paper("p1", [("body", BODY), ("references", REFS)]))
    await kb.add(*paper("p2", [("body", OTHER)]))
    assert await kb.search("Acinetobacter", doc_ids=None, params=ALL)  # the snapshot is built
    await kb.remove("p1")
    assert [d.doc_id for d in await kb.documents()] == ["p2"]
    assert {h.doc_id for h in await kb.search("Acinetobacter", doc_ids=None, params=ALL)} == {
        "p2"}
    with pytest.raises(DocumentNotFoundError):
        await kb.document_text("p1")
    with pytest.raises(DocumentNotFoundError, match="no document 'p1'"):
        await kb.remove("p1")
    assert await kb.info() == KnowledgeBaseInfo("lib", 1, 1, "embedded")
    _assert_consistent(home / "kb" / "lib" / DB_FILENAME)


async def test_add_replacing_an_older_version_is_one_step(home: Path) -> None:
    kb = await open_knowledge_base("lib", create=True, embedder=HashingEmbedder())
    await kb.add(*paper("v1", [("body", BODY)]))
    assert await kb.add(*paper("v2", [("body", OTHER)]), replaces=["v1"])
    assert [d.doc_id for d in await kb.documents()] == ["v2"]
    # Already stored: False, and the document it would replace stays.
    await kb.add(*paper("v3", [("body", BODY)]))
    assert not await kb.add(*paper("v2", [("body", OTHER)]), replaces=["v3"])
    assert [d.doc_id for d in await kb.documents()] == ["v2", "v3"]
    _assert_consistent(home / "kb" / "lib" / DB_FILENAME)


OLD_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE documents (seq INTEGER PRIMARY KEY AUTOINCREMENT, doc_id TEXT NOT NULL UNIQUE,
    title TEXT NOT NULL, source TEXT, content_hash TEXT NOT NULL, tokens INTEGER NOT NULL,
    chunks INTEGER NOT NULL);
CREATE TABLE texts (doc_id TEXT PRIMARY KEY REFERENCES documents (doc_id), text TEXT NOT NULL);
CREATE TABLE chunks (id INTEGER PRIMARY KEY AUTOINCREMENT, chunk_id TEXT NOT NULL UNIQUE,
    doc_id TEXT NOT NULL REFERENCES documents (doc_id), n INTEGER NOT NULL, text TEXT NOT NULL,
    tokens INTEGER NOT NULL, heading TEXT, page INTEGER, terms TEXT NOT NULL,
    vector BLOB NOT NULL);
"""


async def test_a_knowledge_base_of_the_older_schema_keeps_working(home: Path) -> None:
    embedder = HashingEmbedder()
    db = home / "kb" / "old" / DB_FILENAME
    db.parent.mkdir(parents=True)
    vector = (await embedder.embed_passages([BODY]))[0].astype(np.float32).tobytes()
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.executescript(OLD_SCHEMA)
        conn.executemany("INSERT INTO meta VALUES (?, ?)",
                         [("embedder", embedder.name), ("dim", str(embedder.dim))])
        conn.execute("INSERT INTO documents (doc_id, title, source, content_hash, tokens, chunks)"
                     " VALUES ('old', 'Old paper', 'old.md', 'h', 9, 1)")
        conn.execute("INSERT INTO texts VALUES ('old', ?)", (BODY,))
        conn.execute("INSERT INTO chunks (chunk_id, doc_id, n, text, tokens, heading, page, terms,"
                     " vector) VALUES ('old:00000', 'old', 0, ?, 9, NULL, NULL,"
                     " 'acinetobacter lwoffii gentamicin', ?)", (BODY, vector))
    kb = await open_knowledge_base("old", embedder=embedder)
    [doc] = await kb.documents()
    assert (doc.doc_id, doc.authors, doc.year, doc.added) == ("old", (), None, None)
    [hit] = await kb.search("Acinetobacter gentamicin", doc_ids=None, params=ALL)
    assert (hit.chunk_id, hit.kind) == ("old:00000", "body")
    await kb.add(*paper("new", [("body", OTHER), ("references", REFS)]))
    assert [d.doc_id for d in await kb.documents()] == ["old", "new"]
    await kb.remove("old")
    assert await kb.info() == KnowledgeBaseInfo("old", 1, 2, "embedded")


async def test_describe_lists_every_knowledge_base_without_its_embedder(home: Path) -> None:
    assert await describe_knowledge_bases() == []
    a = await open_knowledge_base("alpha", create=True, embedder=HashingEmbedder())
    await a.add(*paper("p1", [("body", BODY), ("references", REFS)]))
    b = await open_knowledge_base("beta", create=True, embedder=HashingEmbedder())
    await b.add(*paper("p2", [("body", OTHER)]))
    assert await describe_knowledge_bases() == [
        KnowledgeBaseInfo("alpha", 1, 2, "embedded"), KnowledgeBaseInfo("beta", 1, 1, "embedded")]
    with pytest.raises(KnowledgeBaseNotFoundError):
        await EmbeddedKnowledgeBase.describe("gamma")


def _assert_consistent(db: Path) -> None:
    """Every document whole: its text, and as many chunks as it says; no orphan chunk."""
    with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        docs = dict(conn.execute("SELECT doc_id, chunks FROM documents").fetchall())
        chunks = dict(conn.execute("SELECT doc_id, COUNT(*) FROM chunks GROUP BY doc_id"))
        texts = {row[0] for row in conn.execute("SELECT doc_id FROM texts")}
    assert chunks == {d: n for d, n in docs.items() if n} and texts == set(docs)


async def test_a_removal_marks_rows_dead_instead_of_rebuilding(home: Path) -> None:
    embedder = HashingEmbedder()
    writer = await open_knowledge_base("lib", create=True, embedder=embedder)
    for i in range(10):  # one removed is 1/10 of the rows: under DEAD_SHARE
        await writer.add(*paper(f"p{i}", [("body", f"{BODY} Copy {i}."), ("body", OTHER)]))
    # Another process's view of the same knowledge base: its own connection and arrays.
    reader = await EmbeddedKnowledgeBase.open("lib", embedder=embedder)
    query = "Acinetobacter lwoffii gentamicin"
    everything = {f"p{i}" for i in range(10)}
    assert {h.doc_id for h in await reader.search(query, doc_ids=None, params=ALL)} == everything
    arrays = reader._snapshot
    await writer.remove("p1")
    assert {h.doc_id for h in await reader.search(query, doc_ids=None, params=ALL)} == (
        everything - {"p1"})
    assert reader._snapshot is arrays and arrays is not None  # not rebuilt: rows marked dead
    assert int(arrays.dead.sum()) == 2
    with pytest.raises(DocumentNotFoundError):
        await reader.search(query, doc_ids=["p1"], params=ALL)
    # Added again (new rows), it is found again; the old rows stay dead.
    await writer.add(*paper("p1", [("body", f"{BODY} Copy 1."), ("body", OTHER)]))
    hits = await reader.search(query, doc_ids=["p1"], params=ALL)
    assert [h.doc_id for h in hits] == ["p1", "p1"] and reader._snapshot is arrays
    await reader.close()
    await close_all()
    # A new process loads the saved arrays and applies the removals made since.
    fresh = await EmbeddedKnowledgeBase.open("lib", embedder=embedder)
    assert sorted(h.chunk_id for h in await fresh.search(query, doc_ids=None, params=ALL)) == [
        f"p{i}:{n:05d}" for i in range(10) for n in (0, 1)]
    # More than 1/8 of the rows dead: the arrays are rebuilt, without them.
    await fresh.remove("p0")
    await fresh.remove("p2")
    await fresh.search(query, doc_ids=None, params=ALL)
    assert fresh._snapshot is not None and not fresh._snapshot.dead.any()
    assert fresh._snapshot.size == 16
    await fresh.close()


def test_a_snapshot_file_lacking_an_array_is_rebuilt_not_a_crash(tmp_path: Path) -> None:
    # Seen on a library whose snapshot an earlier build of this format wrote without "dead".
    import json

    import numpy as np

    from scholarflow.retrieval.index.snapshot import Snapshot
    from scholarflow.retrieval.index.snapshot_file import CACHE_FORMAT

    path = tmp_path / "snapshot.npz"
    header = {"format": CACHE_FORMAT, "embedder": "e", "dim": 2, "docs": []}
    np.savez(path, header=np.frombuffer(json.dumps(header).encode(), np.uint8),
             vocab=np.zeros(0, np.uint8), rowids=np.zeros(0, np.int64),
             lengths=np.zeros(0, np.float32), vectors=np.zeros((0, 2), np.float32),
             refs=np.zeros(0, bool), indptr=np.zeros(1, np.int64),
             docs=np.zeros(0, np.int32), tf=np.zeros(0, np.float32))  # no "dead"
    assert Snapshot.load(path, embedder="e", dim=2) is None
