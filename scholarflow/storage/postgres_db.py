"""psycopg 3 connections: the one place that opens them, and the summary cache's pool.

`connect` and `open_pool` open every PostgreSQL connection scholarflow makes
(the summary cache here, the CLI's and the server's checkpointers), so each
fails the same way: one BackendUnavailableError naming the variable, with the
driver's reason and no password. `saver_settings` are the connection settings
LangGraph's AsyncPostgresSaver needs. psycopg is imported when a connection
first opens, so configurations without PostgreSQL never load it.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from scholarflow.storage.services import (
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
        probe = await connect(self.url, env_name=self.env_name,
                              connect_timeout=self._connect_timeout)
        await probe.close()
        return await open_pool(self.url, env_name=self.env_name, name="scholarflow",
                               max_size=self._max_size, connect_timeout=self._connect_timeout)

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


def saver_settings() -> dict[str, Any]:
    """The connection settings LangGraph's AsyncPostgresSaver needs (those of its
    `from_conn_string`): autocommit, no server-side prepared statements, dict rows."""
    from psycopg.rows import dict_row

    return {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}


async def connect(
    url: str, *, env_name: str = DATABASE_URL_ENV,
    connect_timeout: int = CONNECT_TIMEOUT_SECONDS, **settings: Any,
) -> AsyncConnection[Any]:
    """One connection to `url` with psycopg's `settings`, or BackendUnavailableError
    naming `env_name` with the driver's reason (refused, unknown database, bad password).

    Opened first by every pool too: a pool would only time out, not say why.
    `connect_timeout` applies unless the URL sets its own.
    """
    from psycopg import AsyncConnection
    from psycopg import Error as PsycopgError

    # Any psycopg error: a malformed URL is a ProgrammingError, not an OperationalError.
    try:
        return await AsyncConnection.connect(_with_timeout(url, connect_timeout), **settings)
    except PsycopgError as exc:
        raise unreachable("PostgreSQL", env_name, url, exc) from None


async def open_pool(
    url: str, *, name: str, max_size: int, env_name: str = DATABASE_URL_ENV,
    connect_timeout: int = CONNECT_TIMEOUT_SECONDS, **settings: Any,
) -> AsyncConnectionPool[Any]:
    """An open pool (at least one connection, at most `max_size`) of connections made
    as `connect` makes them; BackendUnavailableError when none opens in time."""
    from psycopg import Error as PsycopgError
    from psycopg_pool import AsyncConnectionPool

    try:
        conninfo = _with_timeout(url, connect_timeout)
    except PsycopgError as exc:
        raise unreachable("PostgreSQL", env_name, url, exc) from None
    pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
        conninfo, min_size=1, max_size=max_size, open=False, name=name, kwargs=settings,
        # A connection broken by a server restart or an idle timeout is replaced, not handed out.
        check=AsyncConnectionPool.check_connection,
    )
    try:
        await pool.open(wait=True, timeout=connect_timeout)
    except PsycopgError as exc:  # PoolTimeout among them
        await pool.close()
        raise unreachable("PostgreSQL", env_name, url, exc) from None
    return pool


def _with_timeout(url: str, connect_timeout: int) -> str:
    """`url` with `connect_timeout` (a black-holed host fails, not hangs) unless it has one."""
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    if "connect_timeout" in conninfo_to_dict(url):
        return url
    return make_conninfo(url, connect_timeout=connect_timeout)
