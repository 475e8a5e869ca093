"""`langgraph dev --config langgraph.postgres.json`: the server's checkpoints in PostgreSQL.

langgraph.postgres.json names scholarflow/storage/server_checkpointer.py:make_checkpointer
as the server's checkpointer; these tests serve it against the local PostgreSQL
(a schema of its own per module, dropped afterwards) and read the rows back.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from scholarflow.errors import BackendUnavailableError, ConfigurationError
from scholarflow.storage.server_checkpointer import make_checkpointer
from tests.conftest import EXAMPLES, INTENT_RULE
from tests.support.langgraph_dev import (
    LANGGRAPH,
    NO_CLI,
    REPO,
    Fake,
    Server,
    clean_env,
    free_port,
    launch_server,
    script,
    start_fake,
    start_server,
    stop,
    stream,
    tail,
    where,
)

CONFIG = "langgraph.postgres.json"
QA_RULE = "You answer a precise question"
INTENT_QA = '{"intent": "LITERATURE_QA", "confidence": 0.9, "reason": "a precise question"}'
ANSWER = "It uses a sliding local window."
QUESTION = "Which attention pattern does the sparse model use?"
SECRET = "sk-secret-in-postgres-check"
needs_cli = pytest.mark.skipif(LANGGRAPH is None, reason=NO_CLI)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("langgraph_server_postgres")


@pytest.fixture(scope="module")
def fake(workdir: Path) -> Iterator[Fake]:
    with start_fake(workdir) as started:
        yield started


@pytest.fixture(scope="module")
def pg_server(fake: Fake, workdir: Path, postgres_url: str) -> Iterator[Server]:
    # The database's own schema, as a deployment would use it: the checkpoint tables are
    # usually there already, so the server does not wait on their first CREATE INDEX
    # CONCURRENTLY (which waits for every open transaction in the database). The rows
    # of this module's threads are deleted afterwards.
    # Auth on, as a lab runs it: the person is added (to PostgreSQL) as an operator would.
    name = f"pg{uuid.uuid4().hex[:12]}"
    with start_server(workdir, fake, config=CONFIG, auth=True,
                      env={"SCHOLARFLOW_DATABASE_URL": postgres_url}) as started:
        env = {**clean_env(started.home), "SCHOLARFLOW_DATABASE_URL": postgres_url}
        added = subprocess.run([sys.executable, "-m", "scholarflow.cli", "users", "add", name],
                               cwd=REPO, env=env, capture_output=True, text=True, timeout=60,
                               check=False, stdin=subprocess.DEVNULL)
        assert added.returncode == 0, added.stderr
        try:
            yield dataclasses.replace(started, token=json.loads(added.stdout)["token"])
        finally:
            _rows(postgres_url, "DELETE FROM scholarflow_people WHERE name = %s RETURNING name",
                  name)


def _paper() -> str:
    return (EXAMPLES / "en_sparse_attention.md").read_text(encoding="utf-8")


def _rows(url: str, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    import psycopg

    with psycopg.connect(url) as conn:
        return list(conn.execute(sql, params).fetchall())


def _delete_thread(url: str, thread_id: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        for table in ("checkpoint_writes", "checkpoint_blobs", "checkpoints"):
            conn.execute(f"DELETE FROM {table} WHERE thread_id = %s", (thread_id,))


@needs_cli
async def test_the_servers_checkpoints_land_in_postgres(
    pg_server: Server, fake: Fake, postgres_url: str
) -> None:
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from langgraph_sdk import get_client

    url = postgres_url
    await script(fake, rules=[{"match": INTENT_RULE, "reply": INTENT_QA},
                              {"match": QA_RULE, "reply": ANSWER}])
    client = get_client(url=pg_server.url, api_key=pg_server.token)
    thread_id = str((await client.threads.create())["thread_id"])
    # The person's thread, the token looked up in PostgreSQL; no token: refused.
    assert (await client.threads.get(thread_id))["metadata"]["owner"].startswith("pg")
    async with httpx.AsyncClient() as anonymous:
        refused = await anonymous.post(f"{pg_server.url}/threads/search", json={})
    assert refused.status_code == 401, refused.text
    try:
        first = await stream(pg_server, thread_id, input={"query": QUESTION, "content": _paper()},
                             context={"openai_api_key": SECRET})
        second = await stream(pg_server, thread_id, input={"query": "Thanks. And its cost?"})
        history = await client.threads.get_history(thread_id, limit=100)
        state = await client.threads.get_state(thread_id)
        for run in (first, second):
            assert not run.failures(), f"{run.failures()}\n{pg_server.log_tail()}"
        assert first.values["answer"] == ANSWER
        # Ours: AsyncPostgresSaver with the acopy_thread that threads.copy needs.
        assert "Using custom checkpointer: CopyingPostgresSaver" in tail(pg_server.log, 100_000)

        # Every checkpoint the server shows is a row of the checkpoints table.
        stored = {row[0] for row in _rows(
            url, "SELECT checkpoint_id FROM checkpoints "
                 "WHERE thread_id = %s AND checkpoint_ns = ''", thread_id)}
        shown = {c["checkpoint"]["checkpoint_id"] for c in history}
        assert stored == shown, (len(stored), len(shown))
        assert {c["metadata"]["run_id"] for c in history} == {first.run_id, second.run_id}
        # The latest state, read straight from PostgreSQL, is the one the server serves.
        async with AsyncPostgresSaver.from_conn_string(url) as saver:
            latest = await saver.aget_tuple({"configurable": {"thread_id": thread_id}})
        assert latest is not None
        values = latest.checkpoint["channel_values"]
        assert values["answer"] == state["values"]["answer"] == second.values["answer"]
        assert values["session"] == state["values"]["session"]
        assert state["values"]["session"]["session_id"] == thread_id  # the thread is the session
        assert latest.metadata.get("run_id") == second.run_id

        # A key sent in the context is in no checkpoint, blob or pending write.
        leaks = {
            "checkpoints": _rows(url, "SELECT checkpoint_id FROM checkpoints WHERE thread_id = %s "
                                      "AND (checkpoint::text LIKE %s OR metadata::text LIKE %s)",
                                 thread_id, f"%{SECRET}%", f"%{SECRET}%"),
            "checkpoint_blobs": _rows(url, "SELECT channel FROM checkpoint_blobs WHERE "
                                           "thread_id = %s AND position(%s::bytea in blob) > 0",
                                      thread_id, SECRET.encode()),
            "checkpoint_writes": _rows(url, "SELECT channel FROM checkpoint_writes WHERE "
                                            "thread_id = %s AND position(%s::bytea in blob) > 0",
                                       thread_id, SECRET.encode()),
            "history": where(history, SECRET),
        }
        assert not {k: v for k, v in leaks.items() if v}, json.dumps(leaks, default=str)[:2000]
    finally:
        await client.aclose()
        _delete_thread(url, thread_id)


@needs_cli
def test_an_unreachable_postgres_stops_the_server_with_one_clear_line(workdir: Path) -> None:
    password = "pw-not-for-logs"
    url = f"postgresql://postgres:{password}@127.0.0.1:{free_port()}/test"  # nothing listens
    proc, server = launch_server(workdir, config=CONFIG, name="unreachable",
                                 env={"SCHOLARFLOW_DATABASE_URL": url})
    try:
        deadline = time.monotonic() + 90
        while proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        stop(proc)
    log = tail(server.log, 100_000)
    assert proc.returncode not in (None, 0), log[-2000:]
    assert ("BackendUnavailableError: cannot connect to PostgreSQL at SCHOLARFLOW_DATABASE_URL "
            "(postgresql://postgres:***@127.0.0.1:") in log, log[-2000:]
    assert password not in log


async def test_the_checkpointer_names_the_variable_when_it_is_unset_or_wrong(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("SCHOLARFLOW_DATABASE_URL", raising=False)
    with pytest.raises(ConfigurationError, match=r"^SCHOLARFLOW_DATABASE_URL is not set: "):
        async with make_checkpointer():
            pass
    monkeypatch.setenv("SCHOLARFLOW_DATABASE_URL", "mysql://root@127.0.0.1/test")
    with pytest.raises(ConfigurationError, match=r"SCHOLARFLOW_DATABASE_URL must be a "):
        async with make_checkpointer():
            pass
    monkeypatch.setenv("SCHOLARFLOW_DATABASE_URL",
                       f"postgresql://postgres@127.0.0.1:{free_port()}/test")
    with pytest.raises(BackendUnavailableError, match="connection refused"):
        async with make_checkpointer():
            pass


async def test_the_checkpointer_creates_its_tables_and_saves(
    pg_schema_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from langgraph.checkpoint.base import empty_checkpoint

    monkeypatch.setenv("SCHOLARFLOW_DATABASE_URL", pg_schema_url)  # a fresh, empty schema
    config: Any = {"configurable": {"thread_id": f"t-{uuid.uuid4().hex}", "checkpoint_ns": ""}}
    async with make_checkpointer() as saver:
        saved = await saver.aput(config, empty_checkpoint(), {"source": "input", "step": -1}, {})
        found = await saver.aget_tuple(saved)
    assert found is not None and found.metadata["step"] == -1
    # Entering it again (a restarted server) finds the tables and migrations in place.
    async with make_checkpointer() as saver:
        assert await saver.aget_tuple(saved) is not None


async def test_a_setup_held_up_by_an_open_transaction_fails_then_recovers(
    pg_schema_url: str, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first setup's CREATE INDEX CONCURRENTLY waits for every open transaction."""
    import psycopg

    monkeypatch.setenv("SCHOLARFLOW_DATABASE_URL", pg_schema_url)
    monkeypatch.setattr("scholarflow.storage.server_checkpointer.SETUP_TIMEOUT_SECONDS", 2.0)
    with psycopg.connect(postgres_url) as blocker:  # holds a snapshot until it ends
        blocker.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        blocker.execute("SELECT 1")
        with pytest.raises(BackendUnavailableError, match=r"waited over 2s for transactions"):
            async with make_checkpointer():
                pass
        blocker.rollback()
    monkeypatch.setattr("scholarflow.storage.server_checkpointer.SETUP_TIMEOUT_SECONDS", 60.0)
    async with make_checkpointer() as saver:
        assert await saver.aget_tuple({"configurable": {"thread_id": "none"}}) is None
    schema = pg_schema_url.rsplit("%3D", 1)[1]
    invalid = _rows(postgres_url, "SELECT i.indexrelid::regclass::text FROM pg_index i "
                                  "JOIN pg_class t ON t.oid = i.indrelid "
                                  "JOIN pg_namespace n ON n.oid = t.relnamespace "
                                  "WHERE n.nspname = %s AND NOT i.indisvalid", schema)
    assert invalid == [], "the interrupted index build was not repaired"


