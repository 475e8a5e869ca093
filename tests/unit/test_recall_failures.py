"""When recall fails, or cannot start: the person learns the real reason.

A recall step that fails for good (bad input, a setting, an unreachable
service) is not tried again; when every step fails the run's error is the
first step's reason, not "found nothing"; one failed step among good ones
does not sink the run. A question with no words cannot be searched at all.
"""

from __future__ import annotations

from typing import Any

import pytest

from scholarflow.errors import InputError
from scholarflow.ingest.documents import document_from_text
from scholarflow.ingest.pipeline import add_document
from scholarflow.nodes import recall as recall_nodes
from scholarflow.retrieval.kb import RecalledChunk
from scholarflow.retrieval.kb_registry import open_knowledge_base
from scholarflow.sessions.conversation import as_session_messages
from tests.conftest import paper, run_graph
from tests.support import FakeOpenAIServer

SUBQ_RULE = "search questions that together retrieve"  # SUB_QUESTION_GENERATION_PROMPT
ANSWER_RULE = "numbered passages recalled"  # CITED_MATERIAL_PROMPT
TWO_STEPS = ('{"sub_questions": [{"question": "learning rate", "doc_id": "anchor"}, '
             '{"question": "batch size", "doc_id": "rag"}]}')


def _docs() -> dict[str, str]:
    return {"anchor": paper("en_sparse_attention.md"), "rag": paper("en_retrieval_qa.md")}


def _request(query: str = "Which learning rate does each paper use?") -> dict[str, Any]:
    return {"query": query, "document_contents": _docs(), "mode_type": "LITERATURE_QA"}


class Scripted:
    """A retriever whose search fails with `errors[query]` (one per call, in turn) or finds."""

    def __init__(self, errors: dict[str, list[Exception]]) -> None:
        self.errors = errors
        self.calls: list[str] = []

    async def search(self, query: str, *, doc_ids: Any, params: Any) -> list[RecalledChunk]:
        self.calls.append(query)
        if self.errors.get(query):
            raise self.errors[query].pop(0)
        return [RecalledChunk(doc_id="anchor", chunk_id=f"anchor:{query}", score=0.9,
                              text=f"About {query}: 3e-4.", title="T", heading=None, page=None)]


def _use(monkeypatch: pytest.MonkeyPatch, retriever: Scripted) -> None:
    async def retriever_for(*_args: Any) -> Scripted:
        return retriever

    monkeypatch.setattr(recall_nodes, "retriever_for", retriever_for)


def _errors(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(e["node"], e["error"]) for e in events if e["type"] == "node_error"]


async def test_unreachable_recall_service_is_the_error_not_found_nothing(
    fake_llm: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch,
) -> None:
    kb = await open_knowledge_base("lab", create=True)  # the documents' titles are local
    for doc_id, text in _docs().items():
        await add_document(kb, document_from_text(text, doc_id=doc_id))
    monkeypatch.setenv("SCHOLARFLOW_RECALL_API_URL", "http://127.0.0.1:1/retrieval")
    fake_llm.configure(rules=[{"match": SUBQ_RULE, "reply": TWO_STEPS}])
    out, events = await run_graph({"query": "Which learning rate does each paper use?",
                                   "kb": "lab", "mode_type": "LITERATURE_QA"})
    assert out["error"] is not None and out["error"].startswith(
        "recall failed: the recall service at SCHOLARFLOW_RECALL_API_URL="
        "http://127.0.0.1:1/retrieval is unreachable"), out["error"]
    assert _errors(events) == [("execution", out["error"])]
    assert events[-1] == {"type": "error", "message": out["error"],
                          "session_id": out["session"]["session_id"]}
    assert not any(ANSWER_RULE in str(r["messages"]) for r in fake_llm.stats().requests)


async def test_input_errors_are_not_retried_and_name_the_first_step(
    fake_llm: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch,
) -> None:
    retriever = Scripted({"learning rate": [InputError("the query has no searchable words")],
                          "batch size": [InputError("something else")]})
    _use(monkeypatch, retriever)
    fake_llm.configure(rules=[{"match": SUBQ_RULE, "reply": TWO_STEPS}])
    out, _events = await run_graph(_request())
    assert out["error"] == "recall failed: the query has no searchable words"
    assert sorted(retriever.calls) == ["batch size", "learning rate"]  # once each


