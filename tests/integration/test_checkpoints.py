"""Checkpoints: runs of one thread start clean; the CLI persists, resumes and keeps no secret."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from langchain_core.runnables import RunnableConfig

from scholarflow import build_graph
from scholarflow.errors import BackendUnavailableError, InputError
from scholarflow.graph import ScholarflowGraph
from scholarflow.graph import graph as served_graph
from scholarflow.storage.checkpoints import CHECKPOINTS_FILENAME, open_checkpointer, thread_config
from tests.conftest import SUMMARY_RULE, paper
from tests.integration.test_cli import REPO, TIMEOUT, assert_one_error_line, llm_env, run, run_many
from tests.support import FakeOpenAIServer

SUBQ_RULE = "search questions that together retrieve"  # SUB_QUESTION_GENERATION_PROMPT
CITED_RULE = "numbered passages recalled"  # CITED_MATERIAL_PROMPT
PG_URL = "postgresql://postgres@127.0.0.1:5432/test"


async def _run(graph: ScholarflowGraph, payload: dict[str, Any] | None,
               config: RunnableConfig) -> dict[str, Any]:
    final: dict[str, Any] = {}
    async for chunk in graph.astream(payload, config, stream_mode="values"):  # type: ignore[arg-type]
        final = chunk
    return final


def _docs(n: int) -> dict[str, str]:
    return {f"paper-{i}": f"# Paper {i}\n\nPaper {i} studies sparse attention variant {i}. "
            f"It reports a speed-up of {i + 2}x on long inputs.\n" for i in range(n)}


# --- runs of one thread ------------------------------------------------------------------------


async def test_each_run_of_a_thread_starts_clean(fake_llm: FakeOpenAIServer) -> None:
    fake_llm.configure(rules=[
        {"match": SUBQ_RULE, "reply": "no JSON today"},  # falls back to the question itself
        {"match": CITED_RULE, "reply": "It is 3e-4 [1]."},
    ])
    async with open_checkpointer() as saver:
        graph = build_graph(checkpointer=saver)
        config = thread_config("thread-" + uuid.uuid4().hex)

        # 1: chunk_recall over two documents: sources, recalled chunks, completed steps.
        out1 = await _run(graph, {"query": "Which learning rate does each paper use?",
                                  "document_contents": {"anchor": paper("en_sparse_attention.md"),
                                                        "rag": paper("en_retrieval_qa.md")}},
                          config)
        calls1 = fake_llm.stats().chat_calls
        assert out1["strategy"] == "chunk_recall" and out1["sources"], out1
        assert len(out1["usage"]) == calls1
        values = (await graph.aget_state(config)).values
        assert values["recalled"] and values["completed_steps"]

        # 2: the same session, three documents summarised.
        out2 = await _run(graph, {"query": "Summarize these papers",
                                  "document_contents": _docs(3),
                                  "mode_type": "LITERATURE_SUMMARY"}, config)
        calls2 = fake_llm.stats().chat_calls - calls1
        assert out2["strategy"] == "multi_doc_summary" and out2["error"] is None
        assert len(out2["usage"]) == calls2 == 4  # 3 summaries + the answer: no call of run 1
        assert {u["node"] for u in out2["usage"]} == {"summarize_document", "answer_generation"}
        assert out2["sources"] == []  # run 1's citations are not this answer's
        values = (await graph.aget_state(config)).values
        assert sorted(values["document_summaries"]) == ["paper-0", "paper-1", "paper-2"]
        assert values["recalled"] == [] and values["completed_steps"] == []
        # The request's inputs end with the run: run 3 does not inherit them.
        assert "document_contents" not in values and "mode_type" not in values

        # 3: plain chat, no documents and no mode given.
        out3 = await _run(graph, {"query": "thanks, that helps"}, config)
        thread = config["configurable"]["thread_id"]
        assert out3["session"]["session_id"] == out1["session"]["session_id"] == thread
        assert out3["session"]["message_count"] == 6  # the thread is the session
        assert (out3["detected_intent"], out3["strategy"]) == ("SIMPLE_INTERACTION", None)
        assert len(out3["usage"]) == fake_llm.stats().chat_calls - calls1 - calls2 == 1
        assert (await graph.aget_state(config)).values["document_summaries"] == {}

        # 4: a run that fails in request_init still shows nothing of run 3.
        # (An empty question is refused before the run starts: tests/integration/hostile.)
        with pytest.raises(InputError, match="no knowledge base 'default'"):
            await _run(graph, {"query": "hi", "doc_ids": ["nope"]}, config)
        out4 = (await graph.aget_state(config)).values
        assert out4["error"] and out4["answer"] == "" and out4["usage"] == []
        assert out4["detected_intent"] is None and out4["strategy"] is None


def test_served_graph_has_no_checkpointer() -> None:
    assert served_graph.checkpointer is None


# --- PostgreSQL ---------------------------------------------------------------------------------


async def test_postgres_checkpointer_persists_a_thread(
    fake_llm: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    thread = "pg-" + uuid.uuid4().hex
    secret = "sk-canary-" + uuid.uuid4().hex
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    monkeypatch.setenv("SCHOLARFLOW_DATABASE_URL", PG_URL)
    async with open_checkpointer() as saver:
        # Sessions stay in SQLite here: this test is about the checkpointer alone.
        monkeypatch.delenv("SCHOLARFLOW_DATABASE_URL")
        assert type(saver).__name__ == "AsyncPostgresSaver"
        try:
            graph = build_graph(checkpointer=saver)
            out = await _run(graph, {"query": "hello"}, thread_config(thread))
            snapshot = await graph.aget_state(thread_config(thread))
            assert snapshot.values["answer"] == out["answer"] != ""
            assert snapshot.next == ()
            stored = b""
            for table in ("checkpoints", "checkpoint_blobs", "checkpoint_writes"):
                cursor = await cast(Any, saver).conn.execute(
                    f"SELECT * FROM {table} WHERE thread_id = %s", (thread,))
                stored += repr(await cursor.fetchall()).encode()
            assert b"answer" in stored and secret.encode() not in stored
        finally:
            await saver.adelete_thread(thread)
    monkeypatch.setenv("SCHOLARFLOW_DATABASE_URL", PG_URL)
    async with open_checkpointer() as again:  # tables exist: setup is not needed twice
        assert await again.aget_tuple(thread_config(thread)) is None  # deleted above


async def test_unreachable_postgres_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCHOLARFLOW_DATABASE_URL", "postgresql://u:hunter2@127.0.0.1:9/test")
    with pytest.raises(BackendUnavailableError) as caught:
        async with open_checkpointer():
            pass
    message = str(caught.value)
    assert "SCHOLARFLOW_DATABASE_URL" in message and "hunter2" not in message


async def test_open_transaction_fails_setup_clearly_and_next_start_recovers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """setup()'s CREATE INDEX CONCURRENTLY waits for every open transaction of the database."""
    import psycopg

    from scholarflow.storage import checkpoints

    name = "sf_ckpt_" + uuid.uuid4().hex[:12]
    admin = await psycopg.AsyncConnection.connect(PG_URL, autocommit=True)
    await admin.execute(f"CREATE DATABASE {name}")
    url = PG_URL.rsplit("/", 1)[0] + "/" + name
    try:
        monkeypatch.setattr(checkpoints, "SETUP_LOCK_TIMEOUT_SECONDS", 1)
        monkeypatch.setenv("SCHOLARFLOW_DATABASE_URL", url)
        # A transaction left open, holding its snapshot (as a long report query would).
        blocker = await psycopg.AsyncConnection.connect(url)
        await blocker.set_isolation_level(psycopg.IsolationLevel.REPEATABLE_READ)
        await blocker.execute("SELECT 1")
        started = time.monotonic()
        with pytest.raises(BackendUnavailableError) as caught:
            async with open_checkpointer():
                pass
        assert time.monotonic() - started < 10
        assert "SCHOLARFLOW_DATABASE_URL" in str(caught.value)
        assert "waited over 1s for transactions left open" in str(caught.value)
        await blocker.close()
        async with open_checkpointer() as saver:  # the index it left invalid is rebuilt
            assert await saver.aget_tuple(thread_config("x")) is None
        async with await psycopg.AsyncConnection.connect(url) as conn:
            invalid = await (await conn.execute(
                "SELECT count(*) FROM pg_index WHERE NOT indisvalid")).fetchone()
            indexes = await (await conn.execute(
                "SELECT count(*) FROM pg_indexes WHERE indexname LIKE 'checkpoint%thread_id_idx'"
            )).fetchone()
        assert invalid == (0,) and indexes == (3,)
    finally:
        await admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        await admin.close()


