"""Knowledge bases: the small interface every backend implements.

A knowledge base holds ingested documents, their whole text (for
full_content and summaries) and their chunks (for recall). Backends: the
embedded on-disk index (default, under SCHOLARFLOW_HOME) and Elasticsearch
(SCHOLARFLOW_ES_URL); the HTTP recall API implements `Retriever` only.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal, Protocol

from scholarflow.errors import InputError


class KnowledgeBaseNotFoundError(InputError):
    """`--kb NAME` names no knowledge base."""


class DocumentNotFoundError(InputError):
    """`--doc ID` names no document of the knowledge base."""


ChunkKind = Literal["body", "references"]


@dataclass(frozen=True, slots=True)
class Chunk:
    """A piece of a document, cut along its structure."""

    chunk_id: str  # f"{doc_id}:{n:05d}", unique within a knowledge base
    doc_id: str
    n: int  # position in the document, from 0
    text: str
    tokens: int
    heading: str | None  # the nearest heading path, e.g. "3 Method > 3.2 Training"
    page: int | None  # 1-based page of a PDF, else None
    # "references": part of a reference list (bibliography); recall serves it only to a
    # question about what a paper cites (RecallParams.include_references).
    kind: ChunkKind = "body"


@dataclass(frozen=True, slots=True)
class StoredDocument:
    doc_id: str
    title: str
    source: str | None
    content_hash: str
    tokens: int
    chunks: int
    # What the paper says of itself, when it does (a PDF's first page, its metadata).
    authors: tuple[str, ...] = ()
    year: int | None = None
    doi: str | None = None
    pages: int | None = None  # a PDF's page count
    added: str | None = None  # ISO 8601 UTC time the knowledge base stored it


def now_utc() -> str:
    """`StoredDocument.added` for a document stored now: ISO 8601, UTC, to the second."""
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass(frozen=True, slots=True)
class KnowledgeBaseInfo:
    """One line of `scholarflow kb list`."""

    name: str
    documents: int
    chunks: int
    backend: Literal["embedded", "elasticsearch"]


@dataclass(frozen=True, slots=True)
class RecallParams:
    top_n: int = 10
    similarity_threshold: float = 0.2
    vector_similarity_weight: float = 0.3
    use_rerank: bool = False
    # Reference-list chunks are left out unless the question is about what is cited.
    include_references: bool = False


@dataclass(frozen=True, slots=True)
class RecalledChunk:
    doc_id: str
    chunk_id: str
    score: float
    text: str
    title: str
    heading: str | None
    page: int | None
    kind: ChunkKind = "body"

    @property
    def location(self) -> str:
        """Where the chunk is, for a citation: page and/or heading."""
        parts = [f"p. {self.page}"] if self.page else []
        if self.heading:
            parts.append(self.heading)
        return ", ".join(parts) or f"chunk {self.chunk_id}"


def best_per_chunk(chunks: Iterable[RecalledChunk], top_n: int) -> list[RecalledChunk]:
    """The `top_n` best, each chunk once at its highest score (it may be found by several
    searches); ties keep the order found."""
    best: dict[str, RecalledChunk] = {}
    for chunk in chunks:
        if chunk.chunk_id not in best or chunk.score > best[chunk.chunk_id].score:
            best[chunk.chunk_id] = chunk
    return sorted(best.values(), key=lambda c: -c.score)[:top_n]


class Retriever(Protocol):
    """Anything that recalls chunks for a query."""

    async def search(
        self, query: str, *, doc_ids: Sequence[str] | None, params: RecallParams
    ) -> list[RecalledChunk]:
        """Best first; only chunks of `doc_ids` when given; none under the threshold."""
        ...


class KnowledgeBase(Retriever, Protocol):
    name: str

    async def add(
        self, document: StoredDocument, text: str, chunks: Sequence[Chunk], *,
        replaces: Sequence[str] = (),
    ) -> bool:
        """Store a document atomically; False (and nothing changed) if it is already there.

        `replaces`: doc_ids of earlier versions of the same file, removed once
        this one is stored (the embedded index: in the same transaction).
        Reference-list chunks are stored without embedding them."""
        ...

    async def remove(self, doc_id: str) -> None:
        """Delete a document with its text and chunks; DocumentNotFoundError when absent."""
        ...

    async def info(self) -> KnowledgeBaseInfo:
        """Its name, number of documents and chunks, and backend."""
        ...

    async def documents(self, doc_ids: Sequence[str] | None = None) -> list[StoredDocument]:
        ...

    async def document_text(self, doc_id: str) -> str:
        """The whole text; DocumentNotFoundError when absent."""
        ...

    async def close(self) -> None: ...