async def test_the_checkpointer_copies_a_thread_with_its_whole_conversation(
    pg_schema_url: str, fake_llm: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`threads.copy` on LangGraph server calls acopy_thread, which AsyncPostgresSaver lacks:
    the copy must carry every checkpoint and write, or its `messages` (a DeltaChannel,
    rebuilt from them) would come back empty."""
    from scholarflow import build_graph

    monkeypatch.setenv("SCHOLARFLOW_DATABASE_URL", pg_schema_url)
    source, target = f"t-{uuid.uuid4().hex}", f"t-{uuid.uuid4().hex}"
    async with make_checkpointer() as saver:
        graph = build_graph(checkpointer=saver)
        for question in ("first question", "second question"):
            await graph.ainvoke({"query": question}, {"configurable": {"thread_id": source}})
        await saver.acopy_thread(source, target)
        await graph.ainvoke({"query": "only on the copy"}, {"configurable": {"thread_id": target}})
        original = await graph.aget_state({"configurable": {"thread_id": source}})
        copy = await graph.aget_state({"configurable": {"thread_id": target}})
    texts = [m.text for m in copy.values["messages"] if m.type == "human"]
    assert texts == ["first question", "second question", "only on the copy"]
    assert [m.text for m in original.values["messages"] if m.type == "human"] == [
        "first question", "second question"]
    assert copy.values["session"]["session_id"] == target
