"""The real graph with SCHOLARFLOW_DATABASE_URL and SCHOLARFLOW_REDIS_URL set, and the faults:
an unreachable PostgreSQL or Redis at start, and Redis lost in the middle of a run."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psycopg
import pytest
import redis.asyncio as aioredis

from scholarflow import Context, build_graph
from scholarflow.errors import ConfigurationError
from scholarflow.ingest.documents import document_from_text
from scholarflow.storage.cache_registry import close_all, summary_cache
from scholarflow.storage.checkpoints import open_checkpointer, thread_config
from scholarflow.storage.postgres_cache import PostgresSummaryCache
from scholarflow.storage.redis_cache import RedisSummaryCache
from scholarflow.storage.summary_cache import (
    DEFAULT_TTL_SECONDS,
    SqliteSummaryCache,
    summary_cache_key,
)
from tests.conftest import SUMMARY_RULE, paper, run_graph, types
from tests.support import FakeOpenAIServer
from tests.support.tcp_proxy import TcpProxy

REPO = Path(__file__).resolve().parents[2]
PG_DOWN = "postgresql://postgres@127.0.0.1:1/test"
REDIS_DOWN = "redis://127.0.0.1:1/0"
PG_DOWN_LINE = ("error: cannot connect to PostgreSQL at SCHOLARFLOW_DATABASE_URL "
                f"({PG_DOWN}): connection refused; check the URL in SCHOLARFLOW_DATABASE_URL "
                "and that PostgreSQL is running, or unset it")
REDIS_DOWN_LINE = ("error: cannot connect to Redis at SCHOLARFLOW_REDIS_URL "
                   f"({REDIS_DOWN}): connection refused; check the URL in SCHOLARFLOW_REDIS_URL "
                   "and that Redis is running, or unset it")
FINAL_RULE = "summarise a set of academic documents"


def summary_rules(tag: str) -> list[dict[str, str]]:
    return [
        # The papers cite each other: match on their own first lines.
        {"match": SUMMARY_RULE + ".*# AnchorWindow: Sliding",
         "reply": f"{tag} anchors cut memory."},
        {"match": SUMMARY_RULE + ".*# SectionRAG: Section",
         "reply": f"{tag} sections help QA."},
        {"match": FINAL_RULE, "reply": f"{tag}: both papers agree."},
    ]


def two_docs(prefix: str) -> dict[str, str]:
    return {f"{prefix}-a": paper("en_sparse_attention.md"),
            f"{prefix}-b": paper("en_retrieval_qa.md")}


def cache_keys(docs: dict[str, str]) -> list[str]:
    return [summary_cache_key(i, document_from_text(t, doc_id=i).content_hash)
            for i, t in docs.items()]


def summary_calls(server: FakeOpenAIServer) -> int:
    return sum(SUMMARY_RULE in str(r["messages"]) for r in server.stats().requests)


@pytest.fixture
async def raw_redis(redis_url: str) -> AsyncIterator[aioredis.Redis]:
    client = aioredis.Redis.from_url(redis_url, decode_responses=True)
    yield client
    await client.aclose()


async def test_selection_by_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SCHOLARFLOW_HOME", str(tmp_path))
    for name in ("SCHOLARFLOW_DATABASE_URL", "SCHOLARFLOW_REDIS_URL"):
        monkeypatch.delenv(name, raising=False)
    assert isinstance(summary_cache(), SqliteSummaryCache)
    monkeypatch.setenv("SCHOLARFLOW_DATABASE_URL", "postgresql://u@db.example/sf")
    cache = summary_cache()
    assert isinstance(cache, PostgresSummaryCache)
    assert summary_cache() is cache  # one per process
    monkeypatch.setenv("SCHOLARFLOW_REDIS_URL", "redis://cache.example:6379/0")
    assert isinstance(summary_cache(), RedisSummaryCache)
    monkeypatch.delenv("SCHOLARFLOW_REDIS_URL")
    monkeypatch.setenv("SCHOLARFLOW_DATABASE_URL", "sqlite:///x.db")
    with pytest.raises(ConfigurationError, match="SCHOLARFLOW_DATABASE_URL must be a postgresql"):
        summary_cache()
    await close_all()  # nothing was opened: closing never connects


async def test_graph_keeps_sessions_in_postgres_and_summaries_in_redis(
    fake_llm: FakeOpenAIServer, pg_schema_url: str, redis_url: str, redis_doc_prefix: str,
    raw_redis: aioredis.Redis, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    monkeypatch.setenv("SCHOLARFLOW_DATABASE_URL", pg_schema_url)
    monkeypatch.setenv("SCHOLARFLOW_REDIS_URL", redis_url)
    docs = two_docs(redis_doc_prefix)
    keys = cache_keys(docs)
    fake_llm.configure(rules=summary_rules("v1"))
    async with open_checkpointer() as saver:  # PostgreSQL: SCHOLARFLOW_DATABASE_URL
        graph = build_graph(checkpointer=saver)
        config = thread_config("pg-session")

        async def ask(payload: dict[str, Any], ctx: Context | None = None
                      ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
            events = [e async for _ns, e in graph.astream(
                payload, config, context=ctx, stream_mode="custom", subgraphs=True)]
            return dict((await graph.aget_state(config)).values), events

        out, events = await ask({"query": "Summarize these papers", "document_contents": docs})
        assert out["answer"] == "v1: both papers agree." and types(events)[-1] == "final_answer"

        # The session is the thread, in PostgreSQL's checkpoint tables; nothing in SQLite.
        with psycopg.connect(pg_schema_url) as conn:
            rows = conn.execute("SELECT count(*) FROM checkpoints WHERE thread_id = %s",
                                ("pg-session",)).fetchone()
        assert rows is not None and rows[0] > 0
        assert out["session"]["message_count"] == 2
        assert not (tmp_path / "home" / "scholarflow.db").exists()
        assert not (tmp_path / "home" / "checkpoints.sqlite").exists()
        # Both summaries are in Redis under the shared keys, for 7 days.
        assert await raw_redis.mget(keys) == ["v1 anchors cut memory.", "v1 sections help QA."]
        for key in keys:
            assert await raw_redis.ttl(key) > DEFAULT_TTL_SECONDS - 60

        # The next run, in the same session, takes both from Redis: no summary call.
        fake_llm.configure(rules=summary_rules("v2"))
        calls = summary_calls(fake_llm)
        _, events2 = await ask({"query": "Summarize them again", "document_contents": docs})
        init = next(e for e in events2 if e["type"] == "doc_summary_init")
        assert (init["cached"], init["to_generate"]) == (2, 0)
        assert summary_calls(fake_llm) == calls
        assert "v1 anchors cut memory." in str(fake_llm.stats().requests[-1]["messages"])

        # refresh_summary_cache: summarised anew, and Redis overwritten with a renewed expiry.
        await raw_redis.expire(keys[0], 100)
        out3, _ = await ask({"query": "Summarize once more", "document_contents": docs},
                            Context(refresh_summary_cache=True))
    assert summary_calls(fake_llm) == calls + 2
    assert await raw_redis.mget(keys) == ["v2 anchors cut memory.", "v2 sections help QA."]
    assert await raw_redis.ttl(keys[0]) > DEFAULT_TTL_SECONDS - 60
    assert [m.content for m in out3["messages"]][-2:] == ["Summarize once more", out3["answer"]]
    assert out3["session"]["message_count"] == 6


async def test_graph_without_redis_keeps_the_cache_in_postgres(
    fake_llm: FakeOpenAIServer, pg_schema_url: str, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SCHOLARFLOW_DATABASE_URL", pg_schema_url)
    docs = two_docs("pgcache")
    fake_llm.configure(rules=summary_rules("pg"))
    await run_graph({"query": "Summarize these papers", "document_contents": docs})
    with psycopg.connect(pg_schema_url) as conn:
        rows = conn.execute("SELECT key, value FROM scholarflow_summary_cache ORDER BY key")
        assert rows.fetchall() == sorted(zip(cache_keys(docs),
                                             ["pg anchors cut memory.", "pg sections help QA."],
                                             strict=True))


async def test_redis_lost_mid_run_the_run_completes_without_the_cache(
    fake_llm: FakeOpenAIServer, redis_url: str, redis_doc_prefix: str,
    raw_redis: aioredis.Redis, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
) -> None:
    # Redis answers the cache lookup, then goes away before the summaries are stored.
    target = urlsplit(redis_url)
    proxy = await TcpProxy(target.hostname or "127.0.0.1", target.port or 6379,
                           close_after_reply_to=b"MGET").start()
    monkeypatch.setenv("SCHOLARFLOW_REDIS_URL", f"redis://127.0.0.1:{proxy.port}{target.path}")
    caplog.set_level(logging.WARNING, logger="scholarflow.storage.redis_cache")
    docs = two_docs(redis_doc_prefix)
    fake_llm.configure(rules=summary_rules("lost"))
    try:
        out, events = await run_graph({"query": "Summarize these papers",
                                       "document_contents": docs})
    finally:
        await proxy.close()
    assert proxy.closed.is_set()
    assert out["answer"] == "lost: both papers agree."
    kinds = types(events)
    assert kinds[-1] == "final_answer" and "node_error" not in kinds
    assert "doc_summary_error" not in kinds and kinds.count("doc_summary_complete") == 2
    assert await raw_redis.mget(cache_keys(docs)) == [None, None]  # nothing got through
    lost = [r for r in caplog.records if "lost the connection to Redis" in r.getMessage()]
    assert len(lost) == 1


async def test_unreachable_postgres_in_the_graph_is_a_node_error(
    fake_llm: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Without a checkpointer of ours, the graph reaches PostgreSQL for the summary cache.
    monkeypatch.setenv("SCHOLARFLOW_DATABASE_URL", PG_DOWN)
    fake_llm.configure(rules=summary_rules("x"))
    _out, events = await run_graph({"query": "Summarize these papers",
                                    "document_contents": two_docs("pgdown")})
    message = PG_DOWN_LINE.removeprefix("error: ")
    errors = [e for e in events if e["type"] in ("node_error", "error")]
    assert errors and all(message == (e.get("error") or e.get("message")) for e in errors)
    assert events[-1]["type"] == "error"


async def test_unreachable_redis_in_the_graph_is_a_node_error(
    fake_llm: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SCHOLARFLOW_REDIS_URL", REDIS_DOWN)
    fake_llm.configure(rules=summary_rules("x"))
    _out, events = await run_graph({"query": "Summarize these papers",
                                    "document_contents": two_docs("down")})
    errors = [e for e in events if e["type"] in ("node_error", "error")]
    assert errors and all("SCHOLARFLOW_REDIS_URL" in (e.get("error") or e.get("message"))
                          for e in errors)
    assert events[-1]["type"] == "error"


def _cli(args: Sequence[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "scholarflow.cli", *args], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=60, check=False)


def test_cli_says_one_line_when_a_service_is_down(
    llm_server: FakeOpenAIServer, tmp_path: Path, pg_schema_url: str,
) -> None:
    base = {k: v for k, v in os.environ.items()
            if k not in ("SCHOLARFLOW_DATABASE_URL", "SCHOLARFLOW_REDIS_URL")}
    base |= {"OPENAI_BASE_URL": llm_server.base_url, "OPENAI_API_KEY": "sk-test",
             "SCHOLARFLOW_HOME": str(tmp_path)}
    pg_down = base | {"SCHOLARFLOW_DATABASE_URL": PG_DOWN}
    cases: list[tuple[list[str], dict[str, str], int, list[str]]] = [
        (["ask", "hello"], pg_down, 2, [PG_DOWN_LINE]),
        (["sessions", "list"], pg_down, 2, [PG_DOWN_LINE]),
        (["ask", "hello"], base | {"SCHOLARFLOW_REDIS_URL": REDIS_DOWN}, 2, [REDIS_DOWN_LINE]),
        (["sessions", "list"], base | {"SCHOLARFLOW_DATABASE_URL": pg_schema_url}, 0, []),
    ]
    with ThreadPoolExecutor(len(cases)) as pool:
        results = list(pool.map(lambda c: _cli(c[0], c[1]), cases))
    for (args, _env, code, err), result in zip(cases, results, strict=True):
        assert (result.returncode, result.stderr.splitlines()) == (code, err), (args, result)
        assert "Traceback" not in result.stderr
    assert results[-1].stdout == ""  # no thread yet: the checkpoint tables, created on first use

