"""The custom stream: all 13 event types, node_complete everywhere, show_thinking, errors."""

from __future__ import annotations

from typing import Any

from scholarflow import Context
from scholarflow.events import EVENT_TYPES, THINKING_EVENTS
from tests.conftest import SUMMARY_RULE, paper, run_graph, types
from tests.support import FakeOpenAIServer


def _completed(events: list[dict[str, Any]]) -> list[str]:
    return [e["node"] for e in events if e["type"] == "node_complete"]


async def test_every_event_type_is_sent_across_the_routes(fake_llm: FakeOpenAIServer) -> None:
    fake_llm.configure(rules=[
        {"match": SUMMARY_RULE + ".*BROKEN", "status": 400},
        {"match": SUMMARY_RULE, "reply": "a summary"},
    ])
    seen: set[str] = set()
    docs = {"a": paper("en_sparse_attention.md"), "b": "# BROKEN\n\nbad", "c": "# C\n\nok"}
    _, events = await run_graph({"query": "Summarize these papers", "document_contents": docs})
    seen |= set(types(events))
    _, events = await run_graph({"query": "What learning rate did they use?",
                                 "document_contents": {"a": docs["a"], "c": docs["c"]}},
                                Context(similarity_threshold=1.0))  # recall finds nothing
    seen |= set(types(events))
    assert seen == EVENT_TYPES


async def test_node_complete_from_every_node_on_the_path(fake_llm: FakeOpenAIServer) -> None:
    _, events = await run_graph({"query": "hi"})
    assert _completed(events) == ["request_init", "document_check", "simple_interaction",
                                  "session_save"]
    _, events = await run_graph({"query": "What learning rate did they use?",
                                 "content": paper("en_sparse_attention.md")})
    assert _completed(events) == ["request_init", "document_check", "intent_recognition",
                                  "strategy_selection", "answer_generation", "session_save"]
    _, events = await run_graph({"query": "Summarize these papers",
                                 "document_contents": {"a": "# A\n\nx", "b": "# B\n\ny"}})
    done = _completed(events)
    assert done[:5] == ["request_init", "document_check", "intent_recognition",
                        "strategy_selection", "cost_check"]
    assert done.count("summarize_document") == 2
    assert done[-3:] == ["document_summary", "answer_generation", "session_save"]


async def test_thinking_is_bracketed_and_can_be_turned_off(fake_llm: FakeOpenAIServer) -> None:
    payload = {"query": "What learning rate did they use?",
               "content": paper("en_sparse_attention.md")}
    _, events = await run_graph(payload)
    kinds = types(events)
    first_answer = kinds.index("answer_chunk")
    assert kinds.index("thinking_start") < kinds.index("thought_chunk") < first_answer
    assert kinds.index("thinking_end") < first_answer
    _, events = await run_graph(payload, Context(show_thinking=False))
    assert not set(types(events)) & THINKING_EVENTS
    assert "answer_chunk" in types(events) and types(events)[-1] == "final_answer"


async def test_a_failing_node_sends_node_error_then_error(fake_llm: FakeOpenAIServer) -> None:
    # A valid request (an empty question is refused before the run: tests/integration/hostile) that
    # request_init cannot serve.
    out, events = await run_graph({"query": "hi", "kb": "missing"})
    assert types(events)[-1] == "error"
    assert events[-1]["message"].startswith("no knowledge base 'missing'")
    assert out["error"] == events[-1]["message"]
    node_errors = [e for e in events if e["type"] == "node_error"]
    assert node_errors[0]["node"] == "request_init"


async def test_one_failed_summary_does_not_sink_the_others(fake_llm: FakeOpenAIServer) -> None:
    fake_llm.configure(rules=[
        {"match": SUMMARY_RULE + ".*BROKEN", "status": 400},
        {"match": SUMMARY_RULE, "reply": "fine summary"},
        {"match": "summarise a set", "reply": "ANSWER"},
    ])
    docs = {"a": "# A\n\nalpha", "b": "# BROKEN\n\nbeta", "c": "# C\n\ngamma"}
    out, events = await run_graph({"query": "Summarize these papers", "document_contents": docs})
    assert out["answer"] == "ANSWER" and out["error"] is None
    failed = [e for e in events if e["type"] == "doc_summary_error"]
    assert [e["doc_id"] for e in failed] == ["b"] and "400" in failed[0]["error"]
