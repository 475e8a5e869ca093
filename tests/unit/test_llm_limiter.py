"""The adaptive (AIMD) LLM limit: its rules on their own (in the process: *_process.py)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

import pytest

from scholarflow.errors import RateLimitedLLMError
from scholarflow.llm.limiter import (
    HOLD_PER_SLOT,
    MAX_PAUSE_SECONDS,
    LLMLimiter,
)


def rate_limited(retry_after: float | None = None) -> RateLimitedLLMError:
    return RateLimitedLLMError("429", retry_after=retry_after)


async def one_call(lim: LLMLimiter, outcome: Exception | None = None) -> None:
    """One call through a slot that succeeds or raises `outcome`."""
    async with lim.slot():
        if outcome is not None:
            raise outcome


class Calls:
    """Calls that hold their slots until told how to end, so several overlap."""

    def __init__(self, lim: LLMLimiter) -> None:
        self.lim = lim
        self.tasks: list[asyncio.Task[None]] = []
        self.ends: list[asyncio.Future[Exception | None]] = []
        self.holding: set[int] = set()  # calls that got a slot and have not ended

    async def start(self, n: int) -> None:
        for _ in range(n):
            i = len(self.tasks)
            self.ends.append(asyncio.get_running_loop().create_future())
            self.tasks.append(asyncio.create_task(self._call(i)))
        await settle()

    async def _call(self, i: int) -> None:
        async with self.lim.slot():
            self.holding.add(i)
            outcome = await self.ends[i]
            self.holding.discard(i)
            if outcome is not None:
                raise outcome

    async def finish(self, i: int, outcome: Exception | None = None) -> None:
        self.ends[i].set_result(outcome)
        await asyncio.gather(self.tasks[i], return_exceptions=True)
        await settle()


async def settle() -> None:
    """Let every ready task run until it blocks (no timers involved)."""
    for _ in range(10):
        await asyncio.sleep(0)


class Server:
    """A scripted server for calls queued on the limiter, driven step by step (no clock).

    `refuse(n, admitted)` says whether the n-th call it receives (from 1) gets a 429,
    given the admitted calls in flight. A 429 is answered at once: each `step` ends the
    oldest refused call if there is one, else the oldest admitted call succeeds. Enough
    calls always wait for slots, as 200 documents do.
    """

    def __init__(self, lim: LLMLimiter, refuse: Callable[[int, int], bool]) -> None:
        self.lim, self.refuse = lim, refuse
        self.received = self.peak_admitted = 0
        self.admitted: list[asyncio.Future[None]] = []
        self.refused: list[asyncio.Future[None]] = []
        self.tasks: set[asyncio.Task[None]] = set()

    async def _call(self) -> None:
        with contextlib.suppress(RateLimitedLLMError):
            async with self.lim.slot():
                self.received += 1
                end = asyncio.get_running_loop().create_future()
                refused = self.refuse(self.received, len(self.admitted))
                (self.refused if refused else self.admitted).append(end)
                self.peak_admitted = max(self.peak_admitted, len(self.admitted))
                await end
                if refused:
                    raise rate_limited()

    async def run(self, steps: int) -> list[int]:
        """End `steps` calls; the limit after each."""
        limits = []
        for _ in range(steps):
            while len(self.tasks) < 3 * self.lim.max_capacity:
                task = asyncio.create_task(self._call())
                self.tasks.add(task)
                task.add_done_callback(self.tasks.discard)
            await settle()
            (self.refused or self.admitted).pop(0).set_result(None)
            await settle()
            limits.append(self.lim.capacity)
        return limits

    async def close(self) -> None:
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)


# ------------------------------------------------------------------ the rules


async def test_a_429_halves_then_each_success_adds_one_within_bounds() -> None:
    lim = LLMLimiter(8)
    with pytest.raises(RateLimitedLLMError):
        await one_call(lim, rate_limited())
    assert lim.capacity == 4 and lim.testing
    for _ in range(8):  # the test: 2 x 4 calls granted under the halved limit, held still
        await one_call(lim)
        assert lim.capacity == 4
    assert not lim.testing  # no 429 under 4: the halving helped, AIMD goes on
    for expected in (5, 6, 7, 8, 8, 8):  # ceiling at max_concurrent_llm_calls
        await one_call(lim)
        assert lim.capacity == expected
    assert lim.decreases == 1 and lim.min_capacity == 4 and lim.restores == 0
    assert lim.max_capacity == 8 and lim.in_flight == 0


async def test_429s_no_halving_helps_against_restore_the_limit_and_are_ignored() -> None:
    now = [0.0]
    lim = LLMLimiter(8, clock=lambda: now[0])  # a still clock: the pause below stays
    limits = [lim.capacity]
    while not lim.restores and len(limits) < 40:
        with pytest.raises(RateLimitedLLMError):
            await one_call(lim, rate_limited())
        if lim.capacity != limits[-1]:
            limits.append(lim.capacity)
    # Halved, and again while the 429s kept coming as often; at 1 (the floor, never 0)
    # they still did: not about our load, so back to where the test started.
    assert limits == [8, 4, 2, 1, 8]
    assert lim.capacity == 8 and not lim.testing and lim.holding > 0
    assert lim.decreases == 3 and lim.min_capacity == 1 and lim.restores == 1
    for _ in range(20):  # held: the same 429s do not halve it again...
        with pytest.raises(RateLimitedLLMError):
            await one_call(lim, rate_limited())
    lim.record_rate_limit(lim.epoch, retry_after=2)
    assert lim.capacity == 8 and lim.decreases == 3
    assert lim.paused_for() == 2  # ...but a Retry-After is honoured all the same


async def test_load_independent_429s_leave_the_limit_at_the_cap() -> None:
    # Every 3rd call the server receives fails, whatever the load: halving cannot help.
    lim = LLMLimiter(10)
    server = Server(lim, lambda n, admitted: n % 3 == 0)
    try:
        early = await server.run(40)  # the first 429 halves; the test finds it useless
        assert lim.restores == 1 and min(early) >= 1
        assert early[-1] == 10 and not lim.testing
        held = await server.run(200)
        assert min(held) == 10 and lim.restores == 1  # 70 more 429s, not one halving
        assert lim.decreases <= 3 and lim.rate_limited >= 80
        # Once the hold is over it tests again, and gives the same verdict.
        later = await server.run(HOLD_PER_SLOT * 10)
        assert lim.restores == 2 and later[-1] == 10
        assert sum(later) / len(later) > 9  # the retest costs ~20 outcomes below 10
        assert lim.max_in_flight <= 10
    finally:
        await server.close()


@pytest.mark.parametrize("quota", [3, 7])
async def test_load_dependent_429s_still_bring_the_limit_down_to_the_quota(quota: int) -> None:
    # A concurrency quota: a 429 for a call arriving while `quota` calls are being served.
    lim = LLMLimiter(10)
    server = Server(lim, lambda n, admitted: admitted >= quota)
    try:
        await server.run(30)
        limits = await server.run(300)
        assert max(limits) <= quota + 1 and min(limits) >= quota // 2
        assert sum(limits) / len(limits) >= quota / 2  # a saw-tooth below the quota
        assert lim.restores == 0 and server.peak_admitted <= quota
        assert lim.rate_limited < 0.25 * server.received  # little waste
    finally:
        await server.close()


async def test_congestion_that_starts_during_a_hold_is_still_caught() -> None:
    quota = [0]  # 0: no quota yet, every 3rd call fails; then a quota of 3

    def refuse(n: int, admitted: int) -> bool:
        return admitted >= quota[0] if quota[0] else n % 3 == 0

    lim = LLMLimiter(10)
    server = Server(lim, refuse)
    try:
        await server.run(60)
        assert lim.restores == 1 and lim.holding > 0 and lim.capacity == 10
        quota[0] = 3
        await server.run(60)  # the 429 fraction rises well above the 1/3 found load-free
        limits = await server.run(100)
        assert max(limits) <= 4 and lim.restores == 1
    finally:
        await server.close()


async def test_many_429s_in_flight_at_once_halve_once() -> None:
    lim = LLMLimiter(8)
    calls = Calls(lim)
    await calls.start(8)
    assert lim.in_flight == 8
    for i in range(8):  # all eight were sent under the limit of 8: one congestion event
        await calls.finish(i, rate_limited())
    assert lim.capacity == 4 and lim.decreases == 1 and lim.rate_limited == 8
    for _ in range(8):  # the test window: no 429 under 4, so the halving helped
        await one_call(lim)
    assert lim.capacity == 4 and not lim.testing
    with pytest.raises(RateLimitedLLMError):  # a call sent under the new limit: a new event
        await one_call(lim, rate_limited())
    assert lim.capacity == 2 and lim.decreases == 2


async def test_a_slot_granted_before_a_decrease_belongs_to_the_old_load() -> None:
    lim = LLMLimiter(4)
    first = await lim.acquire()
    for _ in range(3):
        await lim.acquire()
    waiter = asyncio.create_task(lim.acquire())
    await settle()
    lim.release()  # grants the waiter a slot under the limit of 4...
    lim.record_rate_limit(first)  # ...and a 429 halves it before the waiter wakes up
    granted = await waiter
    assert granted == 0 and lim.epoch == 1
    lim.record_rate_limit(granted)  # its own 429 is part of the same congestion
    assert lim.capacity == 2 and lim.decreases == 1


async def test_successes_sent_under_the_old_limit_do_not_grow_the_new_one() -> None:
    lim = LLMLimiter(4)
    calls = Calls(lim)
    await calls.start(4)
    await calls.finish(0, rate_limited())
    assert lim.capacity == 2
    for i in (1, 2, 3):
        await calls.finish(i)
    assert lim.capacity == 2  # they were sent at 4 in flight, which drew the 429
    for _ in range(4):  # the test window under 2 (held still)
        await one_call(lim)
    assert lim.capacity == 2 and not lim.testing
    await one_call(lim)
    assert lim.capacity == 3


async def test_shrinking_below_the_calls_in_flight_preempts_nothing() -> None:
    lim = LLMLimiter(4)
    calls = Calls(lim)
    await calls.start(6)  # 4 hold slots, 2 wait
    assert lim.in_flight == 4 and calls.holding == {0, 1, 2, 3}
    await calls.finish(0, rate_limited())  # limit 2 with 3 in flight: none is cancelled
    assert lim.capacity == 2 and lim.in_flight == 3 and calls.holding == {1, 2, 3}
    await calls.finish(1)
    assert lim.in_flight == 2 and calls.holding == {2, 3}  # at the limit: the others wait
    await calls.finish(2)
    assert calls.holding == {3, 4}  # below it: the first waiter, and only it, goes
    assert lim.max_in_flight == 4
    for i in (3, 4):
        await calls.finish(i)
    await calls.finish(5)
    assert lim.in_flight == 0


async def test_retry_after_pauses_new_slots_until_it_has_passed() -> None:
    now = [100.0]
    lim = LLMLimiter(4, clock=lambda: now[0])
    calls = Calls(lim)
    await calls.start(2)
    await calls.finish(0, rate_limited(retry_after=5))
    assert lim.capacity == 2 and lim.paused_for() == 5
    await calls.start(1)  # call 2: room under the limit, but the server said wait
    assert calls.holding == {1}
    now[0] = 104.0
    await calls.finish(1)  # a release during the pause hands nothing over
    assert lim.in_flight == 0 and calls.holding == set()
    now[0] = 105.0
    lim.record_success(lim.epoch)  # the next event after the pause hands over
    await settle()
    assert calls.holding == {2}
    await calls.finish(2)
    # A longer pause than MAX_PAUSE_SECONDS is cut; a shorter one never shortens a longer.
    lim.record_rate_limit(lim.epoch, retry_after=10_000)
    assert lim.paused_for() == MAX_PAUSE_SECONDS
    lim.record_rate_limit(lim.epoch, retry_after=1)
    assert lim.paused_for() == MAX_PAUSE_SECONDS


async def test_a_pause_ends_by_itself_with_no_other_call() -> None:
    lim = LLMLimiter(2)
    with pytest.raises(RateLimitedLLMError):
        await one_call(lim, rate_limited(retry_after=0.2))
    waiter = asyncio.create_task(one_call(lim))
    await asyncio.sleep(0)
    assert not waiter.done() and lim.in_flight == 0
    await asyncio.wait_for(waiter, 5)  # woken by the pause's own timer
    assert lim.in_flight == 0 and lim.paused_for() == 0


async def test_fixed_mode_ignores_429s_and_switching_modes_resets_the_limit() -> None:
    lim = LLMLimiter(6, adaptive=False)
    with pytest.raises(RateLimitedLLMError):
        await one_call(lim, rate_limited(retry_after=30))
    assert lim.capacity == 6 and lim.rate_limited == 1 and lim.paused_for() == 0
    lim.adaptive = True
    with pytest.raises(RateLimitedLLMError):
        await one_call(lim, rate_limited())
    assert lim.capacity == 3
    lim.adaptive = False
    assert lim.capacity == 6
    lim.adaptive = True
    with pytest.raises(RateLimitedLLMError):
        await one_call(lim, rate_limited())
    lim.set_capacity(5)  # a new configured cap starts again from it
    assert lim.capacity == lim.max_capacity == 5
    with pytest.raises(ValueError):  # other failures are not congestion
        await one_call(lim, ValueError("boom"))
    assert lim.capacity == 5


def test_one_limiter_serves_loops_in_several_threads() -> None:
    """Scripts run the graph in threads with loops of their own: a slot freed on one
    loop wakes a waiter of another on its own loop, none is lost, the cap holds."""
    import threading

    lim = LLMLimiter(2, adaptive=False)
    failures: list[BaseException] = []

    async def calls() -> None:
        async def one() -> None:
            async with lim.slot():
                assert lim.in_flight <= 2
                await asyncio.sleep(0.002)
        await asyncio.wait_for(asyncio.gather(*(one() for _ in range(30))), timeout=30)

    def thread() -> None:
        try:
            asyncio.run(calls())
        except BaseException as exc:  # reported below, in the test's thread
            failures.append(exc)

    threads = [threading.Thread(target=thread) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert failures == []
    assert lim.in_flight == 0 and lim.max_in_flight <= 2
