"""Shared fixtures: a scripted OpenAI-compatible server and a fresh data folder per test."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from scholarflow import Context, build_graph
from scholarflow.llm import limiter
from scholarflow.sessions.registry import close_all
from scholarflow.testing import FakeOpenAIServer
from scholarflow.tools.kb_registry import close_all as close_knowledge_bases

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
    monkeypatch.setenv("OPENAI_BASE_URL", llm_server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    monkeypatch.setenv("SCHOLARFLOW_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("SCHOLARFLOW_MODEL", raising=False)
    # Recall embeddings from the scripted server too: fast, and no local model load.
    monkeypatch.setenv("SCHOLARFLOW_EMBEDDING_MODEL", "fake-embedding")
    monkeypatch.delenv("SCHOLARFLOW_EMBEDDING_BASE_URL", raising=False)
    for name in ("SCHOLARFLOW_ES_URL", "SCHOLARFLOW_RECALL_API_URL", "SCHOLARFLOW_RERANK_MODEL"):
        monkeypatch.delenv(name, raising=False)
    limiter().reset_stats()
    yield llm_server
    await close_all()
    await close_knowledge_bases()


@pytest.fixture
async def no_llm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[None]:
    """No LLM configured at all, and a fresh home."""
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "SCHOLARFLOW_MODEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SCHOLARFLOW_HOME", str(tmp_path / "home"))
    yield
    await close_all()


def paper(name: str) -> str:
    return (EXAMPLES / name).read_text(encoding="utf-8")


async def run_graph(
    payload: dict[str, Any], context: Context | None = None
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Run the graph once: (output state, every custom event, subgraphs included)."""
    graph = build_graph()
    events: list[dict[str, Any]] = []
    final: dict[str, Any] = {}
    async for _ns, mode, chunk in graph.astream(
        payload, context=context, stream_mode=["custom", "values"], subgraphs=True  # type: ignore[arg-type]
    ):
        if mode == "custom":
            events.append(chunk)
        elif not _ns:
            final = chunk
    return final, events


def types(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events]


INTENT_RULE = "You route requests"  # a phrase of INTENT_RECOGNITION_PROMPT
SUMMARY_RULE = "Condense the academic document"  # DOCUMENT_CONDENSED_SUMMARY_PROMPT
