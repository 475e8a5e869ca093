"""The PostgreSQL checkpointer of LangGraph server, for `langgraph.postgres.json`.

`langgraph dev` (langgraph-api 0.16+) replaces its in-memory checkpoints with
the saver that `checkpointer.path` names; this is that saver, on the database
of `SCHOLARFLOW_DATABASE_URL` (the same tables the CLI writes, so the two can
share one database). The server enters `make_checkpointer()` once per event
loop at start-up and leaves it at shutdown. Threads, runs and assistants stay
in the server's own storage: only checkpoints come here.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import cache
from typing import TYPE_CHECKING

from langgraph.checkpoint.base import BaseCheckpointSaver

from scholarflow.storage.checkpoints import prepare_postgres

if TYPE_CHECKING:
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from scholarflow.errors import ConfigurationError
from scholarflow.extras import require
from scholarflow.settings import get_settings
from scholarflow.storage.postgres_db import connect, open_pool, saver_settings
from scholarflow.storage.services import DATABASE_URL_ENV, POSTGRES_SCHEMES, check_scheme

POOL_MAX_SIZE = 4  # AsyncPostgresSaver serialises its queries; the pool is for reconnecting
CONNECT_TIMEOUT_SECONDS = 10
# The first setup builds indexes CONCURRENTLY, which waits for every transaction already
# open in the database: a stuck one must fail the start, not hang it. Longer than the
# CLI's: nobody is waiting at a terminal for a server to start.
SETUP_TIMEOUT_SECONDS = 120.0
_EXAMPLE = "postgresql://postgres@127.0.0.1:5432/test"


def database_url() -> str:
    """SCHOLARFLOW_DATABASE_URL, checked; a ConfigurationError naming it when unset or wrong."""
    url = get_settings().database_url
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
    require("postgres", "langgraph.postgres.json's checkpointer")
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

    url = database_url()
    settings = saver_settings()
    # One direct connection first: it fails fast with the driver's reason, where a pool
    # would retry quietly until its timeout. It also creates the tables.
    conn = await connect(url, connect_timeout=CONNECT_TIMEOUT_SECONDS, **settings)
    async with conn:
        await prepare_postgres(conn, AsyncPostgresSaver(conn), url, SETUP_TIMEOUT_SECONDS)
    pool = await open_pool(url, name="scholarflow-checkpoints", max_size=POOL_MAX_SIZE,
                           connect_timeout=CONNECT_TIMEOUT_SECONDS, **settings)
    try:
        yield _copying_saver()(pool)
    finally:
        await pool.close()


# The tables a thread lives in; `thread_id` is a column of each.
_THREAD_TABLES = ("checkpoints", "checkpoint_blobs", "checkpoint_writes")


@cache
def _copying_saver() -> type[AsyncPostgresSaver]:
    """AsyncPostgresSaver with `acopy_thread`, which LangGraph server's `threads.copy`
    calls and AsyncPostgresSaver lacks. Defined on first use: the driver is imported lazily."""
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

    class CopyingPostgresSaver(AsyncPostgresSaver):
        async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
            """Copy every checkpoint, blob and write of the thread, in one transaction:
            the whole parent chain, since `messages` (a DeltaChannel) is rebuilt from it."""
            async with self._cursor() as cur, cur.connection.transaction():
                for table in _THREAD_TABLES:
                    names = await (await cur.execute(
                        "SELECT column_name FROM information_schema.columns WHERE "
                        "table_name = %s AND table_schema = current_schema() "
                        "ORDER BY ordinal_position", (table,))).fetchall()
                    others = ", ".join(f'"{row["column_name"]}"' for row in names
                                       if row["column_name"] != "thread_id")
                    await cur.execute(  # the names come from the catalogue, quoted
                        f"INSERT INTO {table} (thread_id, {others}) "
                        f"SELECT %s, {others} FROM {table} WHERE thread_id = %s",
                        (str(target_thread_id), str(source_thread_id)))

    return CopyingPostgresSaver
