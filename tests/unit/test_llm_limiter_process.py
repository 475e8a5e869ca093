"""The adaptive LLM limit as the process uses it: the context, Retry-After, the real graph."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from scholarflow import Context
from scholarflow.errors import RateLimitedLLMError
from scholarflow.llm import calls as llm
from scholarflow.llm.limiter import retry_after_seconds
from tests.conftest import run_graph
from tests.support import FakeOpenAIServer


async def test_the_process_limiter_follows_the_context() -> None:
    lim = llm.limiter(Context(max_concurrent_llm_calls=7, adaptive_llm_limit=False))
    try:
        assert lim.max_capacity == 7 and not lim.adaptive
        assert llm.limiter(Context(max_concurrent_llm_calls=7)).adaptive
    finally:
        llm.limiter(Context())
        lim.reset()


def test_retry_after_headers() -> None:
    assert retry_after_seconds({"Retry-After": "3"}) == 3.0
    assert retry_after_seconds({"retry-after": "0.5", "retry-after-ms": "120"}) == 0.12
    assert retry_after_seconds({"Retry-After": "-4"}) == 0.0
    assert retry_after_seconds({"Retry-After": "soon"}) is None
    assert retry_after_seconds({}) is None and retry_after_seconds(None) is None
    when = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    seconds = retry_after_seconds({"Retry-After": when})
    assert seconds is not None and 25 < seconds <= 30


# ------------------------------------------------------------------ through the server


async def test_a_429_from_the_server_carries_retry_after_and_pauses_the_limiter(
    fake_llm: FakeOpenAIServer,
) -> None:
    fake_llm.configure(fail_first_n=1, retry_after="0.3")
    with pytest.raises(RateLimitedLLMError, match="429") as info:
        await llm.complete(Context(), [("user", "hi")], node="t")
    assert info.value.retry_after == 0.3
    lim = llm.limiter()
    assert lim.capacity == 5 and 0 < lim.paused_for() <= 0.3
    result = await llm.complete(Context(), [("user", "hi")], node="t")  # waits, then goes
    assert result.text == "ok: hi" and lim.paused_for() == 0
    assert lim.capacity == 5 and lim.testing  # the first call of the halving's test


async def test_graph_limit_drops_after_429s_and_recovers(fake_llm: FakeOpenAIServer) -> None:
    # The first three calls the server sees are three of the first four sent: all sent
    # under the limit of 4, so one halving; then every success sent at 2 adds one.
    fake_llm.configure(latency=0.05, fail_first_n=3)
    docs = {f"d{i}": f"# Paper {i}\n\nResult {i}: accuracy {i}.{i}%." for i in range(24)}
    out, events = await run_graph({"query": "Summarize these papers", "document_contents": docs},
                                  Context(max_concurrent_llm_calls=4, approval_documents=None))
    lim = llm.limiter()
    assert out["strategy"] == "multi_doc_summary" and not out["error"]
    assert sum(e["type"] == "doc_summary_complete" for e in events) == 24
    assert lim.rate_limited == 3 and lim.decreases == 1
    assert lim.min_capacity == 2 and lim.capacity == 4
    assert fake_llm.stats().chat_calls == 25 + 3
    assert fake_llm.stats().max_in_flight <= 4 and lim.max_in_flight <= 4


async def test_graph_under_a_concurrency_rate_limit_backs_off_and_finishes(
    fake_llm: FakeOpenAIServer,
) -> None:
    # The server serves 3 at once and turns the rest away at once; the cap is 6.
    fake_llm.configure(latency=0.05, rate_limit_in_flight=3, fault_latency=0)
    docs = {f"d{i}": f"# Paper {i}\n\nFinding {i}: recall {i}.{i}%." for i in range(30)}
    out, events = await run_graph({"query": "Summarize these papers", "document_contents": docs},
                                  Context(max_concurrent_llm_calls=6, approval_documents=None))
    lim = llm.limiter()
    stats = fake_llm.stats()
    assert not out["error"] and out["answer"]
    assert sum(e["type"] == "doc_summary_complete" for e in events) == 30
    assert lim.decreases >= 1 and lim.min_capacity <= 3
    assert stats.failed_calls == lim.rate_limited >= 1
    assert stats.chat_calls == 31 + stats.failed_calls
    assert stats.max_in_flight <= 6 and lim.max_in_flight <= 6
