"""Embedders: the OpenAI-compatible endpoint (scripted server) and the local e5 model."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import numpy as np
import pytest

from scholarflow.errors import RetryableLLMError
from scholarflow.retrieval.embeddings import (
    LOCAL_E5_NAME,
    LocalE5Embedder,
    OpenAIEmbedder,
    default_embedder,
    normalise,
)
from scholarflow.retrieval.kb import RecallParams
from scholarflow.retrieval.kb_registry import close_all, open_knowledge_base
from tests.support import FakeOpenAIServer
from tests.support.embeddings import HashingEmbedder

TEXTS = ["Multi-head attention in transformers", "锚框和交并比", "", "batch normalization"]


@pytest.fixture
async def endpoint(
    fake_llm: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[FakeOpenAIServer]:
    monkeypatch.setenv("SCHOLARFLOW_EMBEDDING_MODEL", "fake-embed")
    monkeypatch.delenv("SCHOLARFLOW_EMBEDDING_BASE_URL", raising=False)
    monkeypatch.delenv("SCHOLARFLOW_ES_URL", raising=False)
    yield fake_llm
    await close_all()


async def test_default_embedder_follows_the_environment(
    monkeypatch: pytest.MonkeyPatch, endpoint: FakeOpenAIServer
) -> None:
    embedder = default_embedder()
    assert isinstance(embedder, OpenAIEmbedder)
    assert embedder.name == "openai/fake-embed"
    assert embedder.base_url == endpoint.base_url
    monkeypatch.setenv("SCHOLARFLOW_EMBEDDING_BASE_URL", "http://127.0.0.1:9/v1")
    assert OpenAIEmbedder.from_env().base_url == "http://127.0.0.1:9/v1"
    monkeypatch.delenv("SCHOLARFLOW_EMBEDDING_MODEL")
    local = default_embedder()
    assert isinstance(local, LocalE5Embedder) and local.name == LOCAL_E5_NAME


async def test_openai_embedder_batches_and_normalises(endpoint: FakeOpenAIServer) -> None:
    embedder = OpenAIEmbedder.from_env()
    embedder.batch_size = 3
    assert embedder.dim == 0  # unknown until the endpoint answers
    vectors = await embedder.embed_passages(TEXTS)
    assert vectors.shape == (4, 64) and vectors.dtype == np.float32
    assert embedder.dim == 64
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    # The scripted server embeds like HashingEmbedder: the decoding is exact.
    expected = await HashingEmbedder().embed_passages([t or " " for t in TEXTS])
    assert np.allclose(vectors, expected, atol=1e-5)
    query = await embedder.embed_query(TEXTS[0])
    assert query.shape == (64,) and np.allclose(query, expected[0], atol=1e-5)
    assert endpoint.stats().embedding_calls == 3  # two batches, then the query
    assert await embedder.embed_passages([]) is not None


async def test_each_batch_reports_its_passages_to_the_progress_listener(
    endpoint: FakeOpenAIServer,
) -> None:
    from scholarflow.retrieval.embeddings import embedding_progress

    embedder = OpenAIEmbedder.from_env()
    embedder.batch_size = 3
    reported: list[int] = []

    async def embed_listened() -> None:
        embedding_progress.set(reported.append)
        await embedder.embed_passages(TEXTS)

    await asyncio.create_task(embed_listened())  # a task: its own copy of the context
    assert reported == [3, 1]
    await embedder.embed_passages(TEXTS)  # outside that context: nobody listens
    assert reported == [3, 1]


async def test_openai_embedder_errors_are_typed() -> None:
    nowhere = OpenAIEmbedder("m", base_url="http://127.0.0.1:9/v1", api_key="k", max_retries=0)
    with pytest.raises(RetryableLLMError, match=r"127\.0\.0\.1:9"):
        await nowhere.embed_query("anything")


async def test_knowledge_base_over_the_endpoint(endpoint: FakeOpenAIServer) -> None:
    kb = await open_knowledge_base("remote", create=True)  # default embedder: the endpoint
    from tests.unit.test_embedded_index import make_doc

    assert await kb.add(*make_doc("d", "Batch normalization stabilises training.", "锚框"))
    found = await kb.search("batch normalization", doc_ids=None, params=RecallParams())
    assert found[0].chunk_id == "d:00000"
    await close_all()
    reopened = await open_knowledge_base("remote")  # finds its embedder from the stored name
    assert (await reopened.search("锚框", doc_ids=None, params=RecallParams()))[0].chunk_id == (
        "d:00001"
    )


def test_normalise_keeps_zero_rows() -> None:
    out = normalise([[3.0, 4.0], [0.0, 0.0]])
    assert np.allclose(out, [[0.6, 0.8], [0.0, 0.0]])


async def test_local_e5_ranks_across_languages() -> None:
    embedder = LocalE5Embedder()
    passages = [
        "长短期记忆网络用遗忘门决定丢弃记忆元中的哪些信息。",  # LSTM forget gate (zh)
        "Whisk the eggs with sugar and bake the cake for forty minutes.",
        "锚框是以每个像素为中心生成的多个边界框。",  # anchor boxes (zh)
        "Batch normalization standardizes the inputs of each layer over a minibatch.",
    ]
    vectors = await embedder.embed_passages(passages)
    assert vectors.shape == (4, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    english = await embedder.embed_query("How does the forget gate of an LSTM work?")
    assert int(np.argmax(vectors @ english)) == 0
    # Raw e5-small prefers any passage in the question's own language for these two;
    # the language centring makes meaning win.
    chinese = await embedder.embed_query("批量规范化有什么作用？")
    assert int(np.argmax(vectors @ chinese)) == 3
    anchors = await embedder.embed_query("What are anchor boxes in object detection?")
    assert int(np.argmax(vectors @ anchors)) == 2
