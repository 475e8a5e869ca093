"""The summary cache in PostgreSQL: used when `SCHOLARFLOW_DATABASE_URL` is set without Redis.

Every server process then shares one cache, as they share the threads,
instead of each keeping its own SQLite file. Same semantics as
SqliteSummaryCache: expiry by an `expires_at` the reads compare with, an
overwrite renews it, and expired rows are purged now and then on writes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from scholarflow.storage.postgres_db import PostgresDatabase
from scholarflow.storage.summary_cache import (
    DEFAULT_TTL_SECONDS,
    PURGE_EVERY_WRITES,
    ClosesOnExit,
    check_ttl,
)

_DDL = (
    """CREATE TABLE IF NOT EXISTS {t} (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL,
        expires_at DOUBLE PRECISION NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS scholarflow_summary_cache_by_expiry ON {t} (expires_at)",
)


class PostgresSummaryCache(ClosesOnExit):
    """SummaryCache in a PostgreSQL table; `clock` (unix seconds) is injectable for tests."""

    def __init__(
        self,
        database: PostgresDatabase | str,
        *,
        schema: str | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if isinstance(database, str):
            database = PostgresDatabase(database, schema=schema)
        self.db = database
        self._t = database.table("scholarflow_summary_cache")
        self._ddl = [d.format(t=self._t) for d in _DDL]
        self._clock = clock
        self._writes = 0

    async def close(self) -> None:
        await self.db.close()

    async def check(self) -> None:
        """Connect and create the table now, so a bad URL fails before any work."""
        await self.db.ensure("summary_cache", self._ddl, "scholarflow_summary_cache_by_expiry")

    async def get_many(self, keys: Sequence[str]) -> dict[str, str]:
        unique = list(dict.fromkeys(keys))
        if not unique:
            return {}
        await self.check()
        async with self.db.connection() as conn:
            cur = await conn.execute(
                f"SELECT key, value FROM {self._t} WHERE key = ANY(%s) AND expires_at > %s",
                (unique, self._clock()),
            )
            rows = await cur.fetchall()
        return {key: value for key, value in rows}

    async def set(self, key: str, value: str, ttl_seconds: int = DEFAULT_TTL_SECONDS) -> None:
        check_ttl(ttl_seconds)
        now = self._clock()
        purge = self._writes % PURGE_EVERY_WRITES == 0
        self._writes += 1
        await self.check()
        async with self.db.connection() as conn:
            await conn.execute(
                f"INSERT INTO {self._t} (key, value, expires_at) VALUES (%s, %s, %s)"
                " ON CONFLICT (key) DO UPDATE"
                " SET value = excluded.value, expires_at = excluded.expires_at",
                (key, value.replace("\x00", "\ufffd"), now + ttl_seconds),
            )
            if purge:
                await conn.execute(f"DELETE FROM {self._t} WHERE expires_at <= %s", (now,))

    async def purge_expired(self) -> int:
        """Delete expired rows now; returns how many went."""
        await self.check()
        async with self.db.connection() as conn:
            cur = await conn.execute(
                f"DELETE FROM {self._t} WHERE expires_at <= %s", (self._clock(),)
            )
            return cur.rowcount
