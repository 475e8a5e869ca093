"""Summaries packed into groups that fit; no prompt ever exceeds context minus the answer."""

from __future__ import annotations

import pytest

from scholarflow import Context
from scholarflow.context import MAX_CONTEXT_ENV
from scholarflow.errors import ConfigurationError, InputError, InvalidContextError
from scholarflow.llm.budget import (
    TRUNCATION_MARK,
    answer_reserve,
    cap_tokens,
    check_budget,
    material_room,
    prompt_budget,
    system_reserve,
    window,
)
from scholarflow.nodes.packing import pack_groups
from scholarflow.tokens import count_message_tokens, count_tokens
from tests.conftest import SUMMARY_RULE, paper, run_graph
from tests.support import FakeOpenAIServer


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
                  system_tokens_estimate=500, approval_documents=None)
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
    assert (out["error"], out["strategy"]) == (None, "full_content"), out["error"]
    limit = ctx.max_context_tokens - ctx.reserved_answer_tokens
    assert max(_prompt_tokens(r) for r in fake_llm.stats().requests) <= limit
    # The answer's prompt held the whole paper and the earlier turns.
    answer = fake_llm.stats().requests[-1]["messages"]
    assert "AnchorWindow" in str(answer[0]["content"])
    assert any("Tell me more" in str(m["content"]) for m in answer[1:-1])


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
    with pytest.raises(ConfigurationError, match=r"max_context_tokens=1200 leaves no room .* "
                                                 r"reserved_answer_tokens=1024 .* raise "
                                                 r"max_context_tokens \(--max-context, "
                                                 r"SCHOLARFLOW_MAX_CONTEXT_TOKENS\) to at "
                                                 r"least 1536"):
        check_budget(Context(max_context_tokens=1200), query_tokens=5)
    with pytest.raises(ConfigurationError, match=r"reserved_answer_tokens=8000 .* at least 10256"):
        check_budget(Context(max_context_tokens=4096, reserved_answer_tokens=8000,
                             system_tokens_estimate=2000), query_tokens=5)
    with pytest.raises(InputError, match="question is too long: 200000 tokens, and at most "
                                         "117744 fit"):
        check_budget(Context(), query_tokens=200_000)
    check_budget(Context(), query_tokens=117_744)


# window: (answer reserve, system reserve) when neither is given
SCALED = {1_536: (1_024, 256), 4_096: (1_024, 256), 8_192: (1_024, 512),
          16_384: (2_048, 1_024), 32_768: (4_096, 2_000), 65_536: (8_000, 2_000),
          128_000: (8_000, 2_000), 1_000_000: (8_000, 2_000)}


@pytest.mark.parametrize("size", sorted(SCALED))
def test_the_reserves_scale_with_the_window(size: int) -> None:
    ctx = Context(max_context_tokens=size)
    assert (answer_reserve(ctx), system_reserve(ctx)) == SCALED[size]
    assert prompt_budget(ctx) == size - SCALED[size][0]
    check_budget(ctx, query_tokens=0)  # every window from 1536 up leaves room for material


def test_the_design_defaults_hold_at_128k_and_given_reserves_win() -> None:
    ctx = Context()
    assert (window(ctx), answer_reserve(ctx), system_reserve(ctx)) == (128_000, 8_000, 2_000)
    ctx = Context(max_context_tokens=4096, reserved_answer_tokens=300, system_tokens_estimate=0)
    assert (answer_reserve(ctx), system_reserve(ctx), material_room(ctx)) == (300, 0, 3796)
    ctx = Context(max_context_tokens=8192, system_tokens_estimate=100)
    assert (answer_reserve(ctx), system_reserve(ctx)) == (1024, 100)  # each field on its own


def test_the_window_comes_from_the_environment_unless_given(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(MAX_CONTEXT_ENV, " 8192 ")
    assert window(Context()) == 8192 and answer_reserve(Context()) == 1024
    assert window(Context(max_context_tokens=16_384)) == 16_384  # given wins
    for bad in ("8k", "0", "-5", "1e4", "8192.5"):
        monkeypatch.setenv(MAX_CONTEXT_ENV, bad)
        with pytest.raises(ConfigurationError) as raised:
            Context()
        message = str(raised.value)
        assert "\n" not in message and message.startswith(MAX_CONTEXT_ENV), message
        assert f"not {bad!r}: fix or unset {MAX_CONTEXT_ENV}" in message, message


@pytest.mark.parametrize(("field", "value", "says"), [
    ("max_context_tokens", 0, "max_context_tokens must be at least 1, not 0; leave it out "
                              "for the default 128000"),
    ("reserved_answer_tokens", 0, "reserved_answer_tokens must be at least 1, not 0; leave "
                                  "it out for the default (window / 8 within 1024-8000)"),
    ("system_tokens_estimate", -1, "system_tokens_estimate must be at least 0, not -1"),
    ("reserved_answer_tokens", "big", "reserved_answer_tokens must be a whole number or null"),
])
def test_bad_window_settings_are_one_clear_line(field: str, value: object, says: str) -> None:
    with pytest.raises(InvalidContextError) as raised:
        Context(**{field: value})  # type: ignore[arg-type]
    assert says in str(raised.value) and "\n" not in str(raised.value)


async def test_the_cli_takes_max_context_over_the_environment(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from scholarflow.cli.main import _parser, _run_context, run

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv(MAX_CONTEXT_ENV, "8192")
    args = _parser().parse_args(["ask", "hi", "--max-context", "4096"])
    assert _run_context(args).max_context_tokens == 4096
    assert _run_context(_parser().parse_args(["ask", "hi"])).max_context_tokens == 8192
    for argv in (["ask", "hi", "--max-context", "4k"], ["resume", "s1", "--max-context", "0"]):
        with pytest.raises(SystemExit) as exited:
            _parser().parse_args(argv)
        assert exited.value.code == 2
        assert "--max-context: expected the model's context window in tokens" in \
            capsys.readouterr().err
    monkeypatch.setenv(MAX_CONTEXT_ENV, "lots")
    assert await run(_parser().parse_args(["ask", "hi"])) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {MAX_CONTEXT_ENV} must be") and "\n" not in err, err
