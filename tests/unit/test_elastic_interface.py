"""ElasticsearchKnowledgeBase keeps the embedded index's interface where callers rely on it.

The same errors for the same mistakes (a query without words, an unknown
document id), and every document listed however many there are. Against
the recorded exchanges of tests/data/es/, replayed by tests/support/elastic_replay.py.
"""

from __future__ import annotations

import pytest

from scholarflow.errors import InputError
from scholarflow.retrieval.index import elastic_docs
from scholarflow.retrieval.index.elastic import ElasticsearchKnowledgeBase
from scholarflow.retrieval.kb import DocumentNotFoundError, RecallParams
from tests.support import elastic_replay
from tests.support.elastic_replay import Replay

# The shared fixtures, bound here because pytest looks for them among the module's names
# (an import of them would read as unused to ruff).
replay = elastic_replay.replay
kb = elastic_replay.kb
test_lexicon = elastic_replay.test_lexicon


async def test_a_query_without_words_is_an_input_error(
    replay: tuple[Replay, str], kb: ElasticsearchKnowledgeBase
) -> None:
    fake, _ = replay
    fake.reset()
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
    monkeypatch.setattr(elastic_docs, "DOCUMENTS_PAGE", 1)  # more than a page of documents
    fake.load("documents_paged.json")
    assert [d.doc_id for d in await kb.documents()] == ["d1", "d2"]
    fake.assert_done()  # the last page came back short: no fourth request
