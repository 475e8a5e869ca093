"""The embedded session store: one SQLite file, used from worker threads.

sqlite3 is blocking, so every call runs in `asyncio.to_thread`. One
connection per store, serialised by a `threading.Lock` rather than an
asyncio lock: the lock must work from worker threads and from any event loop
(LangGraph server and the CLI may use different loops with one store). WAL
lets readers in other processes proceed while one writer writes, and
busy_timeout makes writers from other processes wait instead of failing.

Order: message ids come from AUTOINCREMENT (never reused), and each message
has a `position` used for ordering. A USER or ASSISTANT message's position is
its id; a COMPRESSION summary takes the position of the first message that
stays active, and ties sort by id descending, so the summary (the newer row)
comes right before the messages it did not replace.
"""

from __future__ import annotations

import asyncio
import builtins
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from scholarflow.errors import CorruptDataError
from scholarflow.sessions.models import Message, MessageType, SessionInfo, make_title
from scholarflow.sessions.paths import ensure_folder
from scholarflow.sessions.store import (
    ClosesOnExit,
    CompressionConflictError,
    SessionNotFoundError,
    check_compression,
    check_new_message,
    check_session_id,
)
from scholarflow.tokens import count_message_tokens

T = TypeVar("T")

# Error codes of a file that is not a database or whose pages are damaged.
DAMAGED_CODES = {sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CORRUPT}

BUSY_TIMEOUT_MS = 10_000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    session_id TEXT PRIMARY KEY,
    title TEXT NOT NULL DEFAULT '',
    total_token_count INTEGER NOT NULL DEFAULT 0,
    message_count INTEGER NOT NULL DEFAULT 0,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS sessions_by_updated ON sessions (updated_at);
