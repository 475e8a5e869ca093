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
