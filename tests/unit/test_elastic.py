"""ElasticsearchKnowledgeBase against recorded exchanges (support/elastic_replay.py)."""

from __future__ import annotations

import math
import socket
import time

import pytest
from elasticsearch import AsyncElasticsearch

from scholarflow.errors import ConfigurationError, ScholarflowError
from scholarflow.retrieval.index import elastic_docs
from scholarflow.retrieval.index.elastic import ElasticsearchKnowledgeBase
from scholarflow.retrieval.index.elastic_client import (
    ElasticsearchError,
    ElasticsearchUnavailableError,
    index_name,
)
from scholarflow.retrieval.kb import (
    Chunk,
    DocumentNotFoundError,
    KnowledgeBaseNotFoundError,
    RecallParams,
    StoredDocument,
)
from tests.support import elastic_replay
from tests.support.elastic_replay import KeywordEmbedder, Replay

# The shared fixtures, bound here because pytest looks for them among the module's names
# (an import of them would read as unused to ruff).
replay = elastic_replay.replay
kb = elastic_replay.kb
test_lexicon = elastic_replay.test_lexicon

ADDED_AT = "2026-11-27T00:00:00+00:00"  # the recorded doc records' time of adding


@pytest.fixture(autouse=True)
def fixed_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(elastic_docs, "now_utc", lambda: ADDED_AT)


D1 = StoredDocument("d1", "Attention Is All You Need", "papers/attention.pdf", "sha256:1111", 21, 2)
D1_CHUNKS = [
    Chunk("d1:00000", "d1", 0, "The Transformer relies on attention.", 7, "1 Model", 1),
    Chunk("d1:00001", "d1", 1,
          "Attention weights are normalized with softmax; batch normalization is not used.",
          14, "1 Model > 1.2 Softmax", 2),
]
D1_TEXT = "\n\n".join(c.text for c in D1_CHUNKS)
D2 = StoredDocument("d2", "卷积神经网络", None, "sha256:2222", 14, 2)
D2_CHUNKS = [
    Chunk("d2:00000", "d2", 0, "卷积层提取图像特征。", 9, None, None),
    Chunk("d2:00001", "d2", 1, "参见第3节。", 5, None, None),
]
D2_TEXT = "\n\n".join(c.text for c in D2_CHUNKS)


async def test_open_creates_index_with_mapping(replay: tuple[Replay, str]) -> None:
    fake, url = replay
    fake.load("create_index.json")
    base = await ElasticsearchKnowledgeBase.open(
        "papers", create=True, embedder=KeywordEmbedder(), url=url)
    await base.close()
    fake.assert_done()
    mappings = fake.received[1]["body"]["mappings"]
    assert mappings["properties"]["vector"] == {
        "type": "dense_vector", "dims": 4, "index": True, "similarity": "cosine"}
    assert mappings["properties"]["doc_id"] == {"type": "keyword"}
    analyzer = fake.received[1]["body"]["settings"]["analysis"]["analyzer"]["scholarflow_text"]
    assert "sf_bigrams" in analyzer["filter"]  # CJK bigrams: Chinese is searchable


async def test_open_existing_checks_embedder(replay: tuple[Replay, str]) -> None:
    fake, url = replay
    fake.load("open_existing.json")
    base = await ElasticsearchKnowledgeBase.open(
        "papers", create=False, embedder=KeywordEmbedder(), url=url)
    await base.close()
    fake.assert_done()
    fake.load("open_other_embedder.json")
    with pytest.raises(ConfigurationError, match="openai/text-embedding-3-small"):
        await ElasticsearchKnowledgeBase.open(
            "papers", create=False, embedder=KeywordEmbedder(), url=url)
    fake.assert_done()


async def test_open_missing_without_create(replay: tuple[Replay, str]) -> None:
    fake, url = replay
    fake.load("open_missing.json")
    with pytest.raises(KnowledgeBaseNotFoundError, match="papers"):
        await ElasticsearchKnowledgeBase.open(
            "papers", create=False, embedder=KeywordEmbedder(), url=url)
    fake.assert_done()


