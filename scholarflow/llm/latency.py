"""The latency half of the adaptive LLM limit: keep the server's queue empty.

An LLM server serves K calls at once (llama.cpp `--parallel`, Ollama
`OLLAMA_NUM_PARALLEL`, often 1) and queues the rest. A queued call adds no
throughput (the server is busy anyway) but waits whole service times, and a
client timeout then fails it. So, unlike Gradient2, whose `sqrt(limit)` queue
allowance buys throughput on servers where a queued request waits
milliseconds, the target is no queue at all: the largest load that streams its
first token without waiting, i.e. K. As in Vegas, the no-load latency is a
low point of recent latencies (Vegas: the minimum), and every sample is judged
on its own, against it:

* A sample is a call's time to first token (queueing + prefill; the whole
  call when it has no first token), divided by `prompt tokens +
  PROMPT_OFFSET_TOKENS` so that long prompts are not taken for queueing. The
  baseline is the lower quartile (the minimum while there are fewer than 4)
  of the latest `WINDOW` samples not found queued, and of every call that was
  alone in flight (no call of ours can have queued it): one very fast call (a
  cached prompt) cannot make every later call look queued, and it follows a
  server that got slower (or busier with other clients' work) once the limit
  is down to 1.
* Queued: the time to first token is over `TOLERANCE` times the baseline's
  prediction, and at least `MIN_EXCESS_SECONDS` over it. A queued call waits
  for the rest of another call's reply, so the signal is large; prefill noise
  and a fixed cost the normalisation misses are not.
* A call granted with n of ours in flight (itself included) that was queued says
  the server serves fewer than n: limit = min(limit, n - 1), and n is the
  `ceiling`. A clear one at full use (n == limit) says n were served at once:
  +1, up to ceiling - 1; one granted under an older, higher limit (n > limit)
  says nothing new. Reaching the ceiling is a probe, tried once per
  `probe_every` clear samples (4, doubled by each probe that queued, up to
  `PROBE_MAX`): a queued probe costs one call's wait, and a server that got
  freer (another client left) is found again. A clear call at n >= ceiling
  lifts the ceiling.
* Few samples are enough: the first queued sample names the limit directly. A
  server whose latency does not grow with the load never yields a queued
  sample, so the limit stays at (or climbs back to) the cap.
* A call that failed without a first token (a timeout, a dropped connection)
  waited at least as long as it ran: queued if that is long enough, else
  ignored. It never enters the baseline.
* Time the client itself was not running (a busy event loop, a descheduled
  process: `LoopLag`) is not the server's queueing: slots measure time on a
  clock that stands still meanwhile.

`LatencyLimit` is bookkeeping on explicit numbers (no clock), fed by `LLMLimiter`
from its `Slot`s.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

# The fixed cost of a call (HTTP, scheduling), in prompt tokens it is normalised
# with: ~0.1-0.3 s at the 1-5k tokens/s a GPU reads a prompt; a CPU's slower
# reading makes the fixed cost matter less.
PROMPT_OFFSET_TOKENS = 256
WINDOW = 32
TOLERANCE = 2.0
# Waits shorter than this are jitter (the event loop, the network), not a queue.
MIN_EXCESS_SECONDS = 0.25
PROBE_FIRST = 4
PROBE_MAX = 16
LAG_TICK_SECONDS = 0.05


@dataclass(slots=True)
class Slot:
    """One granted slot of `LLMLimiter`; the caller marks when the first token came back.

    `prompt_tokens` (set by the caller) makes the call a latency sample even with
    no first token, and normalises its latency; `load` is set by the limiter.
    """

    epoch: int
    started: float
    first_token_at: float | None = None
    prompt_tokens: int | None = None
    load: int = 1  # our calls in flight when it started, itself included
    on_first_token: Callable[[Slot], None] | None = field(default=None, repr=False)
    clock: Callable[[], float] = field(default=time.monotonic, repr=False)

    def first_token(self) -> None:
        """The server started answering: the wait so far is its queueing and prefill."""
        if self.first_token_at is None:
            self.first_token_at = self.clock()
            if self.on_first_token is not None:
                self.on_first_token(self)


class LatencyLimit:
    """The limit latency allows, within [1, max_capacity] (see the module docstring)."""

    def __init__(self, max_capacity: int) -> None:
        self.max_capacity = max(1, max_capacity)
        self.clear()

    def clear(self) -> None:
        """Forget everything learnt: the limit goes back to the cap."""
        self.limit = self.max_capacity
        self.ceiling: int | None = None  # the lowest load seen queued, until a probe clears
        self.probe_every = PROBE_FIRST
        self._clear_run = 0  # clear samples at limit == ceiling - 1 since the last probe
        self._samples: deque[float] = deque(maxlen=WINDOW)  # normalised latencies
        self.samples = self.queued = self.decreases = self.probes = 0

    # ------------------------------------------------------------- samples

    def baseline(self) -> float | None:
        """The no-load latency per normalised token: a low quantile of recent samples."""
        if not self._samples:
            return None
        return sorted(self._samples)[len(self._samples) // 4]

    def is_queued(self, latency: float, prompt_tokens: int | None) -> bool:
        base = self.baseline()
        if base is None:
            return False  # nothing to compare with yet
        expected = base * _size(prompt_tokens)
        return latency > TOLERANCE * expected and latency - expected > MIN_EXCESS_SECONDS

    def first_token(self, latency: float, prompt_tokens: int | None, load: int) -> bool:
        """A call granted at `load` calls in flight got its first token after `latency` s.

        Returns whether the limit changed.
        """
        self.samples += 1
        queued = self.is_queued(latency, prompt_tokens)
        if not queued or load == 1:
            self._samples.append(latency / _size(prompt_tokens))
        return self._queued(load) if queued else self._clear(load)

    def failed(self, waited: float, prompt_tokens: int | None, load: int) -> bool:
        """A call failed after `waited` s with no first token: at least that long a wait."""
        if self.is_queued(waited, prompt_tokens):
            self.samples += 1
            return self._queued(load)
        return False

    def cut_off(self, load: int) -> bool:
        """The server ended a reply early while `load` calls of ours were in flight: it
        drops a request for a newer one, so it serves fewer than that at once."""
        return load > 1 and self._queued(load)

    # ------------------------------------------------------------- slots

    def slot_first_token(self, slot: Slot, now: float) -> bool:
        if slot.first_token_at is None:
            return False
        return self.first_token(slot.first_token_at - slot.started, slot.prompt_tokens, slot.load)

    def slot_ended(self, slot: Slot, now: float) -> bool:
        """A call succeeded; with `prompt_tokens` and no first token, the whole call is a sample."""
        if slot.first_token_at is None and slot.prompt_tokens is not None:
            slot.first_token_at = now  # not streamed: the whole call is the sample
            return self.slot_first_token(slot, now)
        return False

    def slot_failed(self, slot: Slot, now: float) -> bool:
        """A call failed (not a 429): a declared one that got no token waited at least this."""
        if slot.first_token_at is not None or slot.prompt_tokens is None:
            return False
        return self.failed(now - slot.started, slot.prompt_tokens, slot.load)

    # ------------------------------------------------------------- the limit

    def _queued(self, load: int) -> bool:
        self.queued += 1
        if self.ceiling is not None and load == self.ceiling:
            self.probe_every = min(PROBE_MAX, 2 * self.probe_every)  # the probe failed
        self.ceiling = load if self.ceiling is None else min(self.ceiling, load)
        self._clear_run = 0
        new = max(1, min(self.limit, load - 1))
        if new == self.limit:
            return False
        self.limit = new
        self.decreases += 1
        return True

    def _clear(self, load: int) -> bool:
        if load != self.limit:
            return False  # fewer calls than allowed, or sent under an older, higher limit
        old = self.limit
        if self.ceiling is not None and load >= self.ceiling:
            self.ceiling, self.probe_every = None, PROBE_FIRST  # it serves that many now
        if self.ceiling is None or self.limit + 1 < self.ceiling:
            self.limit = min(self.max_capacity, self.limit + 1)
        else:
            self._clear_run += 1
            if self._clear_run >= self.probe_every:
                self._clear_run = 0
                self.probes += 1
                self.limit = min(self.max_capacity, self.ceiling)
        return self.limit != old


def _size(prompt_tokens: int | None) -> int:
    return max(0, prompt_tokens or 0) + PROMPT_OFFSET_TOKENS


class LoopLag:
    """Seconds the event loop ran late while calls were in flight, summed.

    A timer every `LAG_TICK_SECONDS` while any slot is held (20 callbacks a second);
    how late it fires is time in which no first token could have been seen.
    """

    def __init__(self) -> None:
        self.total = 0.0
        self.users = 0
        self._due = 0.0
        self._handle: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def start(self) -> None:
        self.users += 1
        loop = asyncio.get_running_loop()
        if self._handle is None or self._loop is not loop:  # tests run several loops
            if self._handle is not None:
                self._handle.cancel()
            self._loop, self._due = loop, loop.time() + LAG_TICK_SECONDS
            self._handle = loop.call_at(self._due, self._tick)

    def stop(self) -> None:
        self.users = max(0, self.users - 1)
        if not self.users and self._handle is not None:
            self._handle.cancel()
            self._handle = self._loop = None

    def _tick(self) -> None:
        assert self._loop is not None
        now = self._loop.time()
        self.total += max(0.0, now - self._due)
        self._due = now + LAG_TICK_SECONDS
        self._handle = self._loop.call_at(self._due, self._tick)
