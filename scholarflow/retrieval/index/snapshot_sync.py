"""Bringing a knowledge base's search arrays (`Snapshot`) up to date with its SQLite file."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

from scholarflow.retrieval.index.snapshot import ChunkRow, Snapshot
from scholarflow.storage.sqlite import SqliteDatabase

ROW_BATCH = 4096  # chunks read from SQLite at a time


def synced(
    db: SqliteDatabase, path: Path, snapshot: Snapshot | None, *, embedder: str, dim: int
) -> Snapshot:
    """`snapshot` (or the one saved at `path`) with every chunk row of `db` in it.

    Rows are only ever appended, so the rows past the snapshot's watermark
    are added; a row gone below it (or no usable snapshot) means starting over.
    Call from a worker thread, holding the knowledge base's search lock.
    """
    if snapshot is None:
        snapshot = Snapshot.load(path, embedder=embedder, dim=dim)
    count, last = snapshot.watermark if snapshot else (0, 0)
    total, after = db.locked(lambda conn: _counts(conn, last))
    if snapshot is None or total - after != count:
        if snapshot is not None:
            snapshot.wait_saved()  # its older file must not land after the new one
        snapshot, last, after = Snapshot(embedder=embedder, dim=dim), 0, total
    snapshot.reserve(after)
    fresh = snapshot
    db.locked(lambda conn: _read_rows_after(conn, last, fresh.extend))
    # Saved only when BM25 merged its segments (after ~1/8 growth): the rows
    # since are few, and a process loading the file re-reads them from SQLite.
    if snapshot.settle() or not (snapshot.saving or path.exists()):
        snapshot.save(path)
    return snapshot


def _counts(conn: sqlite3.Connection, last: int) -> tuple[int, int]:
    """(all chunk rows, rows past rowid `last`), in one read transaction.

    A plain count(*) scans the small chunk_id index; counting "id <= last"
    would read every row (~0.1 s at 100k chunks), and so would "id > 0".
    """
    if last == 0:
        total = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
        return total, total
    row = conn.execute("SELECT (SELECT count(*) FROM chunks),"
                       " (SELECT count(*) FROM chunks WHERE id > ?)", (last,)).fetchone()
    return int(row[0]), int(row[1])


def _read_rows_after(
    conn: sqlite3.Connection, last: int, sink: Callable[[list[ChunkRow]], None]
) -> None:
    """The chunks past rowid `last`, in order, handed to `sink` ROW_BATCH at a time.

    In batches, so a whole knowledge base's terms and vectors are never in
    memory as Python objects at once (100k chunks: ~3 GB).
    """
    cursor = conn.cursor()
    cursor.row_factory = None  # plain tuples
    cursor.execute(
        "SELECT id, doc_id, terms, vector, kind FROM chunks WHERE id > ? ORDER BY id", (last,)
    )
    while batch := cursor.fetchmany(ROW_BATCH):
        sink(list(map(ChunkRow._make, batch)))
