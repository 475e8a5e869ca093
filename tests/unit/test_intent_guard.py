"""The guard after the intent LLM, with the model's verdict given by the scripted server.

A summary, review or critique sends documents through the model (one summary
each, for a library) or writes a referee report. The model's verdict for one stands
only when the message asks for such a task; a message that asks about something and
names no task is a question for recall (LITERATURE_QA, decided_by "guard"). Each case
states the route it must get.
"""

from __future__ import annotations

import json

import pytest

from scholarflow import Context
from scholarflow.intents import Intent
from scholarflow.nodes.intent import recognise_intent, select_strategy
from scholarflow.state import DocumentInfo
from tests.conftest import INTENT_RULE, paper, run_graph
from tests.support import FakeOpenAIServer

# A library: what a knowledge base of papers gives intent recognition.
LIBRARY = [DocumentInfo(doc_id=f"doc{i}", title=f"Paper {i}", tokens=20_000,
                        content_hash=f"hash{i}") for i in range(12)]
TASKS = ["LITERATURE_SUMMARY", "REVIEW_GENERATION", "PAPER_REVIEW"]


def _model_says(fake_llm: FakeOpenAIServer, intent: str) -> None:
    reply = json.dumps({"intent": intent, "confidence": 0.9, "reason": "scripted"})
    fake_llm.configure(rules=[{"match": INTENT_RULE, "reply": reply}])


def _intent_calls(fake_llm: FakeOpenAIServer) -> int:
    return sum(INTENT_RULE in r["messages"][0]["content"] for r in fake_llm.stats().requests)


async def _route(query: str) -> tuple[Intent, str, str, str]:
    # The examples off: these cases are about the model's verdict and the guard after it.
    decision = await recognise_intent(Context(intent_example_neighbours=0), query,
                                      documents=LIBRARY)
    strategy = select_strategy(decision.intent, use_direct_content=False,
                               document_count=len(LIBRARY))
    return decision.intent, decision.decided_by, strategy, decision.reason


@pytest.mark.parametrize("model", TASKS)
@pytest.mark.parametrize("query", [
    "List the genes the knockdown upregulated in liver",  # an instruction, no question
    "anchor tokens and memory savings",  # a bare topic
    "列出敲除后在肝脏中上调的基因",
])
async def test_a_task_verdict_on_a_message_without_a_task_goes_to_recall(
    fake_llm: FakeOpenAIServer, query: str, model: str
) -> None:
    _model_says(fake_llm, model)
    intent, decided_by, strategy, reason = await _route(query)
    assert _intent_calls(fake_llm) == 1  # the model was asked: the rules were not sure
    assert (intent, decided_by, strategy) == (Intent.LITERATURE_QA, "guard", "chunk_recall")
    assert model in reason and "names no summary, review or critique" in reason


@pytest.mark.parametrize(("query", "model", "strategy"), [
    ("summarize the weaknesses", "PAPER_REVIEW", "chunk_recall"),
    ("summarize the weaknesses", "LITERATURE_SUMMARY", "multi_doc_summary"),
    ("总结一下这几篇论文的研究现状", "REVIEW_GENERATION", "multi_doc_summary"),
    # misspelt task words: the rules cannot read them, the model can
    ("sumarize the paper pls", "LITERATURE_SUMMARY", "multi_doc_summary"),
    ("wrtie a literature reivew for these papers", "REVIEW_GENERATION", "multi_doc_summary"),
    # no subject of its own: the model reads it with the conversation
    ("Thoughts?", "PAPER_REVIEW", "chunk_recall"),
])
async def test_a_task_verdict_on_a_message_that_asks_for_a_task_stands(
    fake_llm: FakeOpenAIServer, query: str, model: str, strategy: str
) -> None:
    _model_says(fake_llm, model)
    assert await _route(query) == (Intent(model), "llm", strategy, "scripted")
    assert _intent_calls(fake_llm) == 1


@pytest.mark.parametrize("model", ["LITERATURE_QA", "SIMPLE_INTERACTION"])
async def test_other_verdicts_are_not_guarded(fake_llm: FakeOpenAIServer, model: str) -> None:
    _model_says(fake_llm, model)
    intent, decided_by, _, _ = await _route("List the genes the knockdown upregulated in liver")
    assert (intent, decided_by) == (Intent(model), "llm")


@pytest.mark.parametrize("query", [
    "Which soil bacteria showed the greatest differences in abundance after fertilisation?",
    "Is a 10 mM dose sufficient to block glucose uptake in neurons?",
    "在斑马鱼中，哪个基因的缺失会导致心脏发育异常？",
])
async def test_a_precise_question_never_reaches_the_model(
    fake_llm: FakeOpenAIServer, query: str
) -> None:
    _model_says(fake_llm, "REVIEW_GENERATION")  # what a biased model would say
    intent, decided_by, strategy, _ = await _route(query)
    assert (intent, decided_by, strategy) == (Intent.LITERATURE_QA, "rules", "chunk_recall")
    assert _intent_calls(fake_llm) == 0


async def test_the_graph_records_and_tells_why_the_model_was_overruled(
    fake_llm: FakeOpenAIServer,
) -> None:
    _model_says(fake_llm, "REVIEW_GENERATION")
    out, events = await run_graph({
        "query": "anchor tokens and memory savings",
        "document_contents": {"a": paper("en_sparse_attention.md"),
                              "b": paper("en_retrieval_qa.md")},
    })
    assert (out["detected_intent"], out["intent_decided_by"], out["strategy"]) == (
        "LITERATURE_QA", "guard", "chunk_recall")
    assert "summarize_document" not in {u["node"] for u in out["usage"]}
    thoughts = [e["content"] for e in events
                if e["type"] == "thought_chunk" and e["node"] == "intent_recognition"]
    assert any("decided by guard" in t and "REVIEW_GENERATION" in t for t in thoughts), thoughts
