"""The latency half of the adaptive LLM limit (llm/latency.py), on simulated servers.

`Sim` is a discrete-event simulation (no clock, no sleeping): a server that serves
at most k calls at once and queues the rest in arrival order, and a client that
keeps `LatencyLimit.limit` calls in flight while work is left.
"""

from __future__ import annotations

import asyncio
import heapq
import random
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest

from scholarflow.errors import RateLimitedLLMError
from scholarflow.llm.latency import PROBE_MAX, LatencyLimit
from scholarflow.llm.limiter import LLMLimiter


@dataclass
class Call:
    sent: float
    load: int
    tokens: int
    prefill: float
    decode: float
    first_at: float = 0.0


@dataclass
class Sim:
    lat: LatencyLimit
    k: Callable[[float], int | None]  # slots at time t; None: no limit
    prefill: Callable[[int], float] = lambda tokens: 0.2 + tokens / 2000
    decode: float = 2.0
    tokens: Callable[[random.Random], int] = lambda rng: rng.randint(300, 3000)
    seed: int = 1
    now: float = 0.0
    in_flight: int = 0
    serving: int = 0
    queue: list[Call] = field(default_factory=list)
    events: list[tuple[float, int, str, Call | None]] = field(default_factory=list)
    trace: list[tuple[float, int, int]] = field(default_factory=list)  # (t, in flight, limit)
    done: int = 0
    _seq: int = 0

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    def _at(self, t: float, kind: str, call: Call | None = None) -> None:
        self._seq += 1
        heapq.heappush(self.events, (t, self._seq, kind, call))

    def _grant(self, left: list[int]) -> None:
        while left[0] and self.in_flight < self.lat.limit:
            left[0] -= 1
            self.in_flight += 1
            tokens = self.tokens(self.rng)
            call = Call(self.now, self.in_flight, tokens, self.prefill(tokens), self.decode)
            self.queue.append(call)
        self._serve()
        self.trace.append((self.now, self.in_flight, self.lat.limit))

    def _serve(self) -> None:
        k = self.k(self.now)
        while self.queue and (k is None or self.serving < k):
            call = self.queue.pop(0)
            self.serving += 1
            self._at(self.now + call.prefill, "first", call)

    def run(self, calls: int, *, ticks: tuple[float, ...] = ()) -> Sim:
        left = [calls]
        for t in ticks:  # moments k changes
            self._at(t, "tick")
        self._grant(left)
        while self.events:
            self.now, _, kind, call = heapq.heappop(self.events)
            if kind == "first" and call is not None:
                call.first_at = self.now
                self.lat.first_token(self.now - call.sent, call.tokens, call.load)
                self._at(self.now + call.decode, "end", call)
            elif kind == "end" and call is not None:
                self.serving -= 1
                self.in_flight -= 1
                self.done += 1
            self._grant(left)
        return self

    def mean_in_flight(self, since: float = 0.0, until: float | None = None) -> float:
        """Time-weighted calls in flight over [since, until]."""
        end = self.now if until is None else until
        total = 0.0
        for (t0, n, _), (t1, _, _) in zip(self.trace, [*self.trace[1:], (end, 0, 0)],
                                          strict=True):
            lo, hi = max(t0, since), min(t1, end)
            if hi > lo:
                total += n * (hi - lo)
        return total / (end - since)

    def limits(self, since: float, until: float) -> list[int]:
        return [limit for t, _, limit in self.trace if since <= t <= until]


@pytest.mark.parametrize("k", [1, 2, 4])
def test_a_queueing_server_brings_the_limit_near_k(k: int) -> None:
    sim = Sim(LatencyLimit(10), lambda t: k).run(200)
    assert sim.done == 200
    half = sim.now / 2
    # Settled at K: a probe at K + 1 now and then costs one call's wait. With more
    # slots, a call over K may wait so little for the first to free up that it
    # passes for clear (and costs as little), so the limit wanders above K briefly.
    assert k <= sim.mean_in_flight(since=half) <= 1.15 * k + 0.1
    limits = sim.limits(half, sim.now)
    assert statistics.median(limits) <= k + 1 and k <= min(limits) and max(limits) <= k + 3
    if k == 1:
        assert sim.lat.ceiling == 2 and sim.lat.probe_every == PROBE_MAX


def test_few_samples_are_enough() -> None:
    # 4 papers against a server that serves one at a time: all 4 go at once (the cap
    # is 10), and the first queued first token names the limit.
    sim = Sim(LatencyLimit(10), lambda t: 1).run(4)
    assert sim.lat.limit == 1 and sim.lat.decreases == 1


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_server_that_does_not_queue_keeps_the_cap(seed: int) -> None:
    # Prompts from 50 to 8,000 tokens, a fixed cost and prefill noise of +-30%:
    # latency varies a lot, but not with the load.
    rng = random.Random(seed)
    sim = Sim(LatencyLimit(10), lambda t: None, seed=seed,
              prefill=lambda tokens: (0.3 + tokens / 1500) * rng.uniform(0.7, 1.3),
              tokens=lambda r: r.choice([50, 400, 2000, 8000])).run(300)
    assert sim.lat.limit == 10 and sim.lat.decreases == 0 and sim.lat.samples == 300


