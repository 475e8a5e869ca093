"""What is particular to PostgreSQL: many writers in separate connections, first use
racing to create the schema, lost connections, unreachable servers, NUL characters.

The shared contract (same as SQLite) is in test_sessions.py and test_summary_cache.py.
"""

from __future__ import annotations

import asyncio
import random

import psycopg
import pytest

from scholarflow.errors import BackendUnavailableError, ConfigurationError
from scholarflow.sessions import (
    MessageType,
    PostgresDatabase,
    PostgresSessionStore,
    PostgresSummaryCache,
)

USER, ASSISTANT = MessageType.USER, MessageType.ASSISTANT
WRITERS = 20
PER_WRITER = 5


async def test_twenty_writers_racing_from_first_use_lose_nothing(
    postgres_url: str, pg_schema: str
) -> None:
    # Twenty stores, each with its own pool (as twenty processes), start at once on a
    # schema that does not exist yet: they race to create it, then to write one session.
    stores = [PostgresSessionStore(PostgresDatabase(postgres_url, schema=pg_schema, max_size=2))
              for _ in range(WRITERS)]
    try:
        await asyncio.gather(*(s.create("shared") for s in stores))

        async def writer(n: int, store: PostgresSessionStore) -> list[str]:
            sent = []
            for i in range(PER_WRITER):
                content = f"writer {n} message {i} " + "words " * random.randint(0, 40)
                await store.add_message("shared", USER if i % 2 == 0 else ASSISTANT, content)
                sent.append(content)
            return sent

        sent = await asyncio.gather(*(writer(n, s) for n, s in enumerate(stores)))
        stored = await stores[0].messages("shared")
        assert len(stored) == WRITERS * PER_WRITER
        assert sorted(m.content for m in stored) == sorted(c for batch in sent for c in batch)
        assert len({m.id for m in stored}) == len(stored)
        # One order: by id, which is also the order of created_at.
        assert [m.id for m in stored] == sorted(m.id for m in stored)
        assert [m.created_at for m in stored] == sorted(m.created_at for m in stored)
        info = await stores[-1].get("shared")
        assert info is not None
        assert info.message_count == WRITERS * PER_WRITER
        assert info.total_token_count == sum(m.token_count for m in stored)
        assert info.updated_at == stored[-1].created_at
        assert info.title.startswith("writer ")
    finally:
        for s in stores:
            await s.close()


async def test_compression_racing_with_writers_keeps_the_statistics(
    postgres_url: str, pg_schema: str
) -> None:
    stores = [PostgresSessionStore(postgres_url, schema=pg_schema) for _ in range(4)]
    try:
        sid = (await stores[0].create()).session_id
        first = [await stores[0].add_message(sid, USER, f"old {i}") for i in range(6)]
        await asyncio.gather(
            stores[1].compress(sid, [m.id for m in first[:4]], "summary of the old turns"),
            *(stores[2 + i % 2].add_message(sid, ASSISTANT, f"new {i}") for i in range(10)),
        )
        active = await stores[0].messages(sid, active_only=True)
        every = await stores[0].messages(sid)
        info = await stores[0].get(sid)
        assert info is not None
        assert info.total_token_count == sum(m.token_count for m in active)
        assert info.message_count == len(every) == 6 + 1 + 10
        assert active[0].type is MessageType.COMPRESSION
        assert sum(m.compressed for m in every) == 4
    finally:
        for s in stores:
            await s.close()


async def test_connections_killed_by_the_server_are_replaced(
    postgres_url: str, pg_schema: str
) -> None:
    database = PostgresDatabase(postgres_url, schema=pg_schema, max_size=1)
    async with PostgresSessionStore(database) as store:
        sid = (await store.create()).session_id
        await store.add_message(sid, USER, "before")
        async with database.connection() as conn:  # the pool's only connection
            pid = conn.info.backend_pid
        # An administrator (or a failover) ends it.
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            killed = admin.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone()
        assert killed == (True,)
        await store.add_message(sid, ASSISTANT, "after")
        assert [m.content for m in await store.messages(sid)] == ["before", "after"]


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
    store = PostgresSessionStore(url)
    with pytest.raises(BackendUnavailableError) as info:
        await store.create()
    shown = url.replace(":s3cret@", ":***@")
    assert str(info.value) == (
        f"cannot connect to PostgreSQL at SCHOLARFLOW_DATABASE_URL ({shown}): {reason}; "
        "check the URL in SCHOLARFLOW_DATABASE_URL and that PostgreSQL is running, or unset it"
    )
    with pytest.raises(BackendUnavailableError):
        await PostgresSummaryCache(url).get_many(["doc_summary:a:b"])
    await store.close()


def test_a_url_that_is_not_postgresql_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="SCHOLARFLOW_DATABASE_URL must be a postgresql"):
        PostgresSessionStore("mysql://root@127.0.0.1/test")
    with pytest.raises(ValueError):
        PostgresDatabase("postgresql://x@h/db", schema="Robert'); DROP TABLE x;--")


async def test_nul_characters(postgres_url: str, pg_schema: str) -> None:
    # PostgreSQL text cannot hold NUL: content keeps a visible mark, ids are refused.
    async with PostgresSessionStore(postgres_url, schema=pg_schema) as store:
        sid = (await store.create()).session_id
        m = await store.add_message(sid, USER, "a\x00b")
        assert m.content == "a\ufffdb"
        assert [x.content for x in await store.messages(sid)] == ["a\ufffdb"]
        with pytest.raises(ValueError):
            await store.create("bad\x00id")
        assert await store.get("bad\x00id") is None
        assert await store.delete("bad\x00id") is False


async def test_usable_from_another_event_loop(postgres_url: str, pg_schema: str) -> None:
    store = PostgresSessionStore(postgres_url, schema=pg_schema)
    sid = (await store.create()).session_id

    def elsewhere() -> None:
        async def go() -> None:
            await store.add_message(sid, USER, "from another loop")
            await store.close()

        asyncio.run(go())

    await asyncio.to_thread(elsewhere)
    assert [m.content for m in await store.messages(sid)] == ["from another loop"]
    await store.close()
