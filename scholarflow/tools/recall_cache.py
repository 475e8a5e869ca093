"""RecallToolCache (seed 004, 6.5): per-document recall tools, least recently used out.

Recall "per document" (PAPER_REVIEW and LITERATURE_QA over several
documents) asks the same documents again and again across sub-questions and
requests; the cache hands back the same small wrapper for a (knowledge base,
document) pair instead of building a new one each time.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

from scholarflow.tools.kb import RecalledChunk, RecallParams, Retriever

RECALL_TOOL_CACHE_SIZE = 100


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


@dataclass(frozen=True, slots=True)
class CacheStats:
    hits: int
    misses: int
    size: int
    maxsize: int


class RecallToolCache:
    """LRU of `DocumentRetriever`s keyed by (kb_key, doc_id).

    `kb_key` names the knowledge base (its name, or the recall API URL and
    index names): two knowledge bases never share a cached tool, so one never
    answers with the other's chunks.
    """

    def __init__(self, maxsize: int = RECALL_TOOL_CACHE_SIZE) -> None:
        if maxsize < 1:
            raise ValueError("RecallToolCache needs room for at least one tool")
        self.maxsize = maxsize
        self._tools: OrderedDict[tuple[str, str], DocumentRetriever] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def get(self, kb: Retriever, kb_key: str, doc_id: str) -> DocumentRetriever:
        key = (kb_key, doc_id)
        tool = self._tools.get(key)
        # A knowledge base reopened under the same key (closed and opened
        # again) must not be served through a tool holding the old one.
        if tool is not None and tool.kb is kb:
            self.hits += 1
            self._tools.move_to_end(key)
            return tool
        self.misses += 1
        tool = DocumentRetriever(kb, doc_id)
        self._tools[key] = tool
        self._tools.move_to_end(key)
        while len(self._tools) > self.maxsize:
            self._tools.popitem(last=False)
        return tool

    def invalidate(self, kb_key: str) -> None:
        """Forget every tool of one knowledge base (it was closed or deleted)."""
        for key in [k for k in self._tools if k[0] == kb_key]:
            del self._tools[key]

    def clear(self) -> None:
        self._tools.clear()

    def __len__(self) -> int:
        return len(self._tools)

    def stats(self) -> CacheStats:
        return CacheStats(self.hits, self.misses, len(self._tools), self.maxsize)
