"""RecallToolCache: the open knowledge bases, LRU, hit and miss counts, closing what leaves;
and the per-document retriever, made per use around an open one."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path

import pytest

from scholarflow.retrieval import kb_registry
from scholarflow.retrieval.index.embedded import EmbeddedKnowledgeBase
from scholarflow.retrieval.kb import RecalledChunk, RecallParams
from scholarflow.retrieval.recall_cache import (
    RECALL_TOOL_CACHE_SIZE,
    DocumentRetriever,
    RecallToolCache,
)
from tests.support.embeddings import HashingEmbedder


class Recorder:
    """A knowledge base that returns one chunk per document it is asked about."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.calls: list[list[str] | None] = []
        self.closed = 0

    async def search(
        self, query: str, *, doc_ids: Sequence[str] | None, params: RecallParams
    ) -> list[RecalledChunk]:
        self.calls.append(list(doc_ids) if doc_ids is not None else None)
        return [RecalledChunk(d, f"{self.name}:{d}:0", 1.0, query, d, None, None)
                for d in doc_ids or ["any"]]

    async def close(self) -> None:
        self.closed += 1


def opener(name: str) -> Callable[[], Awaitable[Recorder]]:
    """Opens a new Recorder each call, as opening a knowledge base again would."""
    async def open_() -> Recorder:
        return Recorder(name)
    return open_


async def test_tool_searches_only_its_document() -> None:
    kb = Recorder("kb")
    tool = DocumentRetriever(kb, "d7")
    hits = await tool.search("q", params=RecallParams())
    assert kb.calls == [["d7"]] and [h.doc_id for h in hits] == ["d7"]
    # A narrower request for another document gets nothing, not d7's chunks.
    assert await tool.search("q", doc_ids=["d8"], params=RecallParams()) == []
    await tool.search("q", doc_ids=["d8", "d7"], params=RecallParams())
    assert kb.calls == [["d7"], ["d7"]]


async def test_hits_misses_and_lru_eviction() -> None:
    cache: RecallToolCache[Recorder] = RecallToolCache(maxsize=2)
    a = await cache.open("a", opener("a"))
    b = await cache.open("b", opener("b"))
    assert await cache.open("a", opener("a")) is a  # hit; "a" is now the most recent
    await cache.open("c", opener("c"))  # evicts "b", the least recently used
    assert len(cache) == 2
    assert await cache.open("a", opener("a")) is a
    assert await cache.open("b", opener("b")) is not b  # opened again
    stats = cache.stats()
    assert (stats.hits, stats.misses, stats.size, stats.maxsize) == (2, 4, 2, 2)


async def test_eviction_closes_and_drops_the_open_knowledge_base() -> None:
    cache: RecallToolCache[Recorder] = RecallToolCache(maxsize=2)
    a, b = await cache.open("a", opener("a")), await cache.open("b", opener("b"))
    c = await cache.open("c", opener("c"))
    assert (a.closed, b.closed, c.closed) == (1, 0, 0) and "a" not in cache
    await cache.resize(1)  # smaller: the least recently used beyond it go too
    assert (b.closed, c.closed) == (1, 0) and "b" not in cache and cache.get("c") is c
    await cache.discard("c")
    await cache.clear()
    assert c.closed == 1 and len(cache) == 0


async def test_knowledge_bases_never_share_tools() -> None:
    one, two = Recorder("one"), Recorder("two")
    cache: RecallToolCache[Recorder] = RecallToolCache()
    await cache.put("one", one)
    await cache.put("two", two)
    assert cache.get("one") is one and cache.get("two") is two
    # The same key with a reopened knowledge base object: it replaces (and closes) the stale one.
    reopened = Recorder("one")
    await cache.put("one", reopened)
    assert cache.get("one") is reopened and one.closed == 1
    await cache.discard("one")
    assert len(cache) == 1 and reopened.closed == 1


async def test_a_racing_open_keeps_one() -> None:
    cache: RecallToolCache[Recorder] = RecallToolCache()
    first = Recorder("kb")

    async def slow_open() -> Recorder:
        await cache.put("kb", first)  # another task finished opening meanwhile
        return Recorder("kb")

    assert await cache.open("kb", slow_open) is first and len(cache) == 1


async def test_default_size_and_validation() -> None:
    assert RecallToolCache().maxsize == RECALL_TOOL_CACHE_SIZE == 100
    cache: RecallToolCache[Recorder] = RecallToolCache()
    for i in range(150):
        await cache.open(f"d{i}", opener(f"d{i}"))
    assert len(cache) == 100
    assert await cache.open("d149", opener("d149")) is await cache.open("d149", opener("d149"))
    with pytest.raises(ValueError):
        RecallToolCache(maxsize=0)


@pytest.fixture
async def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Path]:
    monkeypatch.setenv("SCHOLARFLOW_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("SCHOLARFLOW_ES_URL", raising=False)
    yield tmp_path / "home"
    await kb_registry.close_all()
    await kb_registry.limit_open(RECALL_TOOL_CACHE_SIZE)


async def test_the_registry_closes_the_knowledge_base_it_evicts(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    embedder = HashingEmbedder()
    await kb_registry.limit_open(1)
    first = await kb_registry.open_knowledge_base("one", create=True, embedder=embedder)
    assert isinstance(first, EmbeddedKnowledgeBase)
    closed: list[str] = []
    close = first.close

    async def recorded_close() -> None:
        closed.append(first.name)
        await close()

    monkeypatch.setattr(first, "close", recorded_close)
    assert await kb_registry.open_knowledge_base("one") is first  # shared while it stays
    await kb_registry.open_knowledge_base("two", create=True, embedder=embedder)
    assert closed == ["one"]  # evicted: closed
    assert kb_registry.open_stats().size == 1
    again = await kb_registry.open_knowledge_base("one", embedder=embedder)
    assert again is not first  # dropped: opened anew
