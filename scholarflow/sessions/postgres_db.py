"""A lazily opened psycopg 3 connection pool, for the PostgreSQL summary cache.

psycopg is imported when the pool first opens, so configurations without
PostgreSQL never load it.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from scholarflow.sessions.services import (
    DATABASE_URL_ENV,
    POSTGRES_SCHEMES,
    check_scheme,
    failed,
    unreachable,
)

if TYPE_CHECKING:
    from psycopg import AsyncConnection
    from psycopg_pool import AsyncConnectionPool

CONNECT_TIMEOUT_SECONDS = 5
DEFAULT_POOL_SIZE = 10
_SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")


class PostgresDatabase:
    """A lazily opened connection pool to one PostgreSQL database.

    `schema` (optional) puts the tables in that schema, created on demand;
    else they go where the connection's search_path says. A pool belongs to
    the event loop that opened it, so a call from another loop (a later
    `asyncio.run`) opens a new pool.
    """

    def __init__(
        self,
        url: str,
        *,
        schema: str | None = None,
        env_name: str = DATABASE_URL_ENV,
        max_size: int = DEFAULT_POOL_SIZE,
        connect_timeout: int = CONNECT_TIMEOUT_SECONDS,
    ) -> None:
        self.env_name = env_name
        self.url = check_scheme(url, env_name, POSTGRES_SCHEMES, "postgresql://user@host:5432/db")
        if schema is not None and not _SCHEMA_NAME.fullmatch(schema):
            raise ValueError(f"a schema name is lower-case letters, digits and _, not {schema!r}")
        self.schema = schema
        self._max_size = max_size
        self._connect_timeout = connect_timeout
        self._pool: AsyncConnectionPool[AsyncConnection[tuple[Any, ...]]] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._open_lock = asyncio.Lock()
        self._ddl_lock = asyncio.Lock()
        self._ready: set[str] = set()

    def table(self, name: str) -> str:
        return f'"{self.schema}".{name}' if self.schema else name

    def _for_this_loop(self) -> None:
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            # The old pool's workers live in the old loop: it cannot be used, or closed, here.
            self._loop, self._pool = loop, None
            self._open_lock, self._ddl_lock = asyncio.Lock(), asyncio.Lock()

    async def _open(self) -> AsyncConnectionPool[AsyncConnection[tuple[Any, ...]]]:
        self._for_this_loop()
        async with self._open_lock:
            if self._pool is None:
                self._pool = await self._new_pool()
            return self._pool

    async def _new_pool(self) -> AsyncConnectionPool[AsyncConnection[tuple[Any, ...]]]:
        from psycopg import AsyncConnection
        from psycopg import Error as PsycopgError
        from psycopg_pool import AsyncConnectionPool

        # One direct connection first: its error says why (refused, unknown
        # database, bad password), where the pool would only time out. Any
        # psycopg error: a malformed URL is a ProgrammingError, not an OperationalError.
        try:
            probe = await AsyncConnection.connect(self.url, connect_timeout=self._connect_timeout)
        except PsycopgError as exc:
            raise unreachable("PostgreSQL", self.env_name, self.url, exc) from None
        await probe.close()
        pool: AsyncConnectionPool[AsyncConnection[tuple[Any, ...]]] = AsyncConnectionPool(
            self.url, min_size=1, max_size=self._max_size, open=False, name="scholarflow",
            kwargs={"connect_timeout": self._connect_timeout},
            # A connection broken by a server restart is replaced, not handed out.
            check=AsyncConnectionPool.check_connection,
        )
        try:
            await pool.open(wait=True, timeout=self._connect_timeout)
        except PsycopgError as exc:
            await pool.close()
            raise unreachable("PostgreSQL", self.env_name, self.url, exc) from None
        return pool

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[AsyncConnection[tuple[Any, ...]]]:
        """A pooled connection; the block is one transaction (committed unless it raises).

        A lost server or an exhausted pool becomes BackendUnavailableError;
        errors of a working connection (a bad statement) stay what they are.
        """
        from psycopg import OperationalError
        from psycopg_pool import PoolTimeout

        pool = await self._open()
        used: AsyncConnection[tuple[Any, ...]] | None = None
        try:
            async with pool.connection() as conn:
                used = conn
                yield conn
        except OperationalError as exc:
            if used is None or used.broken or used.closed or isinstance(exc, PoolTimeout):
                raise failed("PostgreSQL", self.env_name, self.url, exc) from exc
            raise

    async def _exists(self, relation: str) -> bool:
        async with self.connection() as conn:
            cur = await conn.execute("SELECT to_regclass(%s) IS NOT NULL", (relation,))
            row = await cur.fetchone()
        return bool(row and row[0])

    async def ensure(self, name: str, statements: Sequence[str], last: str) -> None:
        """Run `statements` (CREATE ... IF NOT EXISTS) unless `last`, the relation
        they create last, exists already; checked once per process for `name`."""
        if name in self._ready:
            return
        await self._open()
        async with self._ddl_lock:
            if name in self._ready:
                return
            # Skipped when present: CREATE INDEX IF NOT EXISTS still takes a SHARE lock on
            # its table, which deadlocks with writers of another process.
            if not await self._exists(self.table(last)):
                async with self.connection() as conn:
                    # Concurrent CREATE TABLE IF NOT EXISTS can still collide in the catalog.
                    await conn.execute(
                        "SELECT pg_advisory_xact_lock(hashtext(%s))",
                        (f"scholarflow-schema:{self.schema or ''}",),
                    )
                    if self.schema:
                        await conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{self.schema}"')
                    for statement in statements:
                        await conn.execute(statement)
            self._ready.add(name)

    async def check(self) -> None:
        """Connect now: BackendUnavailableError when the server cannot be reached."""
        async with self.connection() as conn:
            await conn.execute("SELECT 1")

    async def close(self) -> None:
        """Close the pool if this loop opened it; a later call opens a new one."""
        pool, self._pool = self._pool, None
        if pool is not None and self._loop is asyncio.get_running_loop():
            await pool.close()
