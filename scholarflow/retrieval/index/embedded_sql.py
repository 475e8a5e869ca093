"""The embedded knowledge base's SQLite file: schema, migration and row helpers.

Every function takes a connection and runs in the caller's worker thread
(see `embedded`). A document is written, replaced or removed in one
transaction, so a crash (even kill -9) leaves it whole or absent.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence

import numpy as np

from scholarflow.retrieval.embeddings import Vectors
from scholarflow.retrieval.kb import Chunk, StoredDocument, now_utc
from scholarflow.storage.sqlite import transaction

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS documents (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    doc_id TEXT NOT NULL UNIQUE,
    title TEXT NOT NULL,
    source TEXT,
    content_hash TEXT NOT NULL,
    tokens INTEGER NOT NULL,
    chunks INTEGER NOT NULL,
    authors TEXT,  -- a JSON list of names
    year INTEGER,
    doi TEXT,
    pages INTEGER,
    added TEXT
);
CREATE TABLE IF NOT EXISTS texts (
    doc_id TEXT PRIMARY KEY REFERENCES documents (doc_id),
    text TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY AUTOINCREMENT,  -- never reused: snapshots append past a watermark
    chunk_id TEXT NOT NULL UNIQUE,
    doc_id TEXT NOT NULL REFERENCES documents (doc_id),
    n INTEGER NOT NULL,
    text TEXT NOT NULL,
    tokens INTEGER NOT NULL,
    heading TEXT,
    page INTEGER,
    terms TEXT NOT NULL,
    vector BLOB NOT NULL,  -- empty for a reference-list chunk: it is never embedded
    kind TEXT NOT NULL DEFAULT 'body'
);
"""

# Columns added after the first release: (table, column, declaration). A knowledge base
# made before them gets them on opening (`migrate`); the old rows read as the defaults.
_ADDED_COLUMNS = [
    ("documents", "authors", "TEXT"),
    ("documents", "year", "INTEGER"),
    ("documents", "doi", "TEXT"),
    ("documents", "pages", "INTEGER"),
    ("documents", "added", "TEXT"),
    ("chunks", "kind", "TEXT NOT NULL DEFAULT 'body'"),
]
# Made after the columns, so they exist in old files too. The chunk index makes a
# document's removal a range lookup instead of a scan of every chunk.
_INDEXES = """
CREATE INDEX IF NOT EXISTS documents_source ON documents (source);
CREATE INDEX IF NOT EXISTS chunks_doc ON chunks (doc_id);
"""
_DOC_COLUMNS = ("doc_id, title, source, content_hash, tokens, chunks,"
                " authors, year, doi, pages, added")


def migrate(conn: sqlite3.Connection) -> None:
    """Bring an older file to the current schema; a no-op (two reads) when it is current.

    In one IMMEDIATE transaction: two processes opening the same old file
    at once do it once (the second sees the columns already there).
    """
    if not _missing_columns(conn) and _has_indexes(conn):
        return
    with transaction(conn):
        for table, column, declaration in _missing_columns(conn):
            conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {declaration}")
        for statement in _INDEXES.strip().splitlines():
            conn.execute(statement)


