"""What is particular to PostgreSQL: sessions (threads) in its checkpointer opened by many
at once on a fresh schema, and the summary cache's pool (lost connections, unreachable
servers, another event loop, a URL that is not PostgreSQL's).

`sessions list | show | delete` on PostgreSQL are in test_sessions.py; the cache's shared
contract (same as SQLite) in test_summary_cache.py.
"""

from __future__ import annotations

import asyncio

import psycopg
import pytest

from scholarflow import build_graph
from scholarflow.errors import BackendUnavailableError, ConfigurationError
from scholarflow.storage.checkpoints import latest_checkpoints, open_checkpointer, thread_config
from scholarflow.storage.postgres_cache import PostgresSummaryCache
from scholarflow.storage.postgres_db import PostgresDatabase
from tests.support import FakeOpenAIServer

SESSIONS = 10


async def test_sessions_started_at_once_on_a_fresh_schema_lose_nothing(
    fake_llm: FakeOpenAIServer, pg_schema_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Ten checkpointers (as ten processes: one connection each) race to create the tables,
    # then each runs one question in a session of its own.
    monkeypatch.setenv("SCHOLARFLOW_DATABASE_URL", pg_schema_url)

    async def one(n: int) -> None:
        async with open_checkpointer() as saver:
            graph = build_graph(checkpointer=saver)
            await graph.ainvoke({"query": f"hello {n}"}, thread_config(f"session-{n}"))

    await asyncio.gather(*(one(n) for n in range(SESSIONS)))
    async with open_checkpointer() as saver:
        threads = [t for t, _ in await latest_checkpoints(saver)]
        assert sorted(threads) == sorted(f"session-{n}" for n in range(SESSIONS))
        values = (await build_graph(checkpointer=saver).aget_state(
            thread_config("session-3"))).values
    assert [m.content for m in values["messages"]] == ["hello 3", "ok: hello 3"]
    assert values["session"]["message_count"] == 2


async def test_connections_killed_by_the_server_are_replaced(
    postgres_url: str, pg_schema: str
) -> None:
    database = PostgresDatabase(postgres_url, schema=pg_schema, max_size=1)
    async with PostgresSummaryCache(database) as cache:
        await cache.set("doc_summary:a:1", "before")
        async with database.connection() as conn:  # the pool's only connection
            pid = conn.info.backend_pid
        # An administrator (or a failover) ends it.
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            killed = admin.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone()
        assert killed == (True,)
        await cache.set("doc_summary:b:2", "after")
        assert await cache.get_many(["doc_summary:a:1", "doc_summary:b:2"]) == {
            "doc_summary:a:1": "before", "doc_summary:b:2": "after"}


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("postgresql://postgres:s3cret@127.0.0.1:1/test", "connection refused"),
        ("postgresql://postgres@127.0.0.1:5432/sf_no_such_database",
         'database "sf_no_such_database" does not exist'),
    ],
    ids=["refused", "no-database"],
)
async def test_unreachable_at_start_is_one_clear_error(url: str, reason: str) -> None:
    cache = PostgresSummaryCache(url)
    with pytest.raises(BackendUnavailableError) as info:
        await cache.get_many(["doc_summary:a:b"])
    await cache.close()
    shown = url.replace(":s3cret@", ":***@")
    assert str(info.value) == (
        f"cannot connect to PostgreSQL at SCHOLARFLOW_DATABASE_URL ({shown}): {reason}; "
        "check the URL in SCHOLARFLOW_DATABASE_URL and that PostgreSQL is running, or unset it"
    )


def test_a_url_that_is_not_postgresql_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="SCHOLARFLOW_DATABASE_URL must be a postgresql"):
        PostgresSummaryCache("mysql://root@127.0.0.1/test")
    with pytest.raises(ValueError):
        PostgresDatabase("postgresql://x@h/db", schema="Robert'); DROP TABLE x;--")


async def test_usable_from_another_event_loop(postgres_url: str, pg_schema: str) -> None:
    cache = PostgresSummaryCache(postgres_url, schema=pg_schema)
    await cache.set("doc_summary:here:1", "from this loop")

    def elsewhere() -> None:
        async def go() -> None:
            await cache.set("doc_summary:there:1", "from another loop")
            await cache.close()

        asyncio.run(go())

    await asyncio.to_thread(elsewhere)
    assert await cache.get_many(["doc_summary:there:1"]) == {
        "doc_summary:there:1": "from another loop"}
    await cache.close()
