"""The session store contract on both backends (SQLite and PostgreSQL): lifecycle, ordering,
statistics, concurrency, compression; then what is particular to SQLite."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from scholarflow.errors import InputError
from scholarflow.sessions import (
    CompressionConflictError,
    MessageType,
    PostgresSessionStore,
    SessionNotFoundError,
    SessionStore,
    SqliteSessionStore,
    default_session_store,
    home_dir,
)
from scholarflow.tokens import count_message_tokens

USER = MessageType.USER
ASSISTANT = MessageType.ASSISTANT


@pytest.fixture(params=["sqlite", "postgresql"])
def new_store(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], SessionStore]:
    """Opens a store on this test's database: one SQLite file, or one PostgreSQL schema."""
    if request.param == "sqlite":
        path = tmp_path / "db" / "scholarflow.db"  # its folder is created on demand
        return lambda: SqliteSessionStore(path)
    url, schema = request.getfixturevalue("postgres_url"), request.getfixturevalue("pg_schema")
    return lambda: PostgresSessionStore(url, schema=schema)


@pytest.fixture
async def store(new_store: Callable[[], SessionStore]) -> AsyncIterator[SessionStore]:
    s = new_store()
    yield s
    await s.close()


@pytest.fixture
async def sqlite_store(tmp_path: Path) -> AsyncIterator[SqliteSessionStore]:
    s = SqliteSessionStore(tmp_path / "scholarflow.db")
    yield s
    await s.close()


async def _stored_message_rows(store: SessionStore) -> int:
    """Message rows left in the database, read behind the store's back."""
    if isinstance(store, SqliteSessionStore):
        with sqlite3.connect(store.path) as raw:
            return int(raw.execute("SELECT COUNT(*) FROM session_messages").fetchone()[0])
    assert isinstance(store, PostgresSessionStore)
    async with store.db.connection() as conn:
        cur = await conn.execute(
            f"SELECT COUNT(*) FROM {store.db.table('scholarflow_messages')}"
        )
        row = await cur.fetchone()
    assert row is not None
    return int(row[0])


async def test_create_and_get(store: SessionStore) -> None:
    info = await store.create()
    assert len(info.session_id) == 32
    int(info.session_id, 16)  # uuid4 hex
    assert info.title == ""
    assert (info.total_token_count, info.message_count) == (0, 0)
    assert info.created_at <= info.updated_at
    assert await store.get(info.session_id) == info
    assert isinstance(store, SessionStore)


async def test_create_with_id_is_idempotent(store: SessionStore) -> None:
    first = await store.create("abc")
    await store.add_message("abc", USER, "hello")
    again = await store.create("abc")
    assert again.session_id == "abc"
    assert again.created_at == first.created_at
    assert again.message_count == 1  # not reset


@pytest.mark.parametrize("bad", ["", "   ", "x" * 201])
async def test_create_rejects_bad_ids(store: SessionStore, bad: str) -> None:
    with pytest.raises(ValueError):
        await store.create(bad)


async def test_get_and_delete_unknown(store: SessionStore) -> None:
    assert await store.get("nope") is None
    assert await store.delete("nope") is False


async def test_list_newest_updated_first(store: SessionStore) -> None:
    for sid in ("a", "b", "c"):
        await store.create(sid)
    await store.add_message("a", USER, "bump a")
    assert [s.session_id for s in await store.list()] == ["a", "c", "b"]


async def test_list_empty(store: SessionStore) -> None:
    assert await store.list() == []


async def test_delete_removes_session_and_messages(store: SessionStore) -> None:
    await store.create("gone")
    await store.add_message("gone", USER, "q")
    await store.add_message("gone", ASSISTANT, "a")
    assert await store.delete("gone") is True
    assert await store.get("gone") is None
    with pytest.raises(SessionNotFoundError):
        await store.messages("gone")
    await store.create("gone")
    assert await store.messages("gone") == []
    assert await _stored_message_rows(store) == 0


async def test_messages_in_order_with_fields(store: SessionStore) -> None:
    info = await store.create()
    sid = info.session_id
    added = [
        await store.add_message(sid, USER, "What is attention?"),
        await store.add_message(sid, ASSISTANT, "A weighting of inputs."),
        await store.add_message(sid, "USER", "And self-attention?"),  # type: ignore[arg-type]
    ]
    got = await store.messages(sid)
    assert got == added
    assert [m.type for m in got] == [USER, ASSISTANT, USER]
    assert [m.id for m in got] == sorted(m.id for m in got)
    assert all(m.session_id == sid and not m.compressed for m in got)
    assert all(m.token_count == count_message_tokens([m.content]) for m in got)
    assert [m.created_at for m in got] == sorted(m.created_at for m in got)


