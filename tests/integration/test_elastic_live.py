"""ElasticsearchKnowledgeBase against a real cluster: runs only when SCHOLARFLOW_ES_URL is set.

Two tiny knowledge bases with unique names, ingested, searched (English and
Chinese), checked for isolation, and their indices deleted afterwards.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Sequence
from typing import Any

import numpy as np
import pytest

from scholarflow.retrieval.index.elastic import ElasticsearchKnowledgeBase
from scholarflow.retrieval.kb import Chunk, RecallParams, StoredDocument

pytestmark = pytest.mark.skipif(
    not os.environ.get("SCHOLARFLOW_ES_URL"),
    reason="SCHOLARFLOW_ES_URL is not set: no Elasticsearch to test against",
)

WORDS = [("attention", "注意力"), ("convolution", "卷积"), ("recurrent", "循环"),
         ("norm", "规范化")]


class WordEmbedder:
    name = "test/live-words-4"
    dim = 4

    def _one(self, text: str) -> np.ndarray[Any, Any]:
        v = np.array([float(any(w in text.lower() for w in ws)) for ws in WORDS], np.float32)
        n = np.linalg.norm(v)
        return v / n if n else v

    async def embed_passages(self, texts: Sequence[str]) -> np.ndarray[Any, Any]:
        return np.stack([self._one(t) for t in texts])

    async def embed_query(self, text: str) -> np.ndarray[Any, Any]:
        return self._one(text)


def document(doc_id: str, title: str, texts: list[str]) -> tuple[StoredDocument, str, list[Chunk]]:
    chunks = [Chunk(f"{doc_id}:{n:05d}", doc_id, n, t, len(t.split()), None, None)
              for n, t in enumerate(texts)]
    text = "\n\n".join(texts)
    return StoredDocument(doc_id, title, None, f"h-{doc_id}", len(text.split()), len(chunks)), \
        text, chunks


@pytest.fixture
async def two_kbs() -> AsyncIterator[tuple[ElasticsearchKnowledgeBase, ElasticsearchKnowledgeBase]]:
    run = uuid.uuid4().hex[:8]
    a = await ElasticsearchKnowledgeBase.open(f"sf-test-{run}-a", create=True,
                                              embedder=WordEmbedder())
    b = await ElasticsearchKnowledgeBase.open(f"sf-test-{run}-b", create=True,
                                              embedder=WordEmbedder())
    try:
        yield a, b
    finally:
        for kb in (a, b):
            await kb.drop()
            await kb.close()


async def test_ingest_search_isolation(
    two_kbs: tuple[ElasticsearchKnowledgeBase, ElasticsearchKnowledgeBase],
) -> None:
    a, b = two_kbs
    doc_a = document("shared-id", "Transformers", [
        "The Transformer relies on attention and layer norm.",
        "Positional encodings give order to attention.",
    ])
    doc_a_zh = document("zh", "卷积神经网络", ["卷积层提取图像的局部特征。", "池化层降低分辨率。"])
    doc_b = document("shared-id", "RNNs", ["A recurrent network carries attention-free state."])
    assert await a.add(*doc_a) is True
    assert await a.add(*doc_a) is False  # idempotent
    assert await a.add(*doc_a_zh) is True
    assert await b.add(*doc_b) is True

    hits = await a.search("attention", doc_ids=None, params=RecallParams())
    assert hits and hits[0].doc_id == "shared-id" and hits[0].title == "Transformers"
    assert {h.chunk_id for h in hits} <= {"shared-id:00000", "shared-id:00001"}

    zh = await a.search("卷积层", doc_ids=None, params=RecallParams())
    assert zh and zh[0].chunk_id == "zh:00000"
    only = await a.search("卷积层 attention", doc_ids=["zh"], params=RecallParams())
    assert only and {h.doc_id for h in only} == {"zh"}

    # Same doc_id in both knowledge bases: each sees only its own chunks.
    in_b = await b.search("attention recurrent", doc_ids=None, params=RecallParams())
    assert in_b and all(h.title == "RNNs" for h in in_b)
    assert [d.doc_id for d in await b.documents()] == ["shared-id"]
    assert await a.document_text("zh") == doc_a_zh[1]
    assert sorted(d.doc_id for d in await a.documents()) == ["shared-id", "zh"]


async def test_library_references_remove_replace(
    two_kbs: tuple[ElasticsearchKnowledgeBase, ElasticsearchKnowledgeBase],
) -> None:
    a, _ = two_kbs
    body = "Attention lets the model attend to every position."
    refs = "Vaswani A. Attention is all you need. NeurIPS 2017."
    chunks = [Chunk("p1:00000", "p1", 0, body, 8, None, 1),
              Chunk("p1:00001", "p1", 1, refs, 9, "References", 2, kind="references")]
    doc = StoredDocument("p1", "Attention", "/papers/p1.pdf", "h-p1", 17, 2,
                         authors=("A. Author",), year=2020, doi="10.1/x", pages=2)
    assert await a.add(doc, f"{body}\n\n{refs}", chunks) is True
    plain = await a.search("attention", doc_ids=None, params=RecallParams())
    assert [h.chunk_id for h in plain] == ["p1:00000"]
    asked = await a.search("attention", doc_ids=None,
                           params=RecallParams(include_references=True, top_n=10))
    assert {(h.chunk_id, h.kind) for h in asked} == {("p1:00000", "body"),
                                                     ("p1:00001", "references")}
    [stored] = await a.documents(["p1"])
    assert (stored.authors, stored.year, stored.doi, stored.pages) == (("A. Author",), 2020,
                                                                        "10.1/x", 2)
    assert stored.added is not None
    v2 = document("p2", "Attention v2", ["Attention, corrected."])
    assert await a.add(*v2, replaces=["p1"]) is True
    assert [d.doc_id for d in await a.documents()] == ["p2"]
    info = await a.info()
    assert (info.documents, info.chunks, info.backend) == (1, 1, "elasticsearch")
    await a.remove("p2")
    assert await a.documents() == [] and (await a.info()).chunks == 0
