"""The process-wide LLM concurrency limiter: FIFO, resizable, adaptive to 429s and latency.

`max_capacity` is the configured cap (`max_concurrent_llm_calls`); `capacity`
is the limit in force now. With `adaptive` on, a 429 halves `capacity` and
each success grows it by one, always within [1, max_capacity]:

* One halving per congestion event. Every slot remembers the `epoch` it
  started in; a decrease starts a new epoch. A 429 on a call that started
  before the last decrease was sent under the old, larger limit and is part
  of the congestion already answered, so it does not halve again: ten calls
  failing together halve once, not down to 1. Successes of such calls do not
  grow the limit either: they say nothing about the new one.
* Decrease, then verify. A 429 may not be about our load at all (a flaky
  gateway, a quota shared with others, a fault on every n-th request): then
  halving only slows us down, and plain AIMD halves down to 1. So a halving
  is a test: the next `2 x limit` (at least 4) outcomes of calls granted
  under the halved limit are counted, with the limit held still. "Before" is
  the 429 fraction of the latest `4 x max_capacity` outcomes at the halving
  plus the calls then in flight. If the window's fraction is at most half of
  it, the halving helped: our load drew the 429s, and AIMD goes on from there.
  If not (judged as soon as the window holds too many 429s to pass), the limit
  halves again and tests again: a quota of 3 is not helped by a limit of 5, as
  the 2 slots over it keep turning 429s over at once. If even one call at a
  time draws 429s as often, they are not caused by our load: the limit goes
  back to where the test started, and 429s do not halve it for the next
  `HOLD_PER_SLOT x max_capacity` outcomes, unless their fraction rises clearly
  above the one found load-free (new congestion). The cost under real
  congestion: each halving holds the limit still for about two rounds of calls.
* No preemption. Shrinking below the calls in flight cancels nothing; no slot
  is handed out until fewer than `capacity` are in flight.
* Retry-After (seconds, bounded by `MAX_PAUSE_SECONDS`) pauses handing out
  slots until it has passed; calls in flight go on. It is honoured always,
  during a test and a hold too: the server asked for it.
* Latency (llm/latency.py): a server that serves K calls at once and queues
  the rest shows it in the time to first token; that gives a second limit,
  aiming at K. `capacity` is the lower of the two; a 429 halves what is in force.
  A slot reports latency when its caller calls `first_token()` (streamed) or
  passes `prompt_tokens` (then also: the whole call when no first token came,
  and a failure after a long wait). Other slots (embeddings) are no samples.

With `adaptive` off it is a plain fixed cap. A slot reports back on its own:
leaving `slot()` normally is a success, by `RateLimitedLLMError` a 429.
"""

from __future__ import annotations

import asyncio
import email.utils
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime

from scholarflow.errors import CutOffLLMError, RateLimitedLLMError
from scholarflow.llm.latency import LatencyLimit, LoopLag
from scholarflow.llm.latency import Slot as Slot  # re-exported
from scholarflow.llm.loop_cache import set_result_threadsafe

# A longer Retry-After (a misconfigured proxy, a daily quota) would stall every
# run in the process; past this the node's own retries and errors take over.
MAX_PAUSE_SECONDS = 60.0
# After a test found the 429s load-independent, ignore them for this many outcomes
# per slot of the cap (320 for 10). A test costs ~20 outcomes at reduced limits, so
# testing again this rarely costs a few percent; new congestion is caught sooner
# by the rise of the 429 fraction.
HOLD_PER_SLOT = 32


@dataclass(slots=True)
class _Test:
    """Halvings under test: the outcomes of calls granted in `epoch` judge the latest."""

    start: int  # the limit before the first halving: restored if no halving helps
    base_epoch: int  # calls granted up to it are the "before" cohort
    before_seen: int  # the latest outcomes at the first halving, and the late ones
    before_failed: int  # of the before cohort: a call in flight then is part of it
    epoch: int = 0
    size: int = 0  # outcomes of `epoch` to count before judging
    seen: int = 0
    failed: int = 0


