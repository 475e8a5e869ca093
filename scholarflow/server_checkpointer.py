"""The PostgreSQL checkpointer of LangGraph server, for `langgraph.postgres.json`.

`langgraph dev` (langgraph-api 0.16+) replaces its in-memory checkpoints with
the saver that `checkpointer.path` names; this is that saver, on the database
of `SCHOLARFLOW_DATABASE_URL` (the same tables the CLI writes, so the two can
share one database). The server enters `make_checkpointer()` once per event
loop at start-up and leaves it at shutdown. Threads, runs and assistants stay
in the server's own storage: only checkpoints come here.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver

from scholarflow.errors import BackendUnavailableError, ConfigurationError
from scholarflow.sessions.services import (
    DATABASE_URL_ENV,
    POSTGRES_SCHEMES,
    check_scheme,
    env_url,
    failed,
    redact_url,
    unreachable,
)

POOL_MAX_SIZE = 4  # AsyncPostgresSaver serialises its queries; the pool is for reconnecting
CONNECT_TIMEOUT_SECONDS = 10
# The first setup builds indexes CONCURRENTLY, which waits for every transaction already
# open in the database: a stuck one would hang the server's start without a word.
SETUP_TIMEOUT_SECONDS = 120.0
_EXAMPLE = "postgresql://postgres@127.0.0.1:5432/test"
# The same advisory lock as scholarflow.checkpoints: a CLI and a server starting together
# on a fresh database must not both run the migrations.
_SETUP_LOCK = int.from_bytes(hashlib.sha256(b"scholarflow:checkpoints").digest()[:8], "big",
                             signed=True)


def database_url() -> str:
    """SCHOLARFLOW_DATABASE_URL, checked; a ConfigurationError naming it when unset or wrong."""
    url = env_url(DATABASE_URL_ENV)
    if url is None:
        raise ConfigurationError(
            f"{DATABASE_URL_ENV} is not set: langgraph.postgres.json keeps checkpoints in "
            f"PostgreSQL; set it (e.g. {_EXAMPLE}) or serve langgraph.json instead"
        )
    return check_scheme(url, DATABASE_URL_ENV, POSTGRES_SCHEMES, _EXAMPLE)


@asynccontextmanager
async def make_checkpointer() -> AsyncIterator[BaseCheckpointSaver[str]]:
    """An AsyncPostgresSaver on a small connection pool, its tables created on first use.

    Raises ConfigurationError / BackendUnavailableError naming SCHOLARFLOW_DATABASE_URL
    when it is unset, not a PostgreSQL URL, or unreachable: the server then does not start.
    """
    # Imported here: only servers started with langgraph.postgres.json need the driver.
    import psycopg
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from psycopg.rows import dict_row
    from psycopg_pool import AsyncConnectionPool, PoolTimeout

    url = database_url()
    connect_args: dict[str, Any] = {"autocommit": True, "prepare_threshold": 0,
                                    "row_factory": dict_row,
                                    "connect_timeout": CONNECT_TIMEOUT_SECONDS}
    # One direct connection first: it fails fast with the driver's reason, where a pool
    # would retry quietly until its timeout. It also creates the tables.
    try:
        conn = await psycopg.AsyncConnection.connect(url, **connect_args)
    except psycopg.Error as exc:
        raise unreachable("PostgreSQL", DATABASE_URL_ENV, url, exc) from None
    try:
        async with conn, asyncio.timeout(SETUP_TIMEOUT_SECONDS):
            await _setup(conn, AsyncPostgresSaver(conn))
    except psycopg.Error as exc:
        raise failed("PostgreSQL", DATABASE_URL_ENV, url, exc) from None
    except TimeoutError:
        raise BackendUnavailableError(
            f"PostgreSQL at {DATABASE_URL_ENV} ({redact_url(url)}): creating the checkpoint "
            f"tables waited over {SETUP_TIMEOUT_SECONDS:.0f}s for transactions left open in "
            "that database; end them (see pg_stat_activity) and start again"
        ) from None

    pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
        url,
        min_size=1,
        max_size=POOL_MAX_SIZE,
        kwargs=connect_args,
        # A connection PostgreSQL dropped (restart, idle timeout) is replaced, not handed out.
        check=AsyncConnectionPool.check_connection,
        open=False,
        name="scholarflow-checkpoints",
    )
    try:
        await pool.open(wait=True, timeout=CONNECT_TIMEOUT_SECONDS)
    except PoolTimeout as exc:
        await pool.close()
        raise unreachable("PostgreSQL", DATABASE_URL_ENV, url, exc) from None
    try:
        yield AsyncPostgresSaver(pool)
    finally:
        await pool.close()


# Indexes of the checkpoint tables that an interrupted CREATE INDEX CONCURRENTLY left
# invalid. The migration that made one is recorded as done ("IF NOT EXISTS" skips it
# next time), so nothing else would ever rebuild it.
_INVALID_INDEXES = """
SELECT format('%I.%I', n.nspname, ic.relname)
FROM pg_index i
JOIN pg_class ic ON ic.oid = i.indexrelid
JOIN pg_class t ON t.oid = i.indrelid
JOIN pg_namespace n ON n.oid = t.relnamespace
WHERE NOT i.indisvalid AND pg_table_is_visible(t.oid)
  AND t.relname IN ('checkpoints', 'checkpoint_blobs', 'checkpoint_writes')
"""


async def _setup(conn: Any, saver: Any) -> None:
    """Create or migrate the checkpoint tables under the shared advisory lock."""
    await conn.execute("SELECT pg_advisory_lock(%s)", (_SETUP_LOCK,))
    try:
        await saver.setup()
        invalid = await (await conn.execute(_INVALID_INDEXES)).fetchall()
        for row in invalid:
            name = next(iter(row.values()))
            await conn.execute(f"REINDEX INDEX CONCURRENTLY {name}")
    finally:
        await conn.execute("SELECT pg_advisory_unlock(%s)", (_SETUP_LOCK,))