async def test_a_transient_failure_is_tried_again(
    fake_llm: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch,
) -> None:
    retriever = Scripted({"learning rate": [RuntimeError("connection reset")]})
    _use(monkeypatch, retriever)
    fake_llm.configure(rules=[
        {"match": SUBQ_RULE, "reply": '{"sub_questions": [{"question": "learning rate"}]}'},
        {"match": ANSWER_RULE, "reply": "It is 3e-4 [1]."},
    ])
    out, events = await run_graph(_request())
    assert out["error"] is None, out["error"]
    assert out["answer"] == "It is 3e-4 [1]."
    # Tried twice; the question aimed at each document (no sub-question aims at one) once each.
    assert sorted(retriever.calls) == [*["Which learning rate does each paper use?"] * 2,
                                       *["learning rate"] * 2]
    done = [e for e in events if e["type"] == "node_complete" and e["node"] == "execution"]
    assert done[0]["failed"] == 0


async def test_one_failed_step_among_good_ones_does_not_sink_the_run(
    fake_llm: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch,
) -> None:
    retriever = Scripted({"batch size": [InputError("bad"), InputError("bad"), InputError("bad")]})
    _use(monkeypatch, retriever)
    fake_llm.configure(rules=[
        {"match": SUBQ_RULE, "reply": TWO_STEPS},
        {"match": ANSWER_RULE, "reply": "It is 3e-4 [1]."},
    ])
    out, events = await run_graph(_request())
    assert (out["error"], out["answer"]) == (None, "It is 3e-4 [1].")
    assert retriever.calls.count("batch size") == 1
    done = [e for e in events if e["type"] == "node_complete" and e["node"] == "execution"]
    assert done[0]["failed"] == 1


async def test_a_failed_step_beside_steps_that_found_nothing_is_the_error(
    fake_llm: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch,
) -> None:
    class FindsNothing(Scripted):
        async def search(self, query: str, *, doc_ids: Any, params: Any) -> list[RecalledChunk]:
            found = await super().search(query, doc_ids=doc_ids, params=params)
            return [] if query == "learning rate" else found

    _use(monkeypatch, FindsNothing({"batch size": [InputError("the index is gone")]}))
    fake_llm.configure(rules=[{"match": SUBQ_RULE, "reply": TWO_STEPS}])
    out, _events = await run_graph(_request())
    assert out["error"] == ("recall found nothing in 1 step(s) and 1 failed: "
                            "the index is gone"), out["error"]


@pytest.mark.parametrize("documents", [
    {"document_contents": {"anchor": "# A\n\nSome text about attention."}},
    {"content": "# A\n\nSome text about attention."},
])
async def test_a_question_without_words_is_an_input_error_before_any_llm_call(
    fake_llm: FakeOpenAIServer, documents: dict[str, Any],
) -> None:
    out, events = await run_graph({"query": " ??? ", **documents})
    assert out["error"] is not None
    assert out["error"].startswith("the question has no words to search for: ask something")
    assert _errors(events) == [("document_check", out["error"])]
    assert fake_llm.stats().requests == []
    messages = as_session_messages(out["messages"])
    assert [(m.type.value, m.content) for m in messages] == [("USER", "???")]


async def test_a_question_without_words_about_a_knowledge_base(
    fake_llm: FakeOpenAIServer,
) -> None:
    await open_knowledge_base("lab", create=True)  # empty: the kb alone makes it a search
    out, _events = await run_graph({"query": "…?!", "kb": "lab", "mode_type": "LITERATURE_QA"})
    assert out["error"] and out["error"].startswith("the question has no words to search for")
    assert fake_llm.stats().requests == []
    out, _events = await run_graph({"query": "???"})  # without documents, chat answers it
    assert out["error"] is None and out["answer"], out["error"]
