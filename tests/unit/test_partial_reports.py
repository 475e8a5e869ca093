"""Partial reports are their own Sends (nodes/reports.py): each is retried on its own, and
one that fails for good ends the run in its error without redoing the others."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from scholarflow import Context
from tests.conftest import SUMMARY_RULE, run_graph, types
from tests.support import FakeOpenAIServer

REPORT_RULE = "You are writing part"  # MULTI_DOC_SUMMARY_SYNTHESIS_PROMPT
MERGE_RULE = "intermediate reports"  # MULTI_DOC_SUMMARY_FINAL_MERGE_PROMPT
PART = re.compile(r"You are writing part (\d+) of (\d+)")
DOCS = {f"d{i}": f"# Paper {i}\n\n" + "text " * 200 for i in range(30)}


def _context() -> Context:
    """30 summaries of ~1000 tokens in this window: several partial reports, then one merge.
    (Built in the test: Context reads the environment, which fake_llm sets.)"""
    return Context(max_context_tokens=12_000, reserved_answer_tokens=2_000,
                   system_tokens_estimate=500, approval_documents=None)


def _rules(*report_faults: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"match": SUMMARY_RULE, "reply": " ".join(f"finding{i}" for i in range(400))},
        *report_faults,  # first: the first rule that matches answers
        {"match": REPORT_RULE, "reply": "Partial report."},
        {"match": MERGE_RULE, "reply": "MERGED ANSWER"},
    ]


def _calls(fake: FakeOpenAIServer, rule: str) -> list[str]:
    return [str(r["messages"][0]["content"]) for r in fake.stats().requests
            if rule in str(r["messages"][0]["content"])]


def _report_calls(fake: FakeOpenAIServer) -> Counter[int]:
    """How often each partial report was asked for, by its part number."""
    parts = [PART.search(prompt) for prompt in _calls(fake, REPORT_RULE)]
    assert all(parts) and len({m.group(2) for m in parts if m}) == 1  # one round
    return Counter(int(m.group(1)) for m in parts if m)


async def test_a_429_on_one_partial_report_redoes_that_report_only(
    fake_llm: FakeOpenAIServer,
) -> None:
    fake_llm.configure(rules=_rules({"match": REPORT_RULE + " 2 of", "status": 429, "times": 1}))
    out, events = await run_graph({"query": "Summarize these papers", "document_contents": DOCS},
                                  _context())
    assert out["answer"] == "MERGED ANSWER", out["error"]
    calls = _report_calls(fake_llm)
    assert len(calls) >= 3, calls
    # Part 2 twice (the 429, then its retry); every other report, finished, once.
    assert calls == {part: 2 if part == 2 else 1 for part in calls}, calls
    assert len(_calls(fake_llm, SUMMARY_RULE)) == len(DOCS)
    assert len(_calls(fake_llm, MERGE_RULE)) == 1
    usage = Counter(u["node"] for u in out["usage"])
    assert usage == {"summarize_document": len(DOCS), "partial_report": len(calls),
                     "answer_generation": 1}
    assert "node_error" not in types(events)


async def test_a_partial_report_that_fails_for_good_ends_the_run_in_its_error(
    fake_llm: FakeOpenAIServer,
) -> None:
    fake_llm.configure(rules=_rules({"match": REPORT_RULE + " 2 of", "status": 400}))
    out, events = await run_graph({"query": "Summarize these papers", "document_contents": DOCS},
                                  _context())
    error = out["error"] or ""
    assert "400" in error and "\n" not in error, error
    calls = _report_calls(fake_llm)
    assert calls == {part: 1 for part in calls}, calls  # a 400 is not retried, nor the others
    assert not _calls(fake_llm, MERGE_RULE)  # nothing merged without that group's documents
    # One node_error, for the node whose work the reports are, then the run's error.
    assert [(e["node"], e["error"]) for e in events if e["type"] == "node_error"] == [
        ("answer_generation", error)]
    assert types(events)[-1] == "error" and events[-1]["message"] == error
