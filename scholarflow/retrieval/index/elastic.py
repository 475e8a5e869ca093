"""Elasticsearch knowledge base (SCHOLARFLOW_ES_URL): one index per knowledge base.

Chunks and documents live in the same index, told apart by `kind`: a `doc`
record carries the whole text and the StoredDocument fields and is written
last, so it is the commit marker of `add` (no doc record, no document).

Recall is hybrid, scored as in the embedded index (`hybrid`):
`score = (1-w) * lexical + w * cosine / best cosine`, `w = vector_similarity_weight`,
where `lexical` is BM25 over the query and its dictionary translation, each
normalised by its bound (`elastic_query`: one `_mtermvectors` gives the
document frequencies). One `_msearch` fetches the lexical top candidates
and the kNN top candidates (whose first is the best cosine); a second one
fills in the exact missing half of each candidate's score (cosine by
`script_score` for lexical-only hits, the lexical query for kNN-only hits),
so a chunk's score does not depend on which list it happened to come from.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence
from contextlib import suppress
from typing import Any

import numpy as np
from elastic_transport import TransportError
from elasticsearch import ApiError, AsyncElasticsearch, ConflictError, NotFoundError

from scholarflow.errors import ConfigurationError, InputError
from scholarflow.retrieval.embeddings import Embedder, Vectors
from scholarflow.retrieval.index import elastic_docs
from scholarflow.retrieval.index.crosslingual import lexical_query
from scholarflow.retrieval.index.elastic_client import (
    ENV_URL,
    INDEX_PREFIX,
    ElasticsearchError,
    connect,
    es_errors,
    index_name,
)
from scholarflow.retrieval.index.elastic_mapping import index_body
from scholarflow.retrieval.index.elastic_query import FIELD, lexical_clause, statistics_documents
from scholarflow.retrieval.index.hybrid import hybrid_scores
from scholarflow.retrieval.index.tokenize import has_words, without_option_pointers
from scholarflow.retrieval.kb import (
    Chunk,
    DocumentNotFoundError,
    KnowledgeBaseInfo,
    KnowledgeBaseNotFoundError,
    RecalledChunk,
    RecallParams,
    StoredDocument,
)
from scholarflow.retrieval.rerank import rerank

BULK_BATCH = 200  # chunks per _bulk request: ~2-5 MB with 1024-dim vectors, far under 100 MB
CHUNK_SOURCE = ["doc_id", "chunk_id", "n", "text", "title", "heading", "page", "chunk_kind"]
# Cosine for BM25-only candidates; +1 because ES rejects negative scores. A
# chunk stored without a vector (empty text) counts as cosine 0.
COSINE_SCRIPT = ("doc['vector'].size() == 0 ? 1.0 : "
                 "cosineSimilarity(params.query_vector, 'vector') + 1.0")


class ElasticsearchKnowledgeBase:
    """A knowledge base in one Elasticsearch index; see the module docstring."""

    def __init__(self, name: str, *, client: AsyncElasticsearch, embedder: Embedder,
                 url: str) -> None:
        self.name = name
        self.index = index_name(name)
        self._client = client
        self._embedder = embedder
        self._url = url

    @classmethod
    async def open(
        cls, name: str, *, create: bool, embedder: Embedder, url: str | None = None,
        request_timeout: float = 30.0,
    ) -> ElasticsearchKnowledgeBase:
        """Connect and check the index; create it when `create`, else KnowledgeBaseNotFoundError."""
        client, url = connect(url, request_timeout)
        kb = cls(name, client=client, embedder=embedder, url=url)
        try:
            await kb._prepare(create)
        except BaseException:
            await client.close()
            raise
        return kb

    @classmethod
    async def list_names(cls, url: str | None = None) -> list[str]:
        """The knowledge bases on the cluster, read from their indices' `_meta`."""
        client, url = connect(url)
        try:
            return sorted(await _named_indices(client, url))
        finally:
            await client.close()

    @classmethod
    async def describe_all(cls, url: str | None = None) -> list[KnowledgeBaseInfo]:
        """Every knowledge base on the cluster with its counts (no embedder check)."""
        client, url = connect(url)
        try:
            infos = []
            for name, index in sorted((await _named_indices(client, url)).items()):
                documents, chunks = await elastic_docs.count_records(client, index, url)
                infos.append(KnowledgeBaseInfo(name, documents, chunks, "elasticsearch"))
        finally:
            await client.close()
        return infos

    async def _prepare(self, create: bool) -> None:
        async with es_errors(self._url, "open the knowledge base"):
            if await self._client.indices.exists(index=self.index):
                mapping = (await self._client.indices.get_mapping(index=self.index))[self.index]
                self._check_meta(mapping["mappings"].get("_meta", {}))
                await elastic_docs.upgrade_mapping(self._client, self.index,
                                                   mapping["mappings"].get("properties", {}))
                return
            if not create:
                raise KnowledgeBaseNotFoundError(
                    f"knowledge base {self.name!r} does not exist on {ENV_URL} "
                    f"(no index {self.index}); `scholarflow ingest --kb {self.name}` creates it")
            # An endpoint embedder knows its dimension only after a first call.
            dims = self._embedder.dim or len(await self._embedder.embed_query("dimensions"))
            body = index_body(self.name, self._embedder, dims)
            try:
                await self._client.indices.create(index=self.index, **body)
            except ApiError as exc:  # fine if another process created it meanwhile
                if exc.error != "resource_already_exists_exception":
                    raise

    def _check_meta(self, meta: dict[str, Any]) -> None:
        owner = meta.get("scholarflow_kb")
        if owner is not None and owner != self.name:
            raise ElasticsearchError(f"index {self.index} belongs to knowledge base {owner!r}")
        # Vectors of two embedders are not comparable, even at equal dimensions.
        stored = meta.get("embedder")
        if stored is not None and stored != self._embedder.name:
            raise ConfigurationError(
                f"knowledge base {self.name!r} was indexed with the embedder {stored}; the "
                f"embedder now is {self._embedder.name}: use the same one "
                "(SCHOLARFLOW_EMBEDDING_MODEL) or ingest into a new knowledge base")

    async def add(self, document: StoredDocument, text: str, chunks: Sequence[Chunk], *,
                  replaces: Sequence[str] = ()) -> bool:
        """Store a document; False (and nothing changed) if it is already there.

        Chunks first, with deterministic ids and op_type create (a retry never
        duplicates one), the doc record last. If a chunk fails, this document's
        chunks are deleted again: never half a document, no other one touched.
        The documents of `replaces` are removed once the new one is in: a reader
        may see both for a moment, never neither."""
        doc_key = f"doc:{document.doc_id}"
        async with es_errors(self._url, f"add document {document.doc_id}"):
            if await self._client.exists(index=self.index, id=doc_key):
                return False
        # Reference lists are not embedded: BM25 finds them when a question asks for them.
        embedded = [c for c in chunks if c.kind != "references"]
        texts = [c.text for c in embedded]
        by_chunk: dict[str, Vectors] = {}
        if texts:
            vectors = await self._embedder.embed_passages(texts)
            by_chunk = dict(zip((c.chunk_id for c in embedded), vectors, strict=True))
        try:
            for at in range(0, len(chunks), BULK_BATCH):
                await self._bulk_chunks(document, chunks[at : at + BULK_BATCH], by_chunk)
            async with es_errors(self._url, f"add document {document.doc_id}"):
                try:
                    await self._client.create(index=self.index, id=doc_key,
                                              document=elastic_docs.doc_record(document, text),
                                              refresh="wait_for")
                except ConflictError:
                    return False  # a concurrent add of the same document won
        except BaseException:
            # Shielded: a cancelled ingest must still remove what it wrote.
            await asyncio.shield(self._remove_chunks(document.doc_id))
            raise
        await elastic_docs.delete_documents(self._client, self.index, self._url,
                                            [d for d in replaces if d != document.doc_id])
        return True

    async def remove(self, doc_id: str) -> None:
        """Delete a document (its doc record first, then its chunks)."""
        async with es_errors(self._url, f"remove document {doc_id}"):
            if not await self._client.exists(index=self.index, id=f"doc:{doc_id}"):
                raise DocumentNotFoundError(
                    f"no document {doc_id!r} in knowledge base {self.name!r}")
        await elastic_docs.delete_documents(self._client, self.index, self._url, [doc_id])

    async def info(self) -> KnowledgeBaseInfo:
        documents, chunks = await elastic_docs.count_records(self._client, self.index, self._url)
        return KnowledgeBaseInfo(self.name, documents, chunks, "elasticsearch")

    async def _bulk_chunks(self, document: StoredDocument, chunks: Sequence[Chunk],
                           vectors: dict[str, Vectors]) -> None:
        operations: list[dict[str, Any]] = []
        for chunk in chunks:
            source: dict[str, Any] = {
                "kind": "chunk", "doc_id": chunk.doc_id, "chunk_id": chunk.chunk_id, "n": chunk.n,
                "text": chunk.text, "title": document.title, "heading": chunk.heading,
                "page": chunk.page, "tokens": chunk.tokens, "chunk_kind": chunk.kind,
            }
            vector = vectors.get(chunk.chunk_id)
            values = [] if vector is None else [float(x) for x in vector]
            # ES refuses zero-length vectors for cosine; such a chunk is found by BM25 only.
            if math.fsum(x * x for x in values) > 0:
                source["vector"] = values
            operations += [{"create": {"_id": f"chunk:{chunk.chunk_id}"}}, source]
        async with es_errors(self._url, f"add document {document.doc_id}"):
            response = await self._client.bulk(index=self.index, operations=operations,
                                               refresh="wait_for")
        if not response["errors"]:
            return
        # 409: created by an earlier, interrupted attempt (same id, same chunk).
        failed = [i["create"] for i in response["items"]
                  if i["create"].get("error") and i["create"]["status"] != 409]
        if failed:
            error = failed[0]["error"]
            raise ElasticsearchError(
                f"Elasticsearch refused {len(failed)} chunk(s) of document {document.doc_id} "
                f"({error.get('type')}: {error.get('reason')}); the document was not added")

    async def _remove_chunks(self, doc_id: str) -> None:
        """Best effort: the caller is already failing with the reason that matters."""
        only = [{"term": {"kind": "chunk"}}, {"term": {"doc_id": doc_id}}]
        with suppress(TransportError, ApiError):
            await self._client.delete_by_query(index=self.index, query={"bool": {"filter": only}},
                                               refresh=True, conflicts="proceed")

    async def documents(self, doc_ids: Sequence[str] | None = None) -> list[StoredDocument]:
        """All documents by title, or the named ones in the given order (unknown ids skipped)."""
        if doc_ids is not None and not doc_ids:
            return []
        found = await elastic_docs.list_documents(self._client, self.index, self._url, doc_ids)
        if doc_ids is not None:
            return [found[d] for d in dict.fromkeys(doc_ids) if d in found]
        return sorted(found.values(), key=lambda d: (d.title, d.doc_id))

    async def document_text(self, doc_id: str) -> str:
        async with es_errors(self._url, f"read document {doc_id}"):
            try:
                response = await self._client.get(index=self.index, id=f"doc:{doc_id}",
                                                  source_includes=["content"])
            except NotFoundError:
                raise DocumentNotFoundError(
                    f"no document {doc_id!r} in knowledge base {self.name!r}") from None
        return str(response["_source"]["content"])

    async def search(self, query: str, *, doc_ids: Sequence[str] | None,
                     params: RecallParams) -> list[RecalledChunk]:
        """As the embedded index: InputError for a query without words, DocumentNotFoundError
        for an unknown id in `doc_ids`."""
        if not has_words(query):
            raise InputError("the query has no searchable words")
        if doc_ids is not None and not doc_ids:
            return []
        filters: list[dict[str, Any]] = [{"term": {"kind": "chunk"}}]
        if doc_ids is not None:
            filters.append({"terms": {"doc_id": list(dict.fromkeys(doc_ids))}})
        if not params.include_references:
            filters.append({"bool": {"must_not": [{"term": {"chunk_kind": "references"}}]}})
        embedded = await self._embedder.embed_query(without_option_pointers(query))
        vector = [float(x) for x in embedded]
        if math.fsum(x * x for x in vector) == 0:
            vector = []  # nothing to compare with (empty query): BM25 alone
        lexical = await self._lexical(query)
        size = max(50, 4 * params.top_n)  # candidates per list: room for threshold and rerank
        searches: list[dict[str, Any]] = []
        if lexical is not None:
            searches += [{}, {"size": size, "query": {"bool": {"must": [lexical],
                                                               "filter": filters}},
                              "_source": CHUNK_SOURCE}]
        if vector:
            knn = {"field": "vector", "query_vector": vector, "k": size,
                   "num_candidates": min(10000, 2 * size), "filter": filters}
            searches += [{}, {"size": size, "knn": knn, "_source": CHUNK_SOURCE}]
        if not searches:
            await self._check_documents(doc_ids or [])
            return []
        async with es_errors(self._url, "search"):
            responses = await self._msearch(searches)
        hits = dict(zip([k for k, on in (("bm25", lexical), ("knn", vector)) if on], responses,
                        strict=True))
        bm25 = {h["_id"]: float(h["_score"]) for h in hits.get("bm25", [])}
        # ES scores a cosine kNN hit as (1 + cos) / 2: turn it back into the cosine.
        cosine = {h["_id"]: 2.0 * float(h["_score"]) - 1.0 for h in hits.get("knn", [])}
        sources = {h["_id"]: h["_source"] for r in responses for h in r}
        # Only a named document no candidate came from can be unknown: one lookup, rarely.
        seen = {s["doc_id"] for s in sources.values()}
        await self._check_documents([d for d in dict.fromkeys(doc_ids or []) if d not in seen])
        await self._fill_in(lexical, vector, bm25, cosine, list(sources))
        keys = list(sources)
        # The embedded index's formula (hybrid.py); BM25 comes normalised from `lexical`.
        score = hybrid_scores(np.array([bm25.get(k, 0.0) for k in keys], np.float32),
                              np.array([cosine.get(k, 0.0) for k in keys], np.float32),
                              params.vector_similarity_weight)
        scored = [
            RecalledChunk(doc_id=s["doc_id"], chunk_id=s["chunk_id"], score=round(float(x), 6),
                          text=s["text"], title=s.get("title") or "", heading=s.get("heading"),
                          page=s.get("page"),
                          kind="references" if s.get("chunk_kind") == "references" else "body")
            for s, x in zip((sources[k] for k in keys), score, strict=True)
            if x >= params.similarity_threshold
        ]
        scored.sort(key=lambda c: (-c.score, c.chunk_id))
        if params.use_rerank:
            return await rerank(query, scored[: 4 * params.top_n], top_n=params.top_n)
        return scored[: params.top_n]

    async def _check_documents(self, doc_ids: Sequence[str]) -> None:
        """DocumentNotFoundError for the first id without a doc record."""
        if not doc_ids:
            return
        async with es_errors(self._url, "look up documents"):
            response = await self._client.mget(index=self.index, source=False,
                                               ids=[f"doc:{d}" for d in doc_ids])
        known = {d["_id"] for d in response["docs"] if d.get("found")}
        for doc_id in doc_ids:
            if f"doc:{doc_id}" not in known:
                raise DocumentNotFoundError(
                    f"no document {doc_id!r} in knowledge base {self.name!r}")

    async def _lexical(self, query: str) -> dict[str, Any] | None:
        """Both views of the query, normalised by their bounds (`elastic_query`)."""
        # In a thread: the first call of a process reads the dictionary.
        terms = await asyncio.to_thread(lexical_query, query)
        async with es_errors(self._url, "search"):
            response = await self._client.mtermvectors(
                index=self.index, docs=statistics_documents(query, terms), fields=[FIELD],
                term_statistics=True, field_statistics=True, positions=False, offsets=False,
                payloads=False)
        return lexical_clause(query, terms, response["docs"])

    async def _msearch(self, searches: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
        response = await self._client.msearch(index=self.index, searches=searches)
        for part in response["responses"]:
            if "error" in part:  # one failed search in a 200 _msearch
                error = part["error"]
                reason = error.get("reason") if isinstance(error, dict) else error
                raise ElasticsearchError(f"Elasticsearch failed a recall query: {reason}")
        return [part["hits"]["hits"] for part in response["responses"]]

    async def _fill_in(self, lexical: dict[str, Any] | None, vector: list[float],
                       bm25: dict[str, float], cosine: dict[str, float],
                       candidates: list[str]) -> None:
        """Exact cosine for BM25-only candidates and BM25 for kNN-only ones, in place."""
        no_cosine = [k for k in candidates if k not in cosine] if vector else []
        no_bm25 = [k for k in candidates if k not in bm25] if lexical is not None else []
        searches: list[dict[str, Any]] = []
        if no_cosine:
            script = {"source": COSINE_SCRIPT, "params": {"query_vector": vector}}
            ids = {"ids": {"values": no_cosine}}
            searches += [{}, {"size": len(no_cosine), "_source": False,
                              "query": {"script_score": {"query": ids, "script": script}}}]
        if no_bm25:
            query_body = {"bool": {"must": [lexical], "filter": [{"ids": {"values": no_bm25}}]}}
            searches += [{}, {"size": len(no_bm25), "_source": False, "query": query_body}]
        if not searches:
            return
        async with es_errors(self._url, "search"):
            responses = await self._msearch(searches)
        if no_cosine:
            cosine.update({h["_id"]: float(h["_score"]) - 1.0 for h in responses.pop(0)})
        if no_bm25:
            # A chunk the lexical query does not return shares no term with it: BM25 0.
            bm25.update({h["_id"]: float(h["_score"]) for h in responses.pop(0)})

    async def drop(self) -> None:
        """Delete this knowledge base's index (tests and `kb delete`)."""
        async with es_errors(self._url, "delete the knowledge base"):
            await self._client.indices.delete(index=self.index, ignore_unavailable=True)

    async def close(self) -> None:
        await self._client.close()


async def _named_indices(client: AsyncElasticsearch, url: str) -> dict[str, str]:
    """Knowledge base name -> index, from the `_meta` of every scholarflow index."""
    async with es_errors(url, "list knowledge bases"):
        mappings = await client.indices.get_mapping(index=f"{INDEX_PREFIX}*",
                                                     allow_no_indices=True)
    named = {index: m.get("mappings", {}).get("_meta", {}).get("scholarflow_kb")
             for index, m in mappings.body.items()}
    return {name: index for index, name in named.items() if isinstance(name, str)}
