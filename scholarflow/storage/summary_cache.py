"""The document-summary cache (docs/architecture.md#summary-cache).

Keys are `doc_summary:{doc_id}:{content_hash}` (`scholarflow.ingest.documents.content_hash`):
shared by every user, and a changed document gets a new key, so stale
summaries are never served; they simply expire (7 days by default). The
Protocol mirrors what Redis offers (MGET, SET EX) so a Redis cache can
implement it directly.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Protocol, Self, runtime_checkable

from scholarflow.storage.paths import database_path
from scholarflow.storage.sqlite import SqliteDatabase, transaction

DEFAULT_TTL_SECONDS = 7 * 24 * 3600
# Expired rows are deleted on the first write and then every this many writes;
# reads already ignore them, so purging is only about file size.
PURGE_EVERY_WRITES = 200
# Stay well under SQLite's limit on bound parameters per statement.
_MAX_KEYS_PER_QUERY = 500

_SCHEMA = """
CREATE TABLE IF NOT EXISTS summary_cache (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL,
    expires_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS summary_cache_by_expiry ON summary_cache (expires_at);
"""


def summary_cache_key(doc_id: str, content_hash: str) -> str:
    """`doc_summary:{doc_id}:{content_hash}`, the key every backend uses."""
    return f"doc_summary:{doc_id}:{content_hash}"


class ClosesOnExit:
    """`async with` for a cache backend: leaving the block closes it (subclasses define close)."""

    async def close(self) -> None:
        raise NotImplementedError

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()


@runtime_checkable
class SummaryCache(Protocol):
    async def get_many(self, keys: Sequence[str]) -> dict[str, str]:
        """The cached values of those keys that are present and unexpired."""
        ...

    async def set(self, key: str, value: str, ttl_seconds: int = DEFAULT_TTL_SECONDS) -> None:
        """Store or overwrite `key`, expiring after `ttl_seconds`."""
        ...

    async def close(self) -> None: ...


def check_ttl(ttl_seconds: int) -> None:
    """Every cache backend refuses an expiry that is already past."""
    if ttl_seconds <= 0:
        raise ValueError("ttl_seconds must be positive")


class SqliteSummaryCache(ClosesOnExit):
    """SummaryCache in a SQLite file (`<SCHOLARFLOW_HOME>/scholarflow.db` by default).

    `clock` (unix seconds) is injectable so tests can move time forward.
    """

    def __init__(self, path: Path, *, clock: Callable[[], float] = time.time) -> None:
        self._db = SqliteDatabase(path, _SCHEMA)
        self._clock = clock
        self._writes = 0

    @property
    def path(self) -> Path:
        return self._db.path

    async def close(self) -> None:
        """Close the connection; a later call opens a new one."""
        await self._db.close()

    async def get_many(self, keys: Sequence[str]) -> dict[str, str]:
        unique = list(dict.fromkeys(keys))
        if not unique:
            return {}
        now = self._clock()

        def work(conn: sqlite3.Connection) -> dict[str, str]:
            found: dict[str, str] = {}
            for start in range(0, len(unique), _MAX_KEYS_PER_QUERY):
                chunk = unique[start : start + _MAX_KEYS_PER_QUERY]
                marks = ", ".join("?" * len(chunk))
                rows = conn.execute(
                    f"SELECT key, value FROM summary_cache"
                    f" WHERE key IN ({marks}) AND expires_at > ?",
                    (*chunk, now),
                ).fetchall()
                found.update((r["key"], r["value"]) for r in rows)
            return found

        return await self._db.run(work)

    async def set(self, key: str, value: str, ttl_seconds: int = DEFAULT_TTL_SECONDS) -> None:
        check_ttl(ttl_seconds)
        now = self._clock()
        purge = self._writes % PURGE_EVERY_WRITES == 0
        self._writes += 1

        def work(conn: sqlite3.Connection) -> None:
            with transaction(conn):
                conn.execute(
                    "INSERT INTO summary_cache (key, value, expires_at) VALUES (?, ?, ?)"
                    " ON CONFLICT (key) DO UPDATE"
                    " SET value = excluded.value, expires_at = excluded.expires_at",
                    (key, value, now + ttl_seconds),
                )
                if purge:
                    conn.execute("DELETE FROM summary_cache WHERE expires_at <= ?", (now,))

        await self._db.run(work)

    async def purge_expired(self) -> int:
        """Delete expired rows now; returns how many went."""
        now = self._clock()

        def work(conn: sqlite3.Connection) -> int:
            with transaction(conn):
                return conn.execute(
                    "DELETE FROM summary_cache WHERE expires_at <= ?", (now,)
                ).rowcount

        return await self._db.run(work)


def default_summary_cache() -> SummaryCache:
    """A new SQLite cache on `<SCHOLARFLOW_HOME>/scholarflow.db`; the caller closes it."""
    return SqliteSummaryCache(database_path())
