"""The process-wide limiter, error typing and retry policy of llm/calls.py."""

from __future__ import annotations

import asyncio

import pytest

from scholarflow import Context
from scholarflow.errors import ConfigurationError, FatalLLMError, RetryableLLMError
from scholarflow.llm import calls as llm
from scholarflow.llm.calls import LLMLimiter
from tests.conftest import paper, run_graph
from tests.support import FakeOpenAIServer


async def test_limiter_never_exceeds_its_capacity_and_leaves_no_slot_idle() -> None:
    lim = LLMLimiter(3)
    in_flight = peak = 0

    async def call() -> None:
        nonlocal in_flight, peak
        async with lim.slot():
            in_flight += 1
            peak = max(peak, in_flight)
            await asyncio.sleep(0.01)
            in_flight -= 1

    await asyncio.gather(*(call() for _ in range(30)))
    assert peak == 3 and lim.max_in_flight == 3 and lim.in_flight == 0


async def test_limiter_releases_on_error_and_on_cancel() -> None:
    lim = LLMLimiter(1)
    with pytest.raises(ValueError):
        async with lim.slot():
            raise ValueError
    assert lim.in_flight == 0
    async with lim.slot():
        waiter = asyncio.create_task(lim.acquire())
        await asyncio.sleep(0)
        waiter.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiter
    assert lim.in_flight == 0
    async with lim.slot():  # still usable
        assert lim.in_flight == 1


async def test_limiter_capacity_can_grow_and_shrink() -> None:
    lim = LLMLimiter(1)
    await lim.acquire()
    second = asyncio.create_task(lim.acquire())
    await asyncio.sleep(0)
    assert not second.done()
    lim.set_capacity(2)  # growing hands the slot to the waiter at once
    await asyncio.wait_for(second, 1)
    assert lim.in_flight == 2
    lim.set_capacity(1)
    lim.release()
    lim.release()
    assert lim.in_flight == 0


async def test_graph_fan_out_holds_the_process_wide_cap(fake_llm: FakeOpenAIServer) -> None:
    fake_llm.configure(latency=0.05)
    docs = {f"d{i}": f"# Paper {i}\n\nResult {i}: accuracy {i}.{i}%." for i in range(24)}
    ctx = Context(max_concurrent_llm_calls=4, approval_documents=None)
    out, _ = await run_graph({"query": "Summarize these papers", "document_contents": docs}, ctx)
    assert out["strategy"] == "multi_doc_summary" and not out["error"]
    assert fake_llm.stats().max_in_flight == 4
    assert llm.limiter().max_in_flight == 4
    assert fake_llm.stats().chat_calls == 25  # 24 summaries + 1 answer


async def test_two_runs_at_once_share_one_cap(fake_llm: FakeOpenAIServer) -> None:
    fake_llm.configure(latency=0.05)
    ctx = Context(max_concurrent_llm_calls=3)

    def docs(tag: str) -> dict[str, str]:
        return {f"{tag}{i}": f"# {tag} {i}\n\nFinding {tag}-{i}." for i in range(8)}

    await asyncio.gather(
        run_graph({"query": "Summarize these papers", "document_contents": docs("a")}, ctx),
        run_graph({"query": "Summarize these papers", "document_contents": docs("b")}, ctx),
    )
    assert fake_llm.stats().max_in_flight == 3


async def test_429_then_success_is_retried_by_the_node_policy(fake_llm: FakeOpenAIServer) -> None:
    fake_llm.configure(fail_first_n=2, fail_status=429)
    out, _ = await run_graph({"query": "hello"})
    assert out["error"] is None and out["answer"]
    assert fake_llm.stats().chat_calls == 3


async def test_persistent_500_ends_with_an_error_and_keeps_the_question(
    fake_llm: FakeOpenAIServer,
) -> None:
    fake_llm.configure(fail_first_n=100, fail_status=500)
    out, events = await run_graph({"query": "What learning rate did they use?",
                                   "content": paper("en_sparse_attention.md")})
    assert "failed with 500 after 4 attempts: the server is failing" in (out["error"] or "")
    assert fake_llm.stats().chat_calls == 4  # ERROR_RETRY.max_attempts (a 429 gets 8)
    assert [e["node"] for e in events if e["type"] == "node_error"] == ["answer_generation"]
    assert events[-1]["type"] == "error" and events[-1]["message"] == out["error"]


async def test_errors_are_typed(fake_llm: FakeOpenAIServer) -> None:
    ctx = Context()
    fake_llm.configure(fail_first_n=1, fail_status=429)
    with pytest.raises(RetryableLLMError, match="429"):
        await llm.complete(ctx, [("user", "hi")], node="t")
    fake_llm.configure(rules=[{"match": "bad", "status": 400}])
    with pytest.raises(FatalLLMError, match="400"):
        await llm.complete(ctx, [("user", "bad")], node="t")
    unreachable = Context(openai_api_base="http://127.0.0.1:9/v1", llm_timeout_seconds=2)
    with pytest.raises(RetryableLLMError, match="cannot reach"):
        await llm.complete(unreachable, [("user", "hi")], node="t")


async def test_a_call_may_set_its_own_temperature(fake_llm: FakeOpenAIServer) -> None:
    await llm.complete(Context(temperature=0.7), [("user", "hi")], node="t")
    await llm.complete(Context(temperature=0.7), [("user", "hi")], node="t", temperature=0.0)
    assert [r["temperature"] for r in fake_llm.stats().requests] == [0.7, 0.0]
    with pytest.raises(ValueError, match="reading_temperature"):
        Context(reading_temperature=-1)


async def test_stream_reports_usage_and_chunks(fake_llm: FakeOpenAIServer) -> None:
    fake_llm.configure(rules=[{"match": "count", "reply": "one two three four five six seven"}])
    pieces: list[str] = []
    result = await llm.stream(Context(), [("user", "count")], node="t", on_text=pieces.append)
    assert "".join(pieces) == result.text == "one two three four five six seven"
    assert len(pieces) > 1
    assert result.usage["output_tokens"] > 0 and result.usage["input_tokens"] > 0


async def test_no_llm_configured_is_a_clear_error(no_llm: None) -> None:
    with pytest.raises(ConfigurationError, match="OPENAI_API_KEY"):
        await llm.complete(Context(), [("user", "hi")], node="t")


async def test_cancelled_waiter_after_a_hand_over_race_leaks_nothing() -> None:
    lim = LLMLimiter(1)
    await lim.acquire()
    waiter = asyncio.create_task(lim.acquire())
    await asyncio.sleep(0)
    waiter.cancel()  # cancelled, then a release runs before the waiter wakes up
    lim.release()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert lim.in_flight == 0
    async with lim.slot():
        assert lim.in_flight == 1


def test_the_process_limit_comes_from_the_environment_unless_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SCHOLARFLOW_MAX_CONCURRENT_LLM_CALLS", "4")
    monkeypatch.setenv("SCHOLARFLOW_ADAPTIVE_LLM_LIMIT", "0")
    ctx = Context()
    assert ctx.max_concurrent_llm_calls == 4 and not ctx.adaptive_llm_limit
    given = Context(max_concurrent_llm_calls=7, adaptive_llm_limit=True)
    assert given.max_concurrent_llm_calls == 7 and given.adaptive_llm_limit
    for value in ("0", "ten", "-3"):
        monkeypatch.setenv("SCHOLARFLOW_MAX_CONCURRENT_LLM_CALLS", value)
        with pytest.raises(ConfigurationError, match="SCHOLARFLOW_MAX_CONCURRENT_LLM_CALLS"):
            Context()

