"""Documents of an Elasticsearch knowledge base: records, listing, counting and removal.

The `doc` record of a document carries the StoredDocument fields and its
whole text; it is written after the chunks and removed before them, so it
marks a document as present (see `elastic`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from elasticsearch import AsyncElasticsearch

from scholarflow.retrieval.index.elastic_client import es_errors
from scholarflow.retrieval.index.elastic_mapping import ADDED_PROPERTIES
from scholarflow.retrieval.kb import StoredDocument, now_utc

DOC_SOURCE = ["doc_id", "title", "source", "content_hash", "tokens", "chunks",
              "authors", "year", "doi", "pages", "added"]
DOCUMENTS_PAGE = 1000  # doc records per request when listing; search_after pages on


def doc_record(document: StoredDocument, text: str) -> dict[str, Any]:
    """The `doc` record of a document about to be stored (`added`: now, unless given)."""
    return {"kind": "doc", "doc_id": document.doc_id, "title": document.title,
            "source": document.source, "content_hash": document.content_hash,
            "tokens": document.tokens, "chunks": document.chunks,
            "authors": list(document.authors), "year": document.year, "doi": document.doi,
            "pages": document.pages, "added": document.added or now_utc(), "content": text}


def stored_document(source: dict[str, Any]) -> StoredDocument:
    """A `doc` record's StoredDocument; records written before the newer fields lack them."""
    values: dict[str, Any] = {k: source.get(k) for k in DOC_SOURCE}
    values["authors"] = tuple(values["authors"] or ())
    return StoredDocument(**values)


async def upgrade_mapping(client: AsyncElasticsearch, index: str,
                          properties: dict[str, Any]) -> None:
    """Add the fields an index made by an older version lacks (a no-op when it has them)."""
    missing = {k: v for k, v in ADDED_PROPERTIES.items() if k not in properties}
    if missing:
        await client.indices.put_mapping(index=index, properties=missing)


async def list_documents(client: AsyncElasticsearch, index: str, url: str,
                         doc_ids: Sequence[str] | None) -> dict[str, StoredDocument]:
    """The doc records (of `doc_ids` when given), paged in doc_id order with search_after:
    one search stops at 10,000 hits."""
    filters: list[dict[str, Any]] = [{"term": {"kind": "doc"}}]
    if doc_ids is not None:
        filters.append({"terms": {"doc_id": list(doc_ids)}})
    found: dict[str, StoredDocument] = {}
    after: list[Any] | None = None
    async with es_errors(url, "list documents"):
        while True:
            response = await client.search(
                index=index, query={"bool": {"filter": filters}},
                source_includes=DOC_SOURCE, size=DOCUMENTS_PAGE, sort=[{"doc_id": "asc"}],
                search_after=after)
            hits = response["hits"]["hits"]
            for hit in hits:
                found[hit["_source"]["doc_id"]] = stored_document(hit["_source"])
            if len(hits) < DOCUMENTS_PAGE:
                break
            after = hits[-1]["sort"]
    return found


async def count_records(client: AsyncElasticsearch, index: str, url: str) -> tuple[int, int]:
    """(documents, chunks): the doc and chunk records."""
    counts = []
    async with es_errors(url, "count documents"):
        for kind in ("doc", "chunk"):
            response = await client.count(index=index, query={"term": {"kind": kind}})
            counts.append(int(response["count"]))
    return counts[0], counts[1]


async def delete_documents(client: AsyncElasticsearch, index: str, url: str,
                           doc_ids: Sequence[str]) -> None:
    """Delete documents: their doc records first (they stop counting as present),
    then their chunks, each in one request refreshed before it returns."""
    if not doc_ids:
        return
    ids = list(dict.fromkeys(doc_ids))
    async with es_errors(url, f"remove document {ids[0]}"):
        for kind in ("doc", "chunk"):
            query = {"bool": {"filter": [{"term": {"kind": kind}}, {"terms": {"doc_id": ids}}]}}
            await client.delete_by_query(index=index, query=query, refresh=True,
                                         conflicts="proceed")
