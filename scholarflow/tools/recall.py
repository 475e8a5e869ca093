"""Recall over a knowledge base: the seam the chunk_recall branch calls.

Knowledge bases (`scholarflow ingest`, the embedded index, Elasticsearch, the
HTTP recall API) are not built yet, so asking for a retriever says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from scholarflow.context import Context
from scholarflow.errors import KnowledgeBaseNotConfiguredError
from scholarflow.state import State


@dataclass(frozen=True, slots=True)
class RecalledChunk:
    doc_id: str
    chunk_id: str
    score: float
    text: str
    title: str
    location: str


class Retriever(Protocol):
    async def search(
        self, query: str, *, doc_ids: list[str] | None, top_n: int
    ) -> list[RecalledChunk]: ...


def get_retriever(ctx: Context, state: State) -> Retriever:
    """The retriever for this request's knowledge base."""
    kb = state.get("kb")
    what = f"knowledge base {kb!r} is" if kb else "no knowledge base is"
    raise KnowledgeBaseNotConfiguredError(
        f"{what} configured, and this question needs recall (strategy chunk_recall: "
        "several documents, or one too large to read whole); knowledge bases are not "
        "built yet: ask about one document that fits, or ask for a summary or review"
    )
