"""Shared fixtures: a scripted OpenAI-compatible server and a fresh data folder per test."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from scholarflow import Context, build_graph
from scholarflow.llm.calls import limiter
from scholarflow.retrieval.kb_registry import close_all as close_knowledge_bases
from scholarflow.settings import SETTINGS
from scholarflow.storage.cache_registry import close_all
from tests.support import FakeOpenAIServer

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "papers"


@pytest.fixture(scope="session")
def llm_server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


@pytest.fixture
async def fake_llm(
    llm_server: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[FakeOpenAIServer]:
    """The scripted server, reset, with the environment pointing at it and a fresh home."""
    llm_server.reset()
    scholarflow_environment(
        monkeypatch, OPENAI_BASE_URL=llm_server.base_url, OPENAI_API_KEY="sk-test-not-a-real-key",
        SCHOLARFLOW_HOME=str(tmp_path / "home"),
        # Recall embeddings from the scripted server too: fast, and no local model load.
        SCHOLARFLOW_EMBEDDING_MODEL="fake-embedding")
    limiter().reset()  # no limit halved by an earlier test's 429s
    yield llm_server
    await close_all()
    await close_knowledge_bases()


@pytest.fixture
async def no_llm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[None]:
    """No LLM configured at all, and a fresh home."""
    scholarflow_environment(monkeypatch, SCHOLARFLOW_HOME=str(tmp_path / "home"))
    yield
    await close_all()


def scholarflow_environment(monkeypatch: pytest.MonkeyPatch, **variables: str) -> None:
    """These variables of scholarflow's settings set, every other one unset: the
    developer's own (a key, a timeout, a service URL) must not change what a test sees.
    The settings follow the environment (get_settings() is never stale): nothing to reset."""
    for setting in SETTINGS:
        monkeypatch.delenv(setting.env, raising=False)
    for name, value in variables.items():
        monkeypatch.setenv(name, value)


def paper(name: str) -> str:
    return (EXAMPLES / name).read_text(encoding="utf-8")


def big_paper() -> str:
    """A paper with 30 filler appendices: over small_context(), so a summary uses key chunks."""
    return paper("en_sparse_attention.md") + "\n\n" + "\n\n".join(
        f"## Appendix {i}\n\n" + "Filler sentence about nothing in particular. " * 60
        for i in range(30))


def small_context() -> Context:
    """A context big_paper() does not fit. A function, not a constant: Context reads the
    environment when built, and fake_llm sets it only inside the test."""
    return Context(max_context_tokens=14_000, reserved_answer_tokens=4_000,
                   system_tokens_estimate=500)


_threads: Any = None


async def run_graph(
    payload: dict[str, Any], context: Context | None = None
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Run the graph once on a new thread: (its state at the end, every custom event,
    subgraphs included). A run that fails raises its typed error: this checks that it did,
    with the message the state's `error` says, and returns the state all the same."""
    from langgraph.checkpoint.memory import InMemorySaver

    from scholarflow.errors import ScholarflowError

    global _threads
    _threads = _threads or InMemorySaver()  # one for all: a session_id continues its thread
    graph = build_graph(checkpointer=_threads)
    config: Any = {"configurable": {"thread_id": payload.get("session_id") or uuid.uuid4().hex}}
    events: list[dict[str, Any]] = []
    raised: ScholarflowError | None = None
    try:
        async for _ns, mode, chunk in graph.astream(
            payload, config, context=context, stream_mode=["custom", "values"],
            subgraphs=True,
        ):
            if mode == "custom":
                events.append(chunk)
    except ScholarflowError as exc:
        raised = exc
    final = dict((await graph.aget_state(config)).values)
    if raised is not None and not final.get("error"):
        raise raised  # refused before the run started (the request's validation)
    if final.get("error"):
        assert raised is not None and str(raised) == final["error"], (raised, final["error"])
    return final, events


def types(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events]


INTENT_RULE = "You route requests"  # a phrase of INTENT_RECOGNITION_PROMPT
SUMMARY_RULE = "Condense the academic document"  # DOCUMENT_CONDENSED_SUMMARY_PROMPT


# PostgreSQL and Redis: the local services (CI has them too). Unreachable:
# skipped on a developer's machine, a failure under CI.
TEST_DATABASE_URL = os.environ.get(
    "SCHOLARFLOW_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test"
)
TEST_REDIS_URL = os.environ.get("SCHOLARFLOW_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


def _service_missing(what: str, exc: Exception) -> None:
    message = f"{what} is not reachable: {exc}"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="session")
def postgres_url() -> str:
    import psycopg

    try:
        psycopg.connect(TEST_DATABASE_URL, connect_timeout=3).close()
    except psycopg.OperationalError as exc:
        _service_missing(f"PostgreSQL at {TEST_DATABASE_URL}", exc)
    return TEST_DATABASE_URL


@pytest.fixture
def pg_schema(postgres_url: str) -> Iterator[str]:
    """A unique schema name for one test; the schema and its tables are dropped afterwards."""
    import psycopg

    name = f"sf_test_{uuid.uuid4().hex[:12]}"
    yield name
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        # Bounded: a connection the test left in a transaction must not hang the run.
        conn.execute("SET lock_timeout = '10s'")
        conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


@pytest.fixture
def pg_schema_url(postgres_url: str, pg_schema: str) -> str:
    """The test database's URL with search_path set to a fresh schema (created here)."""
    import psycopg

    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{pg_schema}"')
    return f"{postgres_url}?options=-csearch_path%3D{pg_schema}"


@pytest.fixture(scope="session")
def redis_url() -> str:
    import redis

    try:
        redis.Redis.from_url(TEST_REDIS_URL, socket_connect_timeout=3).ping()
    except redis.RedisError as exc:
        _service_missing(f"Redis at {TEST_REDIS_URL}", exc)
    return TEST_REDIS_URL


@pytest.fixture
def redis_doc_prefix(redis_url: str) -> Iterator[str]:
    """A unique doc_id prefix; every `doc_summary:<prefix>*` key is deleted afterwards."""
    import redis

    prefix = f"sftest-{uuid.uuid4().hex[:10]}"
    yield prefix
    client = redis.Redis.from_url(redis_url)
    keys = list(client.scan_iter(f"doc_summary:{prefix}*", count=1000))
    if keys:
        client.delete(*keys)
    client.close()


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Under pytest-xdist (scripts/test.sh runs -n 3): each module runs on one worker, so
    its module-scoped servers and fixtures start once; and the modules that use the test
    PostgreSQL database or `langgraph dev` all run on one worker, one after another, as
    without xdist: they share the database's public schema (an open transaction there holds
    up CREATE INDEX CONCURRENTLY anywhere in it) and ./.langgraph_api (every `langgraph dev`
    started in the repository keeps its threads there)."""
    import re
    from functools import cache

    from xdist.scheduler import LoadScopeScheduling

    shared = re.compile(r"langgraph_dev|postgres_url|pg_schema|TEST_DATABASE_URL")

    @cache
    def uses_shared_services(path: str) -> bool:
        try:
            return bool(shared.search((config.rootpath / path).read_text(encoding="utf-8")))
        except OSError:
            return False

    class Scheduling(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return "shared services" if uses_shared_services(path) else path

    return Scheduling(config, log)
