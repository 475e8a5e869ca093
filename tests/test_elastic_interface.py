"""ElasticsearchKnowledgeBase keeps the embedded index's interface where callers rely on it.

The same errors for the same mistakes (a query without words, an unknown
document id), and every document listed however many there are. Against
the recorded exchanges of tests/data/es/, replayed as in tests/test_elastic.py.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from elasticsearch import AsyncElasticsearch
from starlette.applications import Starlette
from starlette.routing import Route

from scholarflow.errors import InputError
from scholarflow.tools.index import crosslingual, elastic, lexicon
from scholarflow.tools.index.elastic import ElasticsearchKnowledgeBase
from scholarflow.tools.kb import DocumentNotFoundError, RecallParams
from tests.servers import serve
from tests.test_crosslingual import SAMPLE
from tests.test_elastic import KeywordEmbedder, Replay


@pytest.fixture(scope="module")
def replay() -> Iterator[tuple[Replay, str]]:
    fake = Replay()
    app = Starlette(routes=[Route("/{path:path}", fake.handle,
                                  methods=["GET", "HEAD", "POST", "PUT", "DELETE"])])
    with serve(app, "fake Elasticsearch") as base:
        yield fake, base


@pytest.fixture(autouse=True)
def test_lexicon(monkeypatch: pytest.MonkeyPatch) -> None:
    """The recorded queries hold their translations: the small fixed dictionary."""
    words = lexicon.parse(iter(SAMPLE.splitlines(keepends=True)))
    monkeypatch.setattr(crosslingual, "lexicon", lambda: words)


@pytest.fixture
async def kb(replay: tuple[Replay, str]) -> AsyncIterator[ElasticsearchKnowledgeBase]:
    _fake, url = replay
    base = ElasticsearchKnowledgeBase(
        "papers", client=AsyncElasticsearch(url, max_retries=0), embedder=KeywordEmbedder(),
        url=url,
    )
    yield base
    await base.close()


async def test_a_query_without_words_is_an_input_error(
    replay: tuple[Replay, str], kb: ElasticsearchKnowledgeBase
) -> None:
    fake, _ = replay
    fake.interactions, fake.received, fake.mismatches = [], [], []
    for query in ("?!", "……", " - "):
        with pytest.raises(InputError, match=r"^the query has no searchable words$"):
            await kb.search(query, doc_ids=None, params=RecallParams())
    assert fake.received == []  # refused before asking Elasticsearch anything


async def test_unknown_doc_ids_are_not_found(
    replay: tuple[Replay, str], kb: ElasticsearchKnowledgeBase
) -> None:
    fake, _ = replay
    fake.load("search_unknown_doc_ids.json")
    with pytest.raises(DocumentNotFoundError,
                       match=r"^no document 'nope' in knowledge base 'papers'$"):
        await kb.search("attention", doc_ids=["d3", "nope"], params=RecallParams())
    # A known document without chunks is no error: nothing is found in it.
    assert await kb.search("attention", doc_ids=["d3"], params=RecallParams()) == []
    fake.assert_done()


async def test_documents_pages_through_every_doc_record(
    replay: tuple[Replay, str], kb: ElasticsearchKnowledgeBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake, _ = replay
    monkeypatch.setattr(elastic, "DOCUMENTS_PAGE", 1)  # more than a page of documents
    fake.load("documents_paged.json")
    assert [d.doc_id for d in await kb.documents()] == ["d1", "d2"]
    fake.assert_done()  # the last page came back short: no fourth request
