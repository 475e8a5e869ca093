"""RecallToolCache: per-document retrievers, LRU, hit and miss counts."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from scholarflow.tools.kb import RecalledChunk, RecallParams
from scholarflow.tools.recall_cache import RECALL_TOOL_CACHE_SIZE, RecallToolCache


class Recorder:
    """A retriever that returns one chunk per document it is asked about."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.calls: list[list[str] | None] = []

    async def search(
        self, query: str, *, doc_ids: Sequence[str] | None, params: RecallParams
    ) -> list[RecalledChunk]:
        self.calls.append(list(doc_ids) if doc_ids is not None else None)
        return [RecalledChunk(d, f"{self.name}:{d}:0", 1.0, query, d, None, None)
                for d in doc_ids or ["any"]]


async def test_tool_searches_only_its_document() -> None:
    kb = Recorder("kb")
    tool = RecallToolCache().get(kb, "kb", "d7")
    hits = await tool.search("q", params=RecallParams())
    assert kb.calls == [["d7"]] and [h.doc_id for h in hits] == ["d7"]
    # A narrower request for another document gets nothing, not d7's chunks.
    assert await tool.search("q", doc_ids=["d8"], params=RecallParams()) == []
    await tool.search("q", doc_ids=["d8", "d7"], params=RecallParams())
    assert kb.calls == [["d7"], ["d7"]]


def test_hits_misses_and_lru_eviction() -> None:
    kb = Recorder("kb")
    cache = RecallToolCache(maxsize=2)
    a = cache.get(kb, "kb", "a")
    b = cache.get(kb, "kb", "b")
    assert cache.get(kb, "kb", "a") is a  # hit; "a" is now the most recent
    cache.get(kb, "kb", "c")  # evicts "b", the least recently used
    assert len(cache) == 2
    assert cache.get(kb, "kb", "a") is a
    assert cache.get(kb, "kb", "b") is not b  # rebuilt
    stats = cache.stats()
    assert (stats.hits, stats.misses, stats.size, stats.maxsize) == (2, 4, 2, 2)


def test_knowledge_bases_never_share_tools() -> None:
    one, two = Recorder("one"), Recorder("two")
    cache = RecallToolCache()
    assert cache.get(one, "one", "d").kb is one
    assert cache.get(two, "two", "d").kb is two
    # The same key with a reopened knowledge base object: rebuilt, not the stale one.
    reopened = Recorder("one")
    assert cache.get(reopened, "one", "d").kb is reopened
    cache.invalidate("one")
    assert len(cache) == 1


def test_default_size_and_validation() -> None:
    assert RecallToolCache().maxsize == RECALL_TOOL_CACHE_SIZE == 100
    cache = RecallToolCache()
    kb = Recorder("kb")
    for i in range(150):
        cache.get(kb, "kb", f"d{i}")
    assert len(cache) == 100
    assert cache.get(kb, "kb", "d149") is cache.get(kb, "kb", "d149")
    with pytest.raises(ValueError):
        RecallToolCache(maxsize=0)