async def test_add_bulk_then_doc_record(
    replay: tuple[Replay, str], kb: ElasticsearchKnowledgeBase
) -> None:
    fake, _ = replay
    fake.load("add_documents.json")
    assert await kb.add(D1, D1_TEXT, D1_CHUNKS) is True
    assert await kb.add(D2, D2_TEXT, D2_CHUNKS) is True
    fake.assert_done()
    bulk = fake.received[1]["body"]
    assert [line.get("create", {}).get("_id") for line in bulk[::2]] == [
        "chunk:d1:00000", "chunk:d1:00001"]
    assert "vector" not in fake.received[4]["body"][3]  # zero embedding: BM25 only


async def test_re_add_is_a_no_op(
    replay: tuple[Replay, str], kb: ElasticsearchKnowledgeBase
) -> None:
    fake, _ = replay
    fake.load("add_again.json")
    assert await kb.add(D1, D1_TEXT, D1_CHUNKS) is False
    fake.assert_done()  # one HEAD, no write


async def test_failed_bulk_leaves_no_half_document(
    replay: tuple[Replay, str], kb: ElasticsearchKnowledgeBase
) -> None:
    fake, _ = replay
    fake.load("add_bulk_failure.json")
    with pytest.raises(ElasticsearchError, match="es_rejected_execution_exception") as info:
        await kb.add(D1, D1_TEXT, D1_CHUNKS)
    assert "\n" not in str(info.value)
    fake.assert_done()  # the delete_by_query named only d1's chunks; no doc record written


async def test_hybrid_search_combines_scores(
    replay: tuple[Replay, str], kb: ElasticsearchKnowledgeBase
) -> None:
    fake, _ = replay
    fake.load("search_hybrid.json")
    hits = await kb.search("attention normalization", doc_ids=None, params=RecallParams())
    fake.assert_done()
    # The lexical query is boosted by 1 / (sum of its terms' idf), from the term statistics.
    idf = [math.log1p((4 - df + 0.5) / (df + 0.5)) for df in (2, 1)]
    lexical = fake.received[1]["body"][1]["query"]["bool"]["must"][0]
    assert lexical["match"]["text"]["boost"] == pytest.approx(1 / sum(idf))
    # By hand: (1-w) * lexical + w * cos / best cos, with w = 0.3, cos = 2*es - 1.
    assert [(h.chunk_id, h.score) for h in hits] == [
        ("d1:00001", pytest.approx(0.7 * 0.8 + 0.3 * 1.0)),
        ("d1:00000", pytest.approx(0.7 * 0.3 + 0.3 * math.sqrt(0.5), abs=1e-6)),
    ]  # d2:00000 scores 0 (no term, orthogonal vector): under the 0.2 threshold
    top = hits[0]
    assert (top.doc_id, top.title, top.heading, top.page) == (
        "d1", "Attention Is All You Need", "1 Model > 1.2 Softmax", 2)
    assert top.location == "p. 2, 1 Model > 1.2 Softmax"


async def test_a_chinese_question_matches_english_chunks_through_the_dictionary(
    replay: tuple[Replay, str], kb: ElasticsearchKnowledgeBase
) -> None:
    fake, _ = replay
    fake.load("search_crosslingual.json")
    hits = await kb.search("注意力", doc_ids=None, params=RecallParams())
    fake.assert_done()
    # Its own terms are in no chunk: the translated view alone, normalised by its bound.
    lexical = fake.received[1]["body"][1]["query"]["bool"]["must"][0]["bool"]
    assert lexical["should"] == [
        {"dis_max": {"queries": [{"match": {"text": "attention"}}], "boost": 0.75}}]
    assert lexical["boost"] == pytest.approx(1 / (0.75 * math.log(2)))
    assert [(h.chunk_id, h.score) for h in hits] == [
        ("d1:00000", pytest.approx(0.7 * 0.45 + 0.3)),
        ("d1:00001", pytest.approx(0.7 * 0.35 + 0.3 * math.sqrt(0.5), abs=1e-6)),
    ]


async def test_weight_and_top_n_apply_client_side(
    replay: tuple[Replay, str], kb: ElasticsearchKnowledgeBase
) -> None:
    fake, _ = replay
    fake.load("search_hybrid.json")  # same requests: w and top_n are not sent
    params = RecallParams(top_n=1, vector_similarity_weight=1.0, similarity_threshold=0.0)
    hits = await kb.search("attention normalization", doc_ids=None, params=params)
    fake.assert_done()
    assert [(h.chunk_id, h.score) for h in hits] == [("d1:00001", pytest.approx(1.0))]