def test_one_very_fast_call_does_not_make_the_others_look_queued() -> None:
    lat = LatencyLimit(10)
    for _ in range(20):
        lat.first_token(1.0, 1000, 10)
    lat.first_token(0.01, 1000, 10)  # a prompt the server had cached
    for _ in range(30):
        lat.first_token(1.0, 1000, 10)
    assert lat.limit == 10 and lat.queued == 0


def test_the_limit_recovers_when_other_load_leaves() -> None:
    # Another client holds 3 of the 4 slots from t=20 s to t=120 s.
    def k(t: float) -> int:
        return 1 if 20 <= t < 120 else 4

    sim = Sim(LatencyLimit(8), k).run(600, ticks=(20.0, 120.0))
    assert sim.mean_in_flight(60, 120) <= 1.25  # backed off while the server was busy
    assert max(sim.limits(60, 120)) <= 2
    # Back to the 4 slots after the other client left: a probe finds them within
    # PROBE_MAX calls (~2.5 s each at 1 in flight), then +1 a call.
    assert sim.mean_in_flight(120 + 2.5 * (PROBE_MAX + 4), sim.now) >= 3.5
    assert min(sim.limits(120 + 2.5 * (PROBE_MAX + 4), sim.now)) >= 4


def test_app_limited_load_and_unjudged_samples_change_nothing() -> None:
    lat = LatencyLimit(10)
    assert not lat.first_token(0.5, 100, 1)  # the first sample: nothing to compare with
    for _ in range(5):
        assert not lat.first_token(0.5, 100, 3)  # clear, at 3 of 10: no growth, no loss
    assert lat.limit == 10
    assert lat.first_token(5.0, 100, 3)  # queued at 3: the server serves fewer than 3
    assert lat.limit == 2 and lat.ceiling == 3
    assert not lat.failed(0.1, 100, 2)  # a quick failure says nothing
    assert lat.failed(9.0, 100, 2)  # no token after 9 s: at least that queued
    assert lat.limit == 1 and lat.ceiling == 2
    assert not lat.first_token(0.5, 100, 1)  # clear at the limit, which is the ceiling - 1:
    assert lat.limit == 1 and lat.ceiling == 2  # the next step is a probe, later


# ------------------------------------------------------------------ in the limiter


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


async def test_queued_first_tokens_lower_the_limit_and_a_429_halves_what_is_in_force() -> None:
    clock = Clock()
    lim = LLMLimiter(8, clock=clock)
    gate = asyncio.Event()
    tokens: list[asyncio.Future[None]] = []

    async def call(prompt_tokens: int | None) -> None:
        async with lim.slot(prompt_tokens=prompt_tokens) as slot:
            token = asyncio.get_running_loop().create_future()
            tokens.append(token)
            await token
            slot.first_token()
            await gate.wait()

    tasks = [asyncio.create_task(call(500)) for _ in range(4)]
    await asyncio.sleep(0)
    assert lim.in_flight == 4
    clock.now += 0.5
    tokens[0].set_result(None)  # served at once: the baseline
    await asyncio.sleep(0)
    clock.now += 6.0
    tokens[1].set_result(None)  # 6 s later with the same prompt: it waited in a queue
    await asyncio.sleep(0)
    assert lim.capacity == 1 and lim.latency.ceiling == 2 and lim.min_capacity == 1
    gate.set()
    for token in tokens[2:]:
        token.set_result(None)
    await asyncio.gather(*tasks)
    lim.record_rate_limit(lim.epoch)  # a 429 halves the limit in force (1), not the 8
    assert lim.capacity == 1 and lim.decreases == 1
    lim.adaptive = False  # a fixed cap forgets both
    assert lim.capacity == 8 and lim.latency.samples == 0


async def test_only_calls_that_report_latency_are_samples() -> None:
    clock = Clock()
    lim = LLMLimiter(4, clock=clock)
    async with lim.slot():  # an embedding call: no first token, no prompt size
        clock.now += 30
    with pytest.raises(TimeoutError):
        async with lim.slot():
            clock.now += 30
            raise TimeoutError
    assert lim.latency.samples == 0
    async with lim.slot(prompt_tokens=200):  # not streamed: the whole call is the sample
        clock.now += 1
    assert lim.latency.samples == 1 and lim.latency.baseline() is not None
    with pytest.raises(RateLimitedLLMError):  # a 429 is the other half's business
        async with lim.slot(prompt_tokens=200):
            clock.now += 30
            raise RateLimitedLLMError("429")
    assert lim.latency.samples == 1


async def test_a_server_that_drops_calls_for_newer_ones_gets_one_at_a_time() -> None:
    # llama-cpp-python's server ends a running reply when a new request comes: with
    # four calls of ours in flight, the one cut off says it serves fewer than four.
    from scholarflow.errors import CutOffLLMError
    from scholarflow.llm.limiter import LLMLimiter

    limiter = LLMLimiter(10)
    release = asyncio.Event()

    async def call(cut: bool) -> None:
        async with limiter.slot(prompt_tokens=100):
            await release.wait()
            if cut:
                raise CutOffLLMError("cut off")

    tasks = [asyncio.create_task(call(cut=i == 0)) for i in range(4)]
    await asyncio.sleep(0)
    release.set()
    results = await asyncio.gather(*tasks, return_exceptions=True)
    assert isinstance(results[0], CutOffLLMError)
    assert limiter.capacity <= 3  # fewer than the four that were in flight
