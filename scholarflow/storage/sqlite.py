"""SQLite files used from worker threads: the summary cache and the embedded document index.

sqlite3 is blocking, so every call runs in `asyncio.to_thread`. One
connection per database, serialised by a `threading.Lock` rather than an
asyncio lock: the lock must work from worker threads and from any event loop
(LangGraph server and the CLI may use different loops with one database). WAL
lets readers in other processes proceed while one writer writes, and
busy_timeout makes writers from other processes wait instead of failing.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from scholarflow.errors import CorruptDataError
from scholarflow.storage.paths import ensure_folder

T = TypeVar("T")

# Error codes of a file that is not a database or whose pages are damaged.
DAMAGED_CODES = {sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CORRUPT}

BUSY_TIMEOUT_MS = 10_000


class SqliteDatabase:
    """One lazily opened connection to a SQLite file, shared by worker threads under a lock.

    The schema is created when the connection opens.
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
                # Deleted rows are zeroed in the file, not left readable in free pages.
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
