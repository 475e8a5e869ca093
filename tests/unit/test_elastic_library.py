"""A library on Elasticsearch: reference lists, document fields, removal, replacement, counts
and older indices, against recorded exchanges (tests/support/elastic_replay.py)."""

from __future__ import annotations

import pytest

from scholarflow.retrieval.index import elastic_docs
from scholarflow.retrieval.index.elastic import ElasticsearchKnowledgeBase
from scholarflow.retrieval.kb import (
    Chunk,
    DocumentNotFoundError,
    KnowledgeBaseInfo,
    RecallParams,
    StoredDocument,
)
from tests.support import elastic_replay
from tests.support.elastic_replay import KeywordEmbedder, Replay

replay = elastic_replay.replay
kb = elastic_replay.kb
test_lexicon = elastic_replay.test_lexicon

D3 = StoredDocument("d3", "LSTM revisited", "/papers/lstm.pdf", "sha256:3333", 16, 2,
                    authors=("S. Hochreiter", "J. Schmidhuber"), year=1997,
                    doi="10.1162/neco.1997.9.8.1735", pages=2)
D3_CHUNKS = [
    Chunk("d3:00000", "d3", 0, "Recurrent networks and LSTM cells.", 6, None, 1),
    Chunk("d3:00001", "d3", 1, "Hochreiter S. Long short-term memory (LSTM). Neural "
          "Computation 1997.", 10, "References", 2, kind="references"),
]


@pytest.fixture(autouse=True)
def fixed_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(elastic_docs, "now_utc", lambda: "2026-11-27T00:00:00+00:00")


class CountingEmbedder(KeywordEmbedder):
    def __init__(self) -> None:
        self.passages: list[str] = []

    async def embed_passages(self, texts):  # type: ignore[no-untyped-def]
        self.passages += texts
        return await super().embed_passages(texts)


async def test_an_older_index_gains_the_new_fields(replay: tuple[Replay, str]) -> None:
    fake, url = replay
    fake.load("open_old_mapping.json")
    base = await ElasticsearchKnowledgeBase.open(
        "papers", create=False, embedder=KeywordEmbedder(), url=url)
    await base.close()
    fake.assert_done()  # the PUT _mapping named exactly the missing fields


async def test_add_embeds_no_reference_list_and_replaces_the_old_version(
    replay: tuple[Replay, str]
) -> None:
    fake, url = replay
    embedder = CountingEmbedder()
    from elasticsearch import AsyncElasticsearch

    base = ElasticsearchKnowledgeBase("papers", client=AsyncElasticsearch(url, max_retries=0),
                                      embedder=embedder, url=url)
    try:
        fake.load("add_references_replacing.json")
        text = "\n\n".join(c.text for c in D3_CHUNKS)
        assert await base.add(D3, text, D3_CHUNKS, replaces=["d1"]) is True
        fake.assert_done()
    finally:
        await base.close()
    assert embedder.passages == [D3_CHUNKS[0].text]
    bulk = fake.received[1]["body"]
    assert bulk[3]["chunk_kind"] == "references" and "vector" not in bulk[3]


async def test_remove_and_info(replay: tuple[Replay, str], kb: ElasticsearchKnowledgeBase) -> None:
    fake, _ = replay
    fake.load("remove.json")
    await kb.remove("d1")
    with pytest.raises(DocumentNotFoundError, match="no document 'nope' in knowledge base"):
        await kb.remove("nope")
    fake.assert_done()
    fake.load("info.json")
    assert await kb.info() == KnowledgeBaseInfo("papers", 2, 4, "elasticsearch")
    fake.assert_done()


async def test_reference_lists_are_filtered_out_unless_asked(
    replay: tuple[Replay, str], kb: ElasticsearchKnowledgeBase
) -> None:
    fake, _ = replay
    fake.load("search_hybrid.json")  # its queries carry the must_not chunk_kind filter
    plain = await kb.search("attention normalization", doc_ids=None, params=RecallParams())
    fake.assert_done()
    fake.load("search_with_references.json")  # the same, without it
    asked = await kb.search("attention normalization", doc_ids=None,
                            params=RecallParams(include_references=True))
    fake.assert_done()
    assert [h.chunk_id for h in plain] == [h.chunk_id for h in asked]
    assert all(h.kind == "body" for h in plain)