async def test_doc_ids_filter_in_query_and_knn(
    replay: tuple[Replay, str], kb: ElasticsearchKnowledgeBase
) -> None:
    fake, _ = replay
    fake.load("search_doc_ids.json")
    hits = await kb.search("卷积 第3节", doc_ids=["d2"], params=RecallParams())
    fake.assert_done()
    lines = fake.received[1]["body"]  # after the term statistics
    wanted = {"terms": {"doc_id": ["d2"]}}
    assert wanted in lines[1]["query"]["bool"]["filter"]
    assert wanted in lines[3]["knn"]["filter"]
    assert [(h.chunk_id, h.score) for h in hits] == [
        ("d2:00000", pytest.approx(0.7 * 0.4 + 0.3 * 1.0)),
        ("d2:00001", pytest.approx(0.7 * 0.45)),  # exact cosine via script_score: no vector, 0
    ]
    assert await kb.search("卷积", doc_ids=[], params=RecallParams()) == []  # no request


async def test_documents_and_text(
    replay: tuple[Replay, str], kb: ElasticsearchKnowledgeBase
) -> None:
    fake, _ = replay
    fake.load("documents.json")
    assert [d.doc_id for d in await kb.documents()] == ["d1", "d2"]  # by title
    assert await kb.document_text("d2") == D2_TEXT
    with pytest.raises(DocumentNotFoundError, match="nope"):
        await kb.document_text("nope")
    fake.assert_done()


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_unreachable_url_is_one_clear_line(monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"http://elastic:s3cret@127.0.0.1:{_closed_port()}"
    monkeypatch.setenv("SCHOLARFLOW_ES_URL", url)
    started = time.monotonic()
    with pytest.raises(ElasticsearchUnavailableError) as info:
        await ElasticsearchKnowledgeBase.open("papers", create=True, embedder=KeywordEmbedder())
    message = str(info.value)
    assert isinstance(info.value, ScholarflowError)
    assert "SCHOLARFLOW_ES_URL" in message and "unreachable" in message
    assert "s3cret" not in message and "\n" not in message
    assert time.monotonic() - started < 10


async def test_unreachable_during_add_writes_nothing() -> None:
    url = f"http://127.0.0.1:{_closed_port()}"
    base = ElasticsearchKnowledgeBase(
        "papers", client=AsyncElasticsearch(url, max_retries=0), embedder=KeywordEmbedder(),
        url=url)
    try:
        with pytest.raises(ElasticsearchUnavailableError, match="SCHOLARFLOW_ES_URL"):
            await base.add(D1, D1_TEXT, D1_CHUNKS)  # fails at the existence check
        with pytest.raises(ElasticsearchUnavailableError, match="SCHOLARFLOW_ES_URL"):
            await base.search("attention", doc_ids=None, params=RecallParams())
    finally:
        await base.close()


def test_index_names_are_valid_and_distinct() -> None:
    assert index_name("papers") == "scholarflow-kb-papers"
    names = {index_name(n) for n in ["Papers", "papers", "my papers", "论文", "a/b"]}
    assert len(names) == 5
    for name in names:
        assert name == name.lower() and not any(c in name for c in ' \\/*?"<>|,#:')


async def test_list_names_reads_meta(replay: tuple[Replay, str]) -> None:
    fake, url = replay
    fake.load("list_names.json")
    assert await ElasticsearchKnowledgeBase.list_names(url) == ["Papers", "papers"]
    fake.assert_done()


async def test_use_rerank_reranks_the_candidates(
    replay: tuple[Replay, str], kb: ElasticsearchKnowledgeBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake, _ = replay
    monkeypatch.delenv("SCHOLARFLOW_RERANK_MODEL", raising=False)  # the local method
    fake.load("search_hybrid.json")
    params = RecallParams(use_rerank=True)
    hits = await kb.search("attention normalization", doc_ids=None, params=params)
    fake.assert_done()
    assert [h.chunk_id for h in hits] == ["d1:00001", "d1:00000"]  # both terms, first
    assert hits[0].score != 1.0  # scored by the reranker now