def _missing_columns(conn: sqlite3.Connection) -> list[tuple[str, str, str]]:
    present = {table: {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
               for table in ("documents", "chunks")}
    return [entry for entry in _ADDED_COLUMNS if entry[1] not in present[entry[0]]]


def _has_indexes(conn: sqlite3.Connection) -> bool:
    names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='index'")}
    return {"documents_source", "chunks_doc"} <= names


def read_meta(conn: sqlite3.Connection) -> dict[str, str]:
    return {row["key"]: row["value"] for row in conn.execute("SELECT key, value FROM meta")}


def claim_embedder(conn: sqlite3.Connection, name: str) -> dict[str, str]:
    """Record the embedder of a new knowledge base; a racing creator's choice wins if first."""
    with transaction(conn):
        write_meta(conn, {"embedder": name})
        return read_meta(conn)


def write_meta(conn: sqlite3.Connection, values: dict[str, str]) -> None:
    conn.executemany(
        "INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)", list(values.items())
    )


def has_document(conn: sqlite3.Connection, doc_id: str) -> bool:
    row = conn.execute("SELECT 1 FROM documents WHERE doc_id = ?", (doc_id,)).fetchone()
    return row is not None


def insert_document(
    conn: sqlite3.Connection,
    document: StoredDocument,
    text: str,
    chunks: Sequence[Chunk],
    terms: Sequence[str],
    vectors: dict[int, bytes],
) -> bool:
    """Insert inside the caller's transaction; False when the doc_id is already stored.

    `vectors` maps a chunk's position to its float32 bytes; a chunk without
    one (a reference list) is stored with an empty vector.
    """
    try:
        conn.execute(
            f"INSERT INTO documents ({_DOC_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (document.doc_id, document.title, document.source, document.content_hash,
             document.tokens, len(chunks), json.dumps(list(document.authors), ensure_ascii=False),
             document.year, document.doi, document.pages, document.added or now_utc()),
        )
    except sqlite3.IntegrityError:
        return False  # another task or process added it meanwhile; nothing changed
    conn.execute("INSERT INTO texts (doc_id, text) VALUES (?, ?)", (document.doc_id, text))
    conn.executemany(
        "INSERT INTO chunks (chunk_id, doc_id, n, text, tokens, heading, page, terms, vector,"
        " kind) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [(c.chunk_id, c.doc_id, c.n, c.text, c.tokens, c.heading, c.page, t,
          vectors.get(i, b""), c.kind)
         for i, (c, t) in enumerate(zip(chunks, terms, strict=True))],
    )
    return True


def delete_documents(conn: sqlite3.Connection, doc_ids: Sequence[str]) -> int:
    """Delete documents with their text and chunks, inside the caller's transaction;
    the number of documents deleted."""
    deleted = 0
    for doc_id in dict.fromkeys(doc_ids):
        conn.execute("DELETE FROM chunks WHERE doc_id = ?", (doc_id,))
        conn.execute("DELETE FROM texts WHERE doc_id = ?", (doc_id,))
        deleted += conn.execute("DELETE FROM documents WHERE doc_id = ?", (doc_id,)).rowcount
    return deleted


def documents(conn: sqlite3.Connection, doc_ids: list[str] | None) -> list[StoredDocument]:
    if doc_ids is None:
        rows = conn.execute(f"SELECT {_DOC_COLUMNS} FROM documents ORDER BY seq").fetchall()
    else:
        rows = []
        for i in range(0, len(doc_ids), 500):  # SQLite caps bound parameters per statement
            part = doc_ids[i:i + 500]
            marks = ",".join("?" * len(part))
            rows += conn.execute(
                f"SELECT {_DOC_COLUMNS} FROM documents WHERE doc_id IN ({marks})", part
            ).fetchall()
        order = {d: i for i, d in enumerate(doc_ids)}
        rows.sort(key=lambda r: order[r["doc_id"]])
    return [_stored(row) for row in rows]


def _stored(row: sqlite3.Row) -> StoredDocument:
    values = dict(row)
    authors = values.pop("authors")
    return StoredDocument(**values, authors=tuple(json.loads(authors)) if authors else ())


def counts(conn: sqlite3.Connection) -> tuple[int, int]:
    """(documents, chunks), in one read."""
    row = conn.execute("SELECT (SELECT count(*) FROM documents),"
                       " (SELECT count(*) FROM chunks)").fetchone()
    return int(row[0]), int(row[1])


def chunk_rows(conn: sqlite3.Connection, rowids: list[int]) -> dict[int, sqlite3.Row]:
    marks = ",".join("?" * len(rowids))
    cursor = conn.execute(
        "SELECT c.id, c.doc_id, c.chunk_id, c.text, c.heading, c.page, c.kind, d.title"
        f" FROM chunks c JOIN documents d ON d.doc_id = c.doc_id WHERE c.id IN ({marks})",
        rowids,
    )
    return {int(row["id"]): row for row in cursor}


def vector_bytes(vectors: Vectors, positions: Sequence[int]) -> dict[int, bytes]:
    """Each embedded chunk's vector as float32 bytes, keyed by its position among the chunks."""
    rows = np.ascontiguousarray(vectors, dtype=np.float32)
    return {p: rows[i].tobytes() for i, p in enumerate(positions)}
