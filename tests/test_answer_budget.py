"""Summaries packed into groups that fit; no prompt ever exceeds context minus the answer."""

from __future__ import annotations

import pytest

from scholarflow import Context
from scholarflow.budget import TRUNCATION_MARK, cap_tokens, check_budget
from scholarflow.errors import ConfigurationError, InputError
from scholarflow.nodes.packing import pack_groups
from scholarflow.testing import FakeOpenAIServer
from scholarflow.tokens import count_message_tokens, count_tokens
from tests.conftest import SUMMARY_RULE, paper, run_graph


def test_pack_groups_is_tight_and_keeps_order() -> None:
    sizes = [5, 5, 5, 5, 4, 4, 2]
    groups = pack_groups(sizes, 10)
    assert sorted(i for g in groups for i in g) == list(range(7))
    assert all(sum(sizes[i] for i in g) <= 10 for g in groups)
    assert len(groups) == 3  # 30 units of work in bins of 10: the fewest possible
    assert all(g == sorted(g) for g in groups) and groups == sorted(groups)


def test_pack_groups_puts_an_oversized_item_alone() -> None:
    assert pack_groups([50, 3, 3], 10) == [[0], [1, 2]]


def _prompt_tokens(request: dict[str, object]) -> int:
    messages = request["messages"]
    assert isinstance(messages, list)
    return count_message_tokens(str(m["content"]) for m in messages)


async def test_many_summaries_report_per_group_then_merge(fake_llm: FakeOpenAIServer) -> None:
    long_summary = " ".join(f"finding{i}" for i in range(400))
    fake_llm.configure(rules=[
        {"match": SUMMARY_RULE, "reply": long_summary},
        {"match": "You are writing part", "reply": "Partial report."},
        {"match": "intermediate reports", "reply": "MERGED ANSWER"},
    ])
    ctx = Context(max_context_tokens=12_000, reserved_answer_tokens=2_000,
                  system_tokens_estimate=500)
    docs = {f"d{i}": f"# Paper {i}\n\n" + "text " * 200 for i in range(30)}
    out, events = await run_graph({"query": "Summarize these papers", "document_contents": docs},
                                  ctx)
    assert out["answer"] == "MERGED ANSWER", out["error"]
    requests = fake_llm.stats().requests
    reports = [r for r in requests if "You are writing part" in str(r["messages"])]
    assert len(reports) >= 2
    limit = ctx.max_context_tokens - ctx.reserved_answer_tokens
    assert max(_prompt_tokens(r) for r in requests) <= limit
    # the groups are as few as fit: one fewer would not hold all the summaries
    summary_tokens = sum(count_message_tokens([long_summary]) for _ in docs)
    assert len(reports) <= summary_tokens // (limit // 2) + 1
    assert any("partial reports" in e.get("content", "") for e in events
               if e["type"] == "thought_chunk")


async def test_one_group_answers_directly(fake_llm: FakeOpenAIServer) -> None:
    fake_llm.configure(rules=[
        {"match": SUMMARY_RULE, "reply": "short summary"},
        {"match": "You write a literature review", "reply": "THE REVIEW"},
    ])
    docs = {"a": paper("en_sparse_attention.md"), "b": paper("zh_multidoc_summary.md")}
    out, _ = await run_graph({"query": "Write a literature review of these papers",
                              "document_contents": docs})
    assert out["answer"] == "THE REVIEW"
    assert not any("You are writing part" in str(r["messages"])
                   for r in fake_llm.stats().requests)


async def test_full_content_prompt_fits_with_a_long_history(fake_llm: FakeOpenAIServer) -> None:
    ctx = Context(max_context_tokens=20_000, reserved_answer_tokens=4_000,
                  system_tokens_estimate=1_000)
    out, _ = await run_graph({"query": "hello"}, ctx)
    session = out["session"]["session_id"]
    for _ in range(3):
        await run_graph({"query": "Tell me more " + "please " * 300, "session_id": session}, ctx)
    out, _ = await run_graph({"query": "What learning rate did they use?", "session_id": session,
                              "content": paper("en_sparse_attention.md")}, ctx)
    limit = ctx.max_context_tokens - ctx.reserved_answer_tokens
    assert max(_prompt_tokens(r) for r in fake_llm.stats().requests) <= limit


def test_cap_tokens_stays_within_the_limit_and_marks_the_cut() -> None:
    text = " ".join(f"word{i}" for i in range(5000)) + " 学习率" * 500
    for limit in (1, 10, 257, 4000):
        head = cap_tokens(text, limit)
        tail = cap_tokens(text, limit, keep_end=True)
        assert count_tokens(head) <= limit and count_tokens(tail) <= limit
    assert cap_tokens(text, 100).endswith(TRUNCATION_MARK)
    assert cap_tokens(text, 100, keep_end=True).endswith("学习率")
    assert cap_tokens("short", 100) == "short" and cap_tokens(text, 0) == ""


def test_check_budget_names_the_settings_and_the_fix() -> None:
    with pytest.raises(ConfigurationError, match=r"max_context_tokens=4096 leaves no room .* "
                                                 r"reserved_answer_tokens=8000 .* raise "
                                                 r"max_context_tokens to at least 10256"):
        check_budget(Context(max_context_tokens=4096), query_tokens=5)
    with pytest.raises(InputError, match="question is too long: 200000 tokens, and at most "
                                         "117744 fit"):
        check_budget(Context(), query_tokens=200_000)
    check_budget(Context(), query_tokens=117_744)