async def test_statistics(store: SessionStore) -> None:
    info = await store.create()
    sid = info.session_id
    long_question = "Summarise\nthe   paper " + "about transformers " * 10
    m1 = await store.add_message(sid, USER, long_question)
    m2 = await store.add_message(sid, ASSISTANT, "It proposes the Transformer.")
    after = await store.get(sid)
    assert after is not None
    assert after.message_count == 2
    assert after.total_token_count == m1.token_count + m2.token_count
    assert info.created_at == after.created_at <= after.updated_at
    assert after.updated_at >= info.updated_at
    assert after.updated_at == m2.created_at
    assert len(after.title) <= 60
    assert after.title.startswith("Summarise the paper about transformers")
    assert "\n" not in after.title


async def test_title_comes_from_the_first_user_message(store: SessionStore) -> None:
    await store.create("t")
    await store.add_message("t", ASSISTANT, "Welcome!")
    await store.add_message("t", USER, "first question")
    await store.add_message("t", USER, "second question")
    info = await store.get("t")
    assert info is not None and info.title == "first question"


async def test_add_message_rejects_compression(store: SessionStore) -> None:
    await store.create("s")
    with pytest.raises(ValueError):
        await store.add_message("s", MessageType.COMPRESSION, "summary")


async def test_fifty_concurrent_adds_lose_nothing(store: SessionStore) -> None:
    sid = (await store.create()).session_id
    contents = [f"message number {i}" for i in range(50)]
    added = await asyncio.gather(
        *(store.add_message(sid, USER if i % 2 == 0 else ASSISTANT, c)
          for i, c in enumerate(contents))
    )
    stored = await store.messages(sid)
    assert len(stored) == 50
    assert {m.content for m in stored} == set(contents)
    assert len({m.id for m in stored}) == 50
    assert sorted(added, key=lambda m: m.id) == stored
    info = await store.get(sid)
    assert info is not None
    assert info.message_count == 50
    assert info.total_token_count == sum(m.token_count for m in stored)


async def test_two_stores_on_one_database_lose_nothing(
    new_store: Callable[[], SessionStore],
) -> None:
    # Like two processes: two connections to one database, writing at once.
    a, b = new_store(), new_store()
    try:
        await a.create("s")
        await asyncio.gather(
            *(store.add_message("s", USER, f"{name}{i}")
              for i in range(25) for name, store in (("a", a), ("b", b)))
        )
        info = await b.get("s")
        assert info is not None and info.message_count == 50
        assert len(await a.messages("s")) == 50
    finally:
        await a.close()
        await b.close()


@pytest.mark.parametrize(
    "call",
    [
        lambda s: s.add_message("missing", USER, "hi"),
        lambda s: s.messages("missing"),
        lambda s: s.messages("missing", active_only=True),
        lambda s: s.compress("missing", [1], "summary"),
    ],
    ids=["add_message", "messages", "messages_active", "compress"],
)
async def test_unknown_session_errors(
    store: SessionStore, call: Callable[[SessionStore], Awaitable[Any]]
) -> None:
    with pytest.raises(SessionNotFoundError) as info:
        await call(store)
    err = info.value
    assert isinstance(err, LookupError) and isinstance(err, InputError)
    assert err.session_id == "missing"
    assert str(err) == "no session 'missing'; see `scholarflow sessions list`"


async def _conversation(store: SessionStore, sid: str, rounds: int) -> list[int]:
    ids = []
    for i in range(rounds):
        ids.append((await store.add_message(sid, USER, f"question {i}")).id)
        ids.append((await store.add_message(sid, ASSISTANT, f"answer {i}")).id)
    return ids


async def test_compress_places_summary_before_the_kept_messages(
    store: SessionStore,
) -> None:
    sid = (await store.create()).session_id
    ids = await _conversation(store, sid, 3)
    before = await store.get(sid)
    summary = await store.compress(sid, ids[:4], "They discussed questions 0 and 1.")
    assert summary.type is MessageType.COMPRESSION and not summary.compressed

    active = await store.messages(sid, active_only=True)
    assert [m.id for m in active] == [summary.id, *ids[4:]]
    every = await store.messages(sid)
    assert [m.id for m in every] == [*ids[:4], summary.id, *ids[4:]]
    assert [m.compressed for m in every] == [True] * 4 + [False] * 3
    assert [m.created_at for m in every] == sorted(m.created_at for m in every)

    info = await store.get(sid)
    assert info is not None and before is not None
    assert info.total_token_count == sum(m.token_count for m in active)
    assert info.total_token_count < before.total_token_count
    assert info.message_count == 7
    assert info.updated_at >= before.updated_at


