"""RecallToolCache (docs/architecture.md#recall): open knowledge bases, least recently used out.

What recall costs to set up is opening a knowledge base, not wrapping one: an
embedded index holds a SQLite connection and, from its first search, its
search arrays (vectors and BM25 postings: 150 MB at 100k chunks); an
Elasticsearch knowledge base holds a client and its connection pool. The
cache keeps up to `Context.recall_tool_cache_size` of them open, shared by
every sub-question, document and request of the process
(`scholarflow.retrieval.kb_registry` opens through it); the least recently used
is closed and dropped when one more comes in.

`DocumentRetriever`, the one-document view a recall step searches through,
is one small object around an open knowledge base: it is made per use, not
cached.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from scholarflow.retrieval.kb import RecalledChunk, RecallParams, Retriever

RECALL_TOOL_CACHE_SIZE = 100

logger = logging.getLogger(__name__)


class DocumentRetriever:
    """A retriever bound to one document of a knowledge base."""

    def __init__(self, kb: Retriever, doc_id: str) -> None:
        self.kb = kb
        self.doc_id = doc_id

    async def search(
        self, query: str, *, doc_ids: Sequence[str] | None = None, params: RecallParams
    ) -> list[RecalledChunk]:
        """Always this document's chunks; `doc_ids` can only narrow it (to nothing)."""
        if doc_ids is not None and self.doc_id not in doc_ids:
            return []
        return await self.kb.search(query, doc_ids=[self.doc_id], params=params)


class Closable(Protocol):
    async def close(self) -> None: ...


T = TypeVar("T", bound=Closable)


@dataclass(frozen=True, slots=True)
class CacheStats:
    hits: int
    misses: int
    size: int
    maxsize: int


class RecallToolCache(Generic[T]):
    """LRU of open knowledge bases (anything with `close()`), keyed by what names one.

    The key names the knowledge base and where it lives (its folder; the
    Elasticsearch URL, name and embedder), so two never share an entry. An
    evicted, replaced or discarded one is closed: its connections go at once,
    and its arrays with the last task still searching it.
    """

    def __init__(self, maxsize: int = RECALL_TOOL_CACHE_SIZE) -> None:
        if maxsize < 1:
            raise ValueError("RecallToolCache needs room for at least one knowledge base")
        self.maxsize = maxsize
        self._open: OrderedDict[Hashable, T] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def get(self, key: Hashable) -> T | None:
        """The open one under `key`, now the most recently used; None (a miss) when none."""
        found = self._open.get(key)
        if found is None:
            self.misses += 1
            return None
        self.hits += 1
        self._open.move_to_end(key)
        return found

    async def put(self, key: Hashable, value: T) -> None:
        """Keep `value` under `key`, closing the one it replaces and any it evicts."""
        old = self._open.get(key)
        self._open[key] = value
        self._open.move_to_end(key)
        await self._close_all(([old] if old is not None and old is not value else [])
                              + self._surplus())

    async def open(self, key: Hashable, opener: Callable[[], Awaitable[T]]) -> T:
        """The open one under `key`, or `opener()`'s, kept."""
        found = self.get(key)
        if found is not None:
            return found
        value = await opener()
        raced = self._open.get(key)
        if raced is not None:  # another task opened it meanwhile: one stays open, theirs
            self._open.move_to_end(key)
            await self._close_all([value])
            return raced
        await self.put(key, value)
        return value

    async def resize(self, maxsize: int) -> None:
        """Room for `maxsize`; the least recently used beyond it are closed."""
        if maxsize < 1:
            raise ValueError("RecallToolCache needs room for at least one knowledge base")
        self.maxsize = maxsize
        await self._close_all(self._surplus())

    async def discard(self, key: Hashable) -> None:
        """Close and forget the one under `key` (no error when there is none)."""
        found = self._open.pop(key, None)
        if found is not None:
            await self._close_all([found])

    async def clear(self) -> None:
        """Close and forget every one; a failing close is raised after the others closed."""
        opened = list(self._open.values())
        self._open.clear()
        failure: BaseException | None = None
        for value in opened:
            try:
                await value.close()
            except Exception as exc:  # the others still close
                failure = failure or exc
        if failure is not None:
            raise failure

    def _surplus(self) -> list[T]:
        surplus = []
        while len(self._open) > self.maxsize:
            surplus.append(self._open.popitem(last=False)[1])
        return surplus

    @staticmethod
    async def _close_all(values: list[T]) -> None:
        # Housekeeping: a close that fails must not fail the request that opened another.
        for value in values:
            try:
                await value.close()
            except Exception as exc:
                logger.warning("closing an evicted knowledge base failed: %s", exc)

    def __len__(self) -> int:
        return len(self._open)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._open

    def stats(self) -> CacheStats:
        return CacheStats(self.hits, self.misses, len(self._open), self.maxsize)