class LLMLimiter:
    """A FIFO counting limiter whose limit adapts to 429s (see the module docstring).

    asyncio.Semaphore cannot be resized, and FIFO hand-over keeps slots busy
    while work waits. `clock` is injectable so tests can drive Retry-After.
    """

    def __init__(
        self, capacity: int, *, adaptive: bool = True,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._max = max(1, capacity)
        self._limit = self._max
        self._adaptive = adaptive
        self._clock = clock
        self._in_flight = 0
        self._waiters: deque[asyncio.Future[int]] = deque()
        self._epoch = 0
        self._paused_until = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self._timer_loop: asyncio.AbstractEventLoop | None = None
        self._lag = LoopLag()
        self._clear_feedback()
        self.reset_stats()

    # ------------------------------------------------------------------ state

    @property
    def capacity(self) -> int:
        """The limit in force now: max_capacity, or less after 429s or queueing."""
        return min(self._limit, self._latency_limit.limit)

    @property
    def latency(self) -> LatencyLimit:
        """The latency half of the limit: its `limit`, `ceiling` and counters."""
        return self._latency_limit

    @property
    def max_capacity(self) -> int:
        return self._max

    @property
    def in_flight(self) -> int:
        return self._in_flight

    @property
    def epoch(self) -> int:
        """How many decreases so far; a slot records it when it starts."""
        return self._epoch

    @property
    def adaptive(self) -> bool:
        return self._adaptive

    @adaptive.setter
    def adaptive(self, on: bool) -> None:
        if on != self._adaptive:
            self._adaptive = on
            self._limit, self._paused_until = self._max, 0.0
            self._clear_feedback()
            self._hand_over()

    def paused_for(self) -> float:
        """Seconds left of a Retry-After pause (0 when none)."""
        return max(0.0, self._paused_until - self._clock())

    def set_capacity(self, capacity: int) -> None:
        """A new configured cap; the adaptive limit starts again from it."""
        self._max = self._limit = max(1, capacity)
        self._clear_feedback()
        self._hand_over()

    def reset(self) -> None:
        """Back to the configured cap with no pause and fresh statistics."""
        self._limit, self._paused_until = self._max, 0.0
        self._clear_feedback()
        self.reset_stats()
        self._hand_over()

    def reset_stats(self) -> None:
        self.max_in_flight = self._in_flight
        self.min_capacity = self._limit
        self.decreases = 0  # halvings, tested ones included
        self.rate_limited = 0  # 429s seen, counted or not
        self.restores = 0  # tests that found the 429s not caused by our load
        lat = self._latency_limit
        lat.samples = lat.queued = lat.decreases = lat.probes = 0

    def _clear_feedback(self) -> None:
        """Forget what past outcomes said: no test running, no hold."""
        # 429 (True) or success of the latest outcomes.
        self._history: deque[bool] = deque(maxlen=max(8, 4 * self._max))
        self._test: _Test | None = None
        self._hold = 0  # outcomes left during which 429s are taken as not ours
        self._background = 0.0  # the 429 fraction the last test found load-independent
        self._latency_limit = LatencyLimit(self._max)

    @property
    def testing(self) -> bool:
        """Whether a halving is being tested (the limit is held still meanwhile)."""
        return self._test is not None

    @property
    def holding(self) -> int:
        """Outcomes left during which 429s are taken as not caused by our load."""
        return self._hold

    # ------------------------------------------------------------- feedback

    def record_success(self, started_epoch: int) -> None:
        """Additive increase: one more slot, if the call ran under the current limit."""
        if self._adaptive:
            self._record(started_epoch, rate_limited=False)
            self._hand_over()

    def record_rate_limit(self, started_epoch: int, retry_after: float | None = None) -> None:
        """Multiplicative decrease, once per congestion event and verified; honour Retry-After."""
        self.rate_limited += 1
        if not self._adaptive:
            return
        if retry_after is not None and retry_after > 0:
            until = self._clock() + min(retry_after, MAX_PAUSE_SECONDS)
            self._paused_until = max(self._paused_until, until)
        self._record(started_epoch, rate_limited=True)
        self._hand_over()  # a test that failed may have raised the limit again

    def _record(self, started: int, *, rate_limited: bool) -> None:
        self._history.append(rate_limited)
        self._hold = max(0, self._hold - 1)
        test = self._test
        if test is not None:
            if started == test.epoch:  # an outcome under the tested limit
                test.seen += 1
                test.failed += rate_limited
                self._judge(test)
            elif started <= test.base_epoch:
                # In flight at the first halving: these are mostly the slow successes
                # (429s come back at once), so leaving them out would bias "before" up.
                test.before_seen += 1
                test.before_failed += rate_limited
            return  # the limit is held still during a test
        if started != self._epoch:
            return  # sent under an older limit: says nothing about this one
        if not rate_limited:
            self._limit = min(self._max, self._limit + 1)
        elif not self._hold or self._fraction() > self._background + (1 - self._background) / 3:
            # Not held, or the 429s clearly rose above the level found load-free.
            recent = self._history
            self._test = _Test(self._limit, self._epoch, len(recent), sum(recent))
            self._halve(self._test)

    def _judge(self, test: _Test) -> None:
        """Did the halving lower the 429 fraction clearly (to half of before, or less)?

        Judged when the window is full, or as soon as it holds too many 429s to pass.
        """
        before = test.before_failed / test.before_seen
        if test.failed <= before / 2 * test.size:
            if test.seen >= test.size:
                self._test = None  # it did: our load drew the 429s; plain AIMD from here
        elif self._limit > 1:
            self._halve(test)  # maybe not far enough yet: halve again, test again
        else:  # one call at a time draws 429s as often: they are not about our load
            self._test = None
            self._limit = max(self._limit, test.start)
            self._background = before
            self._hold = HOLD_PER_SLOT * self._max
            self.restores += 1

    def _halve(self, test: _Test) -> None:
        self._epoch += 1
        self.decreases += 1
        self._limit = max(1, self.capacity // 2)  # what was in force, latency's too
        self.min_capacity = min(self.min_capacity, self._limit)
        test.epoch, test.size, test.seen, test.failed = self._epoch, max(4, 2 * self._limit), 0, 0

    def _fraction(self) -> float:
        """The 429 fraction of the latest outcomes."""
        return sum(self._history) / len(self._history) if self._history else 0.0

    # ------------------------------------------------------------- slots

    async def acquire(self) -> int:
        """Take a slot; returns the epoch it was granted in (see `slot`)."""
        if self._in_flight < self.capacity and not self._waiters and not self._paused():
            self._take()
            return self._epoch
        waiter: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            return await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.release()  # the slot was handed over just as we were cancelled
            elif waiter in self._waiters:  # a hand-over may have dropped it already
                self._waiters.remove(waiter)
            raise

    def release(self) -> None:
        self._in_flight -= 1
        self._hand_over()

    @asynccontextmanager
    async def slot(self, *, prompt_tokens: int | None = None) -> AsyncIterator[Slot]:
        """Hold a slot for the block; its outcome feeds the adaptive limit.

        `prompt_tokens`: the call reports its latency (see the module docstring).
        """
        # The epoch of the grant, not of the wake-up: a slot granted under the old
        # limit and woken after a decrease was still sent as part of the old load.
        started = await self.acquire()
        self._lag.start()
        slot = Slot(started, self._slot_clock(), prompt_tokens=prompt_tokens,
                    load=self._in_flight, on_first_token=self._first_token, clock=self._slot_clock)
        try:
            yield slot
        except RateLimitedLLMError as exc:
            if isinstance(exc, CutOffLLMError):  # the calls in flight now were too many
                in_flight = self._in_flight
                self._feed_latency(lambda _slot, _now: self._latency_limit.cut_off(in_flight),
                                   slot)
            self.record_rate_limit(started, exc.retry_after)
            raise
        # Other failures (5xx, timeouts, bad requests) are not 429s; a long wait for
        # nothing may still say the server queues.
        except BaseException:
            self._feed_latency(self._latency_limit.slot_failed, slot)
            raise
        else:
            self._feed_latency(self._latency_limit.slot_ended, slot)
            self.record_success(started)
        finally:
            self._lag.stop()
            self.release()

    def _slot_clock(self) -> float:
        """The clock, standing still while the event loop ran late (LoopLag)."""
        return self._clock() - self._lag.total

    def _first_token(self, slot: Slot) -> None:
        self._feed_latency(self._latency_limit.slot_first_token, slot)

    def _feed_latency(self, event: Callable[[Slot, float], bool], slot: Slot) -> None:
        """Feed one latency event of `slot` (LatencyLimit.slot_*) while adaptive."""
        if self._adaptive and event(slot, self._slot_clock()):
            self.min_capacity = min(self.min_capacity, self.capacity)
            self._hand_over()

    def _take(self) -> None:
        self._in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self._in_flight)

    def _hand_over(self) -> None:
        if not self._waiters or self._paused():
            return
        while self._waiters and self._in_flight < self.capacity:
            waiter = self._waiters.popleft()
            if not waiter.done():
                self._take()  # a waiter of another thread's loop is woken on that loop
                set_result_threadsafe(waiter, self._epoch, self.release)

    def _paused(self) -> bool:
        """Whether a Retry-After pause holds; if so, make sure a timer ends it."""
        delay = self._paused_until - self._clock()
        if delay <= 0:
            return False
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return True  # no loop, so nobody can be waiting on this one
        # One timer per loop: tests and servers may use the limiter from several loops.
        if self._timer is None or self._timer_loop is not loop:
            self._timer, self._timer_loop = loop.call_later(delay, self._wake), loop
        return True

    def _wake(self) -> None:
        self._timer = self._timer_loop = None
        self._hand_over()


def retry_after_seconds(headers: Mapping[str, str] | None) -> float | None:
    """Seconds a 429's headers ask to wait: `retry-after-ms`, `retry-after` (s or date).

    None when there is no usable header: an unparseable value is ignored, not guessed.
    """
    if not headers:
        return None
    lowered = {k.lower(): v for k, v in headers.items()}
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):  # OpenAI's ms first
        raw = lowered.get(name)
        if raw is None:
            continue
        try:
            return max(0.0, float(raw) / scale)
        except ValueError:
            pass
        if name == "retry-after":  # the HTTP-date form
            try:
                when = email.utils.parsedate_to_datetime(raw)
            except (TypeError, ValueError):
                return None
            if when.tzinfo is None:
                when = when.replace(tzinfo=UTC)
            return max(0.0, (when - datetime.now(UTC)).total_seconds())
    return None