CREATE TABLE IF NOT EXISTS session_messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES sessions (session_id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    type TEXT NOT NULL,
    content TEXT NOT NULL,
    token_count INTEGER NOT NULL,
    created_at REAL NOT NULL,
    compressed INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS session_messages_by_position
    ON session_messages (session_id, position, id);
"""

_MESSAGE_COLUMNS = "id, session_id, type, content, token_count, created_at, compressed"
_ORDER = "ORDER BY position, id DESC"


class SqliteDatabase:
    """One lazily opened connection to a SQLite file, shared by worker threads under a lock.

    The schema is created when the connection opens. Also used by the summary cache.
    """

    def __init__(self, path: Path, schema: str, *, remedy: str = "") -> None:
        self.path = Path(path)
        self._schema = schema
        self._remedy = remedy  # what else to do once the damaged file is moved aside
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None

    async def run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run `fn` with the connection in a worker thread."""
        return await asyncio.to_thread(self.locked, fn)

    def locked(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run `fn` with the connection in this thread; call only from a worker thread."""
        with self._lock:
            try:
                return fn(self._connection())
            except sqlite3.DatabaseError as exc:
                if getattr(exc, "sqlite_errorcode", None) not in DAMAGED_CODES:
                    raise
                raise damaged_file(self.path, exc, self._remedy) from None

    async def close(self) -> None:
        await asyncio.to_thread(self._close)

    def _close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            ensure_folder(self.path.parent)
            # isolation_level=None: transactions are explicit (see `transaction`).
            conn = sqlite3.connect(
                self.path,
                timeout=BUSY_TIMEOUT_MS / 1000,
                isolation_level=None,
                check_same_thread=False,  # the lock, not the thread, guards the connection
            )
            try:
                conn.row_factory = sqlite3.Row
                conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute("PRAGMA synchronous = NORMAL")  # durable enough under WAL
                conn.execute("PRAGMA foreign_keys = ON")
                # A deleted session's text is zeroed in the file, not left in free pages.
                conn.execute("PRAGMA secure_delete = ON")
                conn.executescript(self._schema)
            except BaseException:
                conn.close()
                raise
            self._conn = conn
        return self._conn


def damaged_file(path: Path, exc: BaseException, remedy: str = "") -> CorruptDataError:
    """The error for a SQLite file that cannot be read: which file, and how to go on
    without deleting it (it may be recovered: `sqlite3 FILE .recover`)."""
    reason = " ".join(str(exc).split()) or type(exc).__name__
    return CorruptDataError(
        f"{path} is damaged or not a SQLite database ({reason}): move it aside (e.g. mv "
        f"'{path}' '{path}.damaged') and run again (a new one is started){remedy}")


@contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """A write transaction; IMMEDIATE takes the write lock up front, so a
    concurrent writer in another process waits (busy_timeout) instead of
    failing halfway on a lock upgrade."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def _session(row: sqlite3.Row) -> SessionInfo:
    return SessionInfo(
        session_id=row["session_id"],
        title=row["title"],
        total_token_count=row["total_token_count"],
        message_count=row["message_count"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )


def _message(row: sqlite3.Row) -> Message:
    return Message(
        id=row["id"],
        session_id=row["session_id"],
        type=MessageType(row["type"]),
        content=row["content"],
        token_count=row["token_count"],
        created_at=row["created_at"],
        compressed=bool(row["compressed"]),
    )


def _session_row(conn: sqlite3.Connection, session_id: str) -> sqlite3.Row:
    row: sqlite3.Row | None = conn.execute(
        "SELECT * FROM sessions WHERE session_id = ?", (session_id,)
    ).fetchone()
    if row is None:
        raise SessionNotFoundError(session_id)
    return row


class SqliteSessionStore(ClosesOnExit):
    """SessionStore on a SQLite file; it can share the file with SqliteSummaryCache."""

    def __init__(self, path: Path) -> None:
        self._db = SqliteDatabase(path, _SCHEMA)

    @property
    def path(self) -> Path:
        return self._db.path

    async def close(self) -> None:
        """Close the connection; a later call opens a new one."""
        await self._db.close()

    async def create(self, session_id: str | None = None) -> SessionInfo:
        sid = uuid.uuid4().hex if session_id is None else check_session_id(session_id)

        def work(conn: sqlite3.Connection) -> SessionInfo:
            now = time.time()
            with transaction(conn):
                conn.execute(
                    "INSERT INTO sessions (session_id, created_at, updated_at) VALUES (?, ?, ?)"
                    " ON CONFLICT (session_id) DO NOTHING",
                    (sid, now, now),
                )
                return _session(_session_row(conn, sid))

        return await self._db.run(work)

    async def get(self, session_id: str) -> SessionInfo | None:
        def work(conn: sqlite3.Connection) -> SessionInfo | None:
            row = conn.execute(
                "SELECT * FROM sessions WHERE session_id = ?", (session_id,)
            ).fetchone()
            return None if row is None else _session(row)

        return await self._db.run(work)

    async def list(self) -> builtins.list[SessionInfo]:
        def work(conn: sqlite3.Connection) -> builtins.list[SessionInfo]:
            rows = conn.execute(
                "SELECT * FROM sessions ORDER BY updated_at DESC, created_at DESC, session_id"
            ).fetchall()
            return [_session(r) for r in rows]

        return await self._db.run(work)

    async def delete(self, session_id: str) -> bool:
        def work(conn: sqlite3.Connection) -> bool:
            with transaction(conn):
                # Explicit, so deleting does not depend on the foreign_keys pragma.
                conn.execute("DELETE FROM session_messages WHERE session_id = ?", (session_id,))
                cur = conn.execute("DELETE FROM sessions WHERE session_id = ?", (session_id,))
            # The WAL still holds the pages as they were before; copy back and empty it.
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            return cur.rowcount > 0

        return await self._db.run(work)

    async def add_message(self, session_id: str, type: MessageType, content: str) -> Message:
        kind = check_new_message(type, content)

        def insert(conn: sqlite3.Connection, tokens: int) -> Message:
            with transaction(conn):
                session = _session_row(conn, session_id)
                # Never earlier than the last update, so created_at <= updated_at
                # holds even if the wall clock steps back.
                now = max(time.time(), session["updated_at"])
                cur = conn.execute(
                    "INSERT INTO session_messages"
                    " (session_id, position, type, content, token_count, created_at, compressed)"
                    " VALUES (?, 0, ?, ?, ?, ?, 0)",
                    (session_id, kind.value, content, tokens, now),
                )
                message_id = cur.lastrowid
                assert message_id is not None
                conn.execute(
                    "UPDATE session_messages SET position = id WHERE id = ?", (message_id,)
                )
                title = session["title"]
                if not title and kind is MessageType.USER:
                    title = make_title(content)
                conn.execute(
                    "UPDATE sessions SET total_token_count = total_token_count + ?,"
                    " message_count = message_count + 1, updated_at = ?, title = ?"
                    " WHERE session_id = ?",
                    (tokens, now, title, session_id),
                )
            return Message(message_id, session_id, kind, content, tokens, now, False)

        def work() -> Message:
            # Tokenise before taking the lock: it can be slow and needs no connection.
            tokens = count_message_tokens([content])
            return self._db.locked(lambda conn: insert(conn, tokens))

        return await asyncio.to_thread(work)

    async def messages(
        self, session_id: str, *, active_only: bool = False
    ) -> builtins.list[Message]:
        where = "session_id = ?" + (" AND compressed = 0" if active_only else "")

        def work(conn: sqlite3.Connection) -> builtins.list[Message]:
            _session_row(conn, session_id)
            rows = conn.execute(
                f"SELECT {_MESSAGE_COLUMNS} FROM session_messages WHERE {where} {_ORDER}",
                (session_id,),
            ).fetchall()
            return [_message(r) for r in rows]

        return await self._db.run(work)

    async def compress(
        self, session_id: str, message_ids: Sequence[int], summary: str
    ) -> Message:
        ids = check_compression(message_ids, summary)

        def replace(conn: sqlite3.Connection, tokens: int) -> Message:
            with transaction(conn):
                session = _session_row(conn, session_id)
                active = conn.execute(
                    "SELECT id, position, created_at FROM session_messages"
                    " WHERE session_id = ? AND compressed = 0",
                    (session_id,),
                ).fetchall()
                unknown = ids - {r["id"] for r in active}
                if unknown:
                    raise CompressionConflictError(
                        f"messages {sorted(unknown)} are not active messages of session "
                        f"{session_id!r}; nothing was compressed"
                    )
                replaced = [r for r in active if r["id"] in ids]
                kept = [r for r in active if r["id"] not in ids]
                now = max(time.time(), session["updated_at"])
                # The summary stands for the conversation up to its newest original,
                # so its created_at agrees with its position.
                created_at = max(r["created_at"] for r in replaced)
                conn.executemany(
                    "UPDATE session_messages SET compressed = 1 WHERE id = ?",
                    [(r["id"],) for r in replaced],
                )
                cur = conn.execute(
                    "INSERT INTO session_messages"
                    " (session_id, position, type, content, token_count, created_at, compressed)"
                    " VALUES (?, 0, ?, ?, ?, ?, 0)",
                    (session_id, MessageType.COMPRESSION.value, summary, tokens, created_at),
                )
                message_id = cur.lastrowid
                assert message_id is not None
                if kept:
                    position = min(r["position"] for r in kept)
                    conn.execute(
                        "UPDATE session_messages SET position = ? WHERE id = ?",
                        (position, message_id),
                    )
                else:
                    conn.execute(
                        "UPDATE session_messages SET position = id WHERE id = ?", (message_id,)
                    )
                total = conn.execute(
                    "SELECT COALESCE(SUM(token_count), 0) FROM session_messages"
                    " WHERE session_id = ? AND compressed = 0",
                    (session_id,),
                ).fetchone()[0]
                conn.execute(
                    "UPDATE sessions SET total_token_count = ?,"
                    " message_count = message_count + 1, updated_at = ? WHERE session_id = ?",
                    (total, now, session_id),
                )
            return Message(
                message_id, session_id, MessageType.COMPRESSION, summary, tokens, created_at, False
            )

        def work() -> Message:
            tokens = count_message_tokens([summary])
            return self._db.locked(lambda conn: replace(conn, tokens))

        return await asyncio.to_thread(work)