async def test_new_messages_follow_the_summary(store: SessionStore) -> None:
    sid = (await store.create()).session_id
    ids = await _conversation(store, sid, 2)
    summary = await store.compress(sid, ids[:2], "s")
    later = await store.add_message(sid, USER, "later")
    active = await store.messages(sid, active_only=True)
    assert [m.id for m in active] == [summary.id, ids[2], ids[3], later.id]


async def test_compress_everything(store: SessionStore) -> None:
    sid = (await store.create()).session_id
    ids = await _conversation(store, sid, 1)
    summary = await store.compress(sid, ids, "all of it")
    assert [m.id for m in await store.messages(sid, active_only=True)] == [summary.id]
    assert (await store.messages(sid))[-1].id == summary.id


async def test_compress_rejects_bad_input_and_changes_nothing(store: SessionStore) -> None:
    sid = (await store.create()).session_id
    other = (await store.create()).session_id
    ids = await _conversation(store, sid, 2)
    foreign = await store.add_message(other, USER, "elsewhere")
    await store.compress(sid, ids[:2], "first")
    before = (await store.messages(sid), await store.get(sid))

    with pytest.raises(CompressionConflictError):
        await store.compress(sid, [ids[0], ids[2]], "again")  # ids[0] is compressed already
    with pytest.raises(CompressionConflictError):
        await store.compress(sid, [foreign.id], "not mine")
    with pytest.raises(ValueError):
        await store.compress(sid, [], "nothing")
    with pytest.raises(ValueError):
        await store.compress(sid, [ids[2]], "   ")
    assert (await store.messages(sid), await store.get(sid)) == before


async def test_data_survives_reopening(new_store: Callable[[], SessionStore]) -> None:
    first = new_store()
    sid = (await first.create()).session_id
    await first.add_message(sid, USER, "kept")
    await first.close()
    await first.close()  # closing twice is harmless
    assert [m.content for m in await first.messages(sid)] == ["kept"]  # reopens lazily
    await first.close()
    second = new_store()
    assert [m.content for m in await second.messages(sid)] == ["kept"]
    await second.close()


async def test_uses_wal(sqlite_store: SessionStore) -> None:
    store = sqlite_store
    await store.create()
    with sqlite3.connect(store.path) as raw:
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


async def test_a_waiting_call_does_not_block_the_event_loop(
    sqlite_store: SessionStore,
) -> None:
    store = sqlite_store
    sid = (await store.create()).session_id
    locked, release = threading.Event(), threading.Event()

    def hold_write_lock() -> None:
        # Another writer (as if another process) holds the database for a while.
        raw = sqlite3.connect(store.path, isolation_level=None)
        raw.execute("BEGIN EXCLUSIVE")
        locked.set()
        release.wait(5)
        raw.execute("COMMIT")
        raw.close()

    holder = threading.Thread(target=hold_write_lock)
    holder.start()
    await asyncio.to_thread(locked.wait, 5)
    ticks = 0
    add = asyncio.create_task(store.add_message(sid, USER, "waits for the lock"))
    start = time.monotonic()
    while time.monotonic() - start < 0.3:
        await asyncio.sleep(0.01)
        ticks += 1
    assert not add.done()  # still waiting for the other writer...
    release.set()
    await add  # ...and completes once it lets go
    holder.join()
    assert ticks >= 10  # the loop kept running meanwhile
    assert len(await store.messages(sid)) == 1


async def test_every_call_runs_in_a_worker_thread(sqlite_store: SessionStore) -> None:
    store = sqlite_store
    loop_thread = threading.get_ident()
    db_threads: list[int] = []

    def on_statement(statement: str) -> None:
        db_threads.append(threading.get_ident())

    sid = (await store.create()).session_id
    # Record the thread of every statement the store's connection runs.
    await store._db.run(lambda conn: conn.set_trace_callback(on_statement))
    m = await store.add_message(sid, USER, "q")
    await store.get(sid)
    await store.list()
    await store.messages(sid)
    await store.compress(sid, [m.id], "s")
    await store.delete(sid)
    assert db_threads and loop_thread not in db_threads


async def test_default_store_lives_in_scholarflow_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("SCHOLARFLOW_HOME", str(home))
    store = default_session_store()
    assert isinstance(store, SqliteSessionStore)
    assert store.path == home / "scholarflow.db"
    assert home.is_dir()
    await store.create("x")
    await store.close()
    assert (home / "scholarflow.db").exists()


def test_home_dir_defaults_to_dot_scholarflow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SCHOLARFLOW_HOME", raising=False)
    monkeypatch.chdir(tmp_path)
    assert home_dir() == Path(".scholarflow")
    assert (tmp_path / ".scholarflow").is_dir()
