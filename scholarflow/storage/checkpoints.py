"""LangGraph checkpointers for the CLI: SQLite by default, PostgreSQL at scale.

`open_checkpointer()` yields an AsyncSqliteSaver on
`$SCHOLARFLOW_HOME/checkpoints.sqlite`, or an AsyncPostgresSaver when
`SCHOLARFLOW_DATABASE_URL` is set. A thread is one session: its thread id is
the session id (`thread_config`), its conversation the state's `messages`;
`latest_checkpoints` finds every thread and `delete_thread` removes one. The
graph served by langgraph.json has no checkpointer of ours:
LangGraph server brings its own (or scholarflow.storage.server_checkpointer's, which
shares `prepare_postgres` with the CLI).
"""

from __future__ import annotations

import asyncio
import hashlib
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver

from scholarflow.errors import BackendUnavailableError
from scholarflow.extras import require
from scholarflow.settings import get_settings
from scholarflow.storage.paths import home_dir
from scholarflow.storage.postgres_db import connect, saver_settings
from scholarflow.storage.services import (
    DATABASE_URL_ENV,
    POSTGRES_SCHEMES,
    check_scheme,
    failed,
)
from scholarflow.storage.sqlite import DAMAGED_CODES, damaged_file
from scholarflow.url_secrets import redact_url

if TYPE_CHECKING:
    import psycopg
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

CHECKPOINTS_FILENAME = "checkpoints.sqlite"
# Several CLI processes may write one file at once; wait for the lock rather than fail.
SQLITE_BUSY_TIMEOUT_SECONDS = 30.0
CONNECT_TIMEOUT_SECONDS = 10
SETUP_LOCK_TIMEOUT_SECONDS = 30
_SETUP_POLL_SECONDS = 0.05
# One key for every process that sets the tables up (CLIs and servers).
_SETUP_LOCK = int.from_bytes(hashlib.sha256(b"scholarflow:checkpoints").digest()[:8], "big",
                             signed=True)
_POSTGRES_EXAMPLE = "postgresql://postgres@127.0.0.1:5432/test"

# URLs whose checkpoint tables this process has already created or migrated.
_set_up: set[str] = set()


def thread_config(session_id: str) -> RunnableConfig:
    """The run configuration of a session's thread."""
    return {"configurable": {"thread_id": session_id}}


def checkpoints_path() -> Path:
    """The SQLite file of the checkpoints (the data folder is created when missing)."""
    return home_dir() / CHECKPOINTS_FILENAME


@asynccontextmanager
async def open_checkpointer() -> AsyncIterator[BaseCheckpointSaver[str]]:
    """The configured checkpointer, open for the duration of the block.

    Raises BackendUnavailableError naming SCHOLARFLOW_DATABASE_URL when the
    PostgreSQL it names cannot be reached.
    """
    url = get_settings().database_url
    if url is None:
        async with _sqlite_saver() as saver:
            yield saver
    else:
        require("postgres", DATABASE_URL_ENV)
        async with _postgres_saver(check_scheme(url, DATABASE_URL_ENV, POSTGRES_SCHEMES,
                                                _POSTGRES_EXAMPLE)) as pg_saver:
            yield pg_saver


@asynccontextmanager
async def _sqlite_saver() -> AsyncIterator[BaseCheckpointSaver[str]]:
    import aiosqlite
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    path = await asyncio.to_thread(checkpoints_path)
    async with aiosqlite.connect(path, timeout=SQLITE_BUSY_TIMEOUT_SECONDS) as conn:
        saver = AsyncSqliteSaver(conn)
        try:  # its tables (WAL mode), now: a damaged file is one line here, not mid-run
            await saver.setup()
        except sqlite3.DatabaseError as exc:
            if getattr(exc, "sqlite_errorcode", None) not in DAMAGED_CODES:
                raise
            raise damaged_file(path, exc, "; its sessions stay in the moved file, for "
                                          f"`sqlite3 {path}.damaged .recover`") from None
        yield saver


@asynccontextmanager
async def _postgres_saver(url: str) -> AsyncIterator[BaseCheckpointSaver[str]]:
    # Imported here: only deployments with SCHOLARFLOW_DATABASE_URL need the driver.
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

    # One connection, as AsyncPostgresSaver.from_conn_string would open it.
    conn = await connect(url, connect_timeout=CONNECT_TIMEOUT_SECONDS, **saver_settings())
    async with conn:
        saver = AsyncPostgresSaver(conn)
        await prepare_postgres(conn, saver, url, SETUP_LOCK_TIMEOUT_SECONDS)
        yield saver


async def latest_checkpoints(saver: BaseCheckpointSaver[str]) -> list[tuple[str, str]]:
    """(thread id, id of its latest checkpoint) for every thread, newest first.

    Plain SQL over the checkpoints table: listing hundreds of sessions must not
    deserialise every checkpoint (checkpoint ids are uuid6: they sort by time).
    """
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    sql = ("SELECT thread_id, max(checkpoint_id) AS latest FROM checkpoints "
           "WHERE checkpoint_ns = '' GROUP BY thread_id ORDER BY latest DESC")
    if isinstance(saver, AsyncSqliteSaver):
        async with saver.conn.execute(sql) as cursor:
            return [(str(t), str(c)) async for t, c in cursor]
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

    if isinstance(saver, AsyncPostgresSaver):
        conn = cast("psycopg.AsyncConnection[Any]", saver.conn)  # dict_row (from_conn_string)
        rows = await (await conn.execute(sql)).fetchall()
        return [(str(r["thread_id"]), str(r["latest"])) for r in rows]
    raise TypeError(f"cannot list the threads of a {type(saver).__name__}")