# --- the CLI ------------------------------------------------------------------------------------


def _write_docs(folder: Path, n: int) -> list[str]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(n):
        path = folder / f"paper{i}.md"
        path.write_text(f"# Paper {i}\n\nMarker DOC-{i}-MARK. Paper {i} studies sparse attention "
                        f"variant {i} and reports a {i + 2}x speed-up.\n", encoding="utf-8")
        paths.append(str(path))
    return paths


def _summary_calls(requests: list[dict[str, Any]], n: int) -> list[int]:
    """How many summary calls the server received for each document, by its marker."""
    def is_summary_of(request: dict[str, Any], i: int) -> bool:
        text = "\n".join(str(m.get("content")) for m in request["messages"])
        return SUMMARY_RULE in text and f"DOC-{i}-MARK" in text
    return [sum(1 for r in requests if is_summary_of(r, i)) for i in range(n)]


def _home_bytes(home: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(home.rglob("*")) if p.is_file())


def test_cli_persists_each_run_in_the_sessions_thread(
    llm_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    secret = "sk-canary-" + uuid.uuid4().hex
    home = tmp_path / "home"
    env = {**llm_env(llm_server, home), "OPENAI_API_KEY": secret}
    llm_server.reset()
    files = [a for p in _write_docs(tmp_path / "docs", 3) for a in ("--file", p)]
    # Each process pays its imports: the bad requests run beside the asks.
    no_pg = {**env, "SCHOLARFLOW_DATABASE_URL": "postgresql://postgres@127.0.0.1:9/test"}
    first, unknown, unreachable = run_many([
        (["ask", "Summarize these papers", *files, "--mode", "LITERATURE_SUMMARY",
          "--session", "papers", "--json"], env),
        (["resume", "no-such-session"], env), (["ask", "hello"], no_pg),
    ])
    assert first.returncode == 0, first.describe()
    assert first.stderr == "note: session papers is new\n", first.describe()
    assert_one_error_line(unknown, mentions="no session 'no-such-session'")
    assert_one_error_line(unreachable, mentions="SCHOLARFLOW_DATABASE_URL")
    session = first.json_lines()[-1]["session_id"]
    second, nothing = run_many([(["ask", "thanks", "--session", session, "--json"], env),
                                (["resume", session], env)])
    assert second.returncode == 0, second.describe()
    final = second.json_lines()[-1]
    assert (final["session_id"], final["strategy"]) == (session, None)
    # Run beside `ask`, resume found the lock held or the run finished: either way, one line.
    assert_one_error_line(nothing, mentions=session)

    with sqlite3.connect(home / CHECKPOINTS_FILENAME) as db:
        threads = {t for (t,) in db.execute("SELECT DISTINCT thread_id FROM checkpoints")}
        kept = db.execute("SELECT count(*), max(json_extract(metadata, '$.step')) "
                          "FROM checkpoints WHERE checkpoint_ns = ''").fetchone()
    # One thread, the session; both runs in it (the step count goes on), every step's
    # checkpoint kept (fork and rollback need them; `messages` is rebuilt from their writes).
    assert threads == {session} and kept[0] > kept[1] > 8, kept
    # Nothing on disk holds the key: checkpoints (WAL included), sessions, cache.
    assert secret.encode() not in _home_bytes(home)


def _pg_rows(url: str, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    import psycopg

    with psycopg.connect(url) as conn:
        return list(conn.execute(sql, params).fetchall())


def test_sessions_delete_removes_the_threads_checkpoints(
    llm_server: FakeOpenAIServer, tmp_path: Path, pg_schema_url: str
) -> None:
    """What was asked must not stay on disk or in the database once its session is deleted."""
    question = "my private question ZEBRA42"
    sqlite_home = tmp_path / "sqlite"
    sqlite_env = llm_env(llm_server, sqlite_home)
    pg_env = {**llm_env(llm_server, tmp_path / "pg"), "SCHOLARFLOW_DATABASE_URL": pg_schema_url}
    llm_server.reset()
    asked = run_many([(["ask", question, "--json"], sqlite_env),
                      (["ask", question, "--json"], pg_env),
                      (["ask", "another question KEEPME7", "--json"], sqlite_env)])
    for result in asked:
        assert result.returncode == 0, result.describe()
    sqlite_id, pg_id, kept_id = (r.json_lines()[-1]["session_id"] for r in asked)
    assert b"ZEBRA42" in _home_bytes(sqlite_home)
    thread_rows = ("SELECT (SELECT count(*) FROM checkpoints WHERE thread_id = %s) "
                   "+ (SELECT count(*) FROM checkpoint_blobs WHERE thread_id = %s) "
                   "+ (SELECT count(*) FROM checkpoint_writes WHERE thread_id = %s)")
    assert _pg_rows(pg_schema_url, thread_rows, pg_id, pg_id, pg_id)[0][0] > 0

    deleted = run_many([(["sessions", "delete", sqlite_id], sqlite_env),
                        (["sessions", "delete", pg_id], pg_env)])
    for result, sid in zip(deleted, (sqlite_id, pg_id), strict=True):
        assert result.returncode == 0 and json.loads(result.stdout) == {"deleted": sid}, \
            result.describe()
    # Nothing of it is left in any file: not in the tables, free pages or the WAL.
    assert b"ZEBRA42" not in _home_bytes(sqlite_home)
    with sqlite3.connect(sqlite_home / CHECKPOINTS_FILENAME) as db:
        threads = {t for (t,) in db.execute("SELECT DISTINCT thread_id FROM checkpoints")}
    assert threads == {kept_id}  # the other session's thread stays
    # Its run lock goes too; the other session's stays.
    assert len(list((sqlite_home / "locks").glob("*.lock"))) == 1
    assert _pg_rows(pg_schema_url, thread_rows, pg_id, pg_id, pg_id) == [(0,)]


@pytest.fixture
def own_server() -> Iterator[FakeOpenAIServer]:
    """A server of its own: the killed run leaves calls hanging in it."""
    with FakeOpenAIServer() as server:
        yield server


def test_killed_run_resumes_without_repeating_finished_summaries(
    own_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    n, fast = 6, 3
    home = tmp_path / "home"
    env = llm_env(own_server, home)
    # Documents 0-2 are summarised at once; 3-5 hang until the process is killed.
    rules = [{"match": f"{SUMMARY_RULE}.*DOC-{i}-MARK", "reply": f"Summary S{i}: variant {i}.",
              "latency": 0 if i < fast else 60} for i in range(n)]
    own_server.configure(rules=rules)
    files = [a for p in _write_docs(tmp_path / "docs", n) for a in ("--file", p)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "scholarflow.cli", "ask", "Summarize these papers", *files,
         "--mode", "LITERATURE_SUMMARY", "--json"],
        env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        session = _read_until_summaries(proc, fast)
        _wait_for_stored_summaries(home / CHECKPOINTS_FILENAME, fast)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=TIMEOUT)
    assert _summary_calls(own_server.stats().requests, n) == [1] * n  # all six were asked

    # Empty the summary cache: only the checkpoint may spare the finished summaries now.
    with sqlite3.connect(home / "scholarflow.db") as db:
        assert db.execute("DELETE FROM summary_cache").rowcount == fast
    own_server.reset()
    own_server.configure(rules=[{**r, "latency": 0} for r in rules])

    resumed = run(["resume", session, "--json"], env)
    assert resumed.returncode == 0, resumed.describe()
    assert resumed.stderr.startswith("note: resuming 'Summarize these papers'"), resumed.describe()
    final = resumed.json_lines()[-1]
    assert final["type"] == "final_answer" and final["session_id"] == session
    requests = own_server.stats().requests
    # The three that finished before the kill are not asked again; the three cut off are.
    assert _summary_calls(requests, n) == [0] * fast + [1] * (n - fast)
    # The answer was written from all six summaries, three of them from the checkpoint.
    answer_prompt = "\n".join(str(m.get("content")) for m in requests[-1]["messages"])
    assert all(f"Summary S{i}" in answer_prompt for i in range(n)), answer_prompt
    assert_one_error_line(run(["resume", session], env), mentions="no unfinished run")


def _read_until_summaries(proc: subprocess.Popen[str], count: int) -> str:
    """Read the --json events until `count` summaries completed; the session id."""
    assert proc.stdout is not None
    session, done = "", []
    deadline = time.monotonic() + TIMEOUT
    for line in proc.stdout:
        event = json.loads(line)
        if event["type"] == "node_complete" and event.get("node") == "request_init":
            session = event["session_id"]
        elif event["type"] == "doc_summary_complete":
            done.append(event["doc_id"])
            if len(done) == count:
                return session
        assert time.monotonic() < deadline, "the run did not get that far"
    raise AssertionError(f"the run ended early: {proc.stderr.read() if proc.stderr else ''}")


def _wait_for_stored_summaries(path: Path, count: int) -> None:
    """Until the checkpointer has stored the finished summary tasks' writes."""
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        with sqlite3.connect(path) as db:
            stored = db.execute(
                "SELECT count(*) FROM writes WHERE channel = 'usage' "
                "AND checkpoint_ns LIKE 'document_summary:%'"
            ).fetchone()[0]
        if stored >= count:
            return
        time.sleep(0.05)
    raise AssertionError("the finished summaries were never checkpointed")
