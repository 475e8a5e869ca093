"""First-token and gap timeouts (llm_watch.StallWatch), on streams scripted in-process."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from scholarflow.llm.watch import (
    PREFILL_TOKENS_PER_TIMEOUT,
    StallTimeoutError,
    StallWatch,
    first_token_allowance,
)


async def _stream(delays: list[float]) -> AsyncIterator[int]:
    for i, delay in enumerate(delays):
        await asyncio.sleep(delay)
        yield i


async def _drain(watch: StallWatch, delays: list[float]) -> list[int]:
    got, stream = [], aiter(_stream(delays))
    with watch:
        while True:
            try:
                got.append(await watch.next(stream))
            except StopAsyncIteration:
                return got


async def test_a_long_reply_that_keeps_streaming_never_times_out() -> None:
    # 12 chunks over ~1.2 s with a 0.5 s timeout: only gaps count, not the total.
    watch = StallWatch("long", 0.5, 10)
    assert await _drain(watch, [0.1] * 12) == list(range(12))


async def test_no_first_token_in_time_is_a_stall_that_says_so() -> None:
    with pytest.raises(StallTimeoutError) as caught:
        await _drain(StallWatch("silent", 0.1, 10), [5.0])
    assert not caught.value.started and caught.value.waited == pytest.approx(0.1)


async def test_a_gap_mid_reply_is_a_stall_mid_reply() -> None:
    got: list[int] = []
    watch = StallWatch("gap", 0.1, 10, on_first=lambda: got.append(-1))
    with pytest.raises(StallTimeoutError) as caught:
        await _drain(watch, [0.0, 0.02, 5.0])
    assert caught.value.started and got == [-1]


async def test_a_call_queued_behind_our_own_busy_call_waits_for_it() -> None:
    # Another call to the same endpoint streams for ~1.5 s; this one gets its first
    # chunk only after it (a server serving one at a time), later than its 0.5 s.
    busy = asyncio.create_task(_drain(StallWatch("queue", 0.5, 10), [0.1] * 15))
    queued = await _drain(StallWatch("queue", 0.5, 10), [1.6, 0.01])
    assert queued == [0, 1] and await busy == list(range(15))


async def test_a_queue_that_never_moves_still_fails() -> None:
    with pytest.raises(StallTimeoutError):
        await _drain(StallWatch("dead-queue", 0.05, 10), [10.0])


async def test_time_spent_by_the_caller_is_not_the_servers_stall() -> None:
    watch, stream = StallWatch("slow-reader", 0.5, 10), aiter(_stream([0.0, 0.0]))
    with watch:
        assert await watch.next(stream) == 0
        await asyncio.sleep(1.2)  # e.g. a filter embedding a sentence
        assert await watch.next(stream) == 1


async def test_an_outside_cancellation_is_still_a_cancellation() -> None:
    task = asyncio.create_task(_drain(StallWatch("cancel", 5.0, 10), [5.0]))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


def test_a_long_prompt_may_take_longer_to_first_token() -> None:
    assert first_token_allowance(120, 500) == 120
    assert first_token_allowance(120, 4 * PREFILL_TOKENS_PER_TIMEOUT) == 480