async def delete_thread(saver: BaseCheckpointSaver[str], thread_id: str) -> None:
    """Delete every checkpoint and pending write of the thread.

    With SQLite the deleted rows are also wiped from the file and its WAL: a
    deleted conversation must not stay readable on disk.
    """
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    if not isinstance(saver, AsyncSqliteSaver):
        await saver.adelete_thread(thread_id)
        return
    await saver.conn.execute("PRAGMA secure_delete = ON")  # zero what DELETE frees
    await saver.adelete_thread(thread_id)
    # The WAL still holds the old pages until a checkpoint copies and truncates it.
    await saver.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


async def prepare_postgres(conn: psycopg.AsyncConnection[Any], saver: AsyncPostgresSaver,
                           url: str, timeout_seconds: float) -> None:
    """Create or migrate the checkpoint tables once per process and URL; shared by the CLI
    and the server's checkpointer (`conn`: an autocommit, dict_row connection).

    Raises BackendUnavailableError naming SCHOLARFLOW_DATABASE_URL when PostgreSQL
    fails, or when setup waited over `timeout_seconds` for a lock.
    """
    import psycopg

    if url in _set_up:
        return
    try:
        if not await _up_to_date(conn, saver):
            await _setup_once(conn, saver, timeout_seconds)
    except psycopg.errors.LockNotAvailable:
        raise BackendUnavailableError(
            f"PostgreSQL at {DATABASE_URL_ENV} ({redact_url(url)}): creating the checkpoint "
            f"tables waited over {timeout_seconds:g}s for transactions left open in that "
            "database (or another process creating them); end those (see pg_stat_activity) "
            "and try again"
        ) from None
    except psycopg.Error as exc:
        raise failed("PostgreSQL", DATABASE_URL_ENV, url, exc) from None
    _set_up.add(url)


async def _up_to_date(conn: psycopg.AsyncConnection[Any], saver: AsyncPostgresSaver) -> bool:
    """Whether every migration is applied already: then there is nothing to lock or wait for."""
    found = await (await conn.execute(
        "SELECT to_regclass('checkpoint_migrations') IS NOT NULL AS present")).fetchone()
    if not found or not found["present"]:
        return False
    latest = await (await conn.execute("SELECT max(v) AS v FROM checkpoint_migrations")).fetchone()
    return latest is not None and latest["v"] == len(saver.MIGRATIONS) - 1


async def _setup_once(conn: psycopg.AsyncConnection[Any], saver: AsyncPostgresSaver,
                      timeout_seconds: float) -> None:
    """Create or migrate the checkpoint tables, one process at a time, never hanging.

    `setup()` is not safe to race: two processes starting on a fresh database
    would both insert the same migration row, so a session-level advisory lock
    (the CLI's and the server's: the same key) serialises them. Its
    CREATE INDEX CONCURRENTLY waits for every open transaction in the
    database; `lock_timeout` turns a forgotten one into an error, not a hang.
    """
    import psycopg

    await conn.execute(f"SET lock_timeout = '{int(timeout_seconds * 1000)}ms'")
    try:
        if not await _advisory_lock(conn, timeout_seconds):
            raise psycopg.errors.LockNotAvailable("the setup lock is held")
        try:
            if not await _up_to_date(conn, saver):  # the process we waited for did it
                await _drop_invalid_indexes(conn)
                await saver.setup()
        finally:
            await conn.execute("SELECT pg_advisory_unlock(%s)", (_SETUP_LOCK,))
    finally:
        await conn.execute("RESET lock_timeout")


async def _advisory_lock(conn: psycopg.AsyncConnection[Any], timeout_seconds: float) -> bool:
    """Take the setup lock within `timeout_seconds`. Polled: a statement blocked in
    pg_advisory_lock is an open transaction, which the holder's CREATE INDEX
    CONCURRENTLY would wait for while we wait for it (a deadlock PostgreSQL breaks
    by failing one of the two)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_seconds
    while True:
        row = await (await conn.execute("SELECT pg_try_advisory_lock(%s) AS taken",
                                        (_SETUP_LOCK,))).fetchone()
        if row is not None and row["taken"]:
            return True
        if loop.time() >= deadline:
            return False
        await asyncio.sleep(_SETUP_POLL_SECONDS)


async def _drop_invalid_indexes(conn: psycopg.AsyncConnection[Any]) -> None:
    """Drop what a timed-out CREATE INDEX CONCURRENTLY left behind.

    The index stays, marked invalid, and the migration's IF NOT EXISTS would
    then skip it for good; dropped, the migration builds it again.
    """
    rows = await (await conn.execute(
        "SELECT quote_ident(n.nspname) || '.' || quote_ident(c.relname) AS name "
        "FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
        "JOIN pg_class t ON t.oid = i.indrelid JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE NOT i.indisvalid AND pg_table_is_visible(t.oid) "
        "AND t.relname IN ('checkpoints', 'checkpoint_blobs', 'checkpoint_writes')"
    )).fetchall()
    for row in rows:
        await conn.execute(f"DROP INDEX IF EXISTS {row['name']}")  # quoted by quote_ident
