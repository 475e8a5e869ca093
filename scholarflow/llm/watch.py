"""Timeouts that mean something for streamed model calls: first token and gaps.

One total timeout fails a long, healthy generation, and counts the time a call
waits in the queue of a server that answers one request at a time (llama.cpp,
a default Ollama). So a call is watched instead:

* Before its first chunk, it may wait `timeout` seconds plus `timeout` per
  `PREFILL_TOKENS_PER_TIMEOUT` prompt tokens beyond the first (reading a long
  prompt is part of the wait). While any other call of ours to the same
  endpoint is receiving tokens, the server is busy with our own work: a queued
  call's clock starts again from that endpoint's latest token, up to
  `QUEUE_WAIT_FACTOR` times its own allowance, so a dead queue still fails.
* After that, every gap between chunks may last `timeout` seconds. A long
  answer that keeps streaming never times out.

A watchdog timer (one per call, re-armed only when it fires) checks the clock;
a chunk only stores the time, so the cost per token is a float and a flag.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from types import TracebackType
from typing import TypeVar

T = TypeVar("T")

# The allowance grows by one timeout per this many prompt tokens: 120 s per 4,096
# tokens is ~34 tokens/s of prefill, slower than a 2-core CPU reads a prompt.
PREFILL_TOKENS_PER_TIMEOUT = 4_096
# A call queued behind our own busy calls still fails after this many allowances.
QUEUE_WAIT_FACTOR = 6

# loop.time() of the latest chunk any call got from an endpoint (base URL + model).
_last_chunk: dict[str, float] = {}


class StallTimeoutError(asyncio.TimeoutError):
    """A streamed call got no first chunk, or no next chunk, in time."""

    def __init__(self, waited: float, *, started: bool) -> None:
        self.waited = waited
        self.started = started  # False: no chunk at all; True: it stopped mid-reply
        what = "stopped answering for" if started else "sent nothing for"
        super().__init__(f"{what} {waited:g} s")


def first_token_allowance(timeout: float, prompt_tokens: int) -> float:
    """Seconds a call may wait for its first chunk, before queueing is considered."""
    return timeout * max(1.0, prompt_tokens / PREFILL_TOKENS_PER_TIMEOUT)


class StallWatch:
    """Watches one stream: `with watch:` around it, `await watch.next(stream)` per chunk.

    `next` raises StallTimeoutError when the stream stalls: the task is cancelled
    to get out of the pending read, and the cancellation is taken back (as
    asyncio.timeout does), so a cancellation from outside still propagates. Time
    spent outside `next` (the caller handling a chunk) is never a stall.
    """

    def __init__(self, endpoint: str, timeout: float, prompt_tokens: int,
                 on_first: Callable[[], None] | None = None) -> None:
        self.endpoint = endpoint
        self.timeout = timeout
        self.allowance = first_token_allowance(timeout, prompt_tokens)
        self.on_first = on_first
        self.started_at = 0.0
        self.last: float | None = None  # loop time of this call's latest chunk
        self._fired: StallTimeoutError | None = None
        self._handle: asyncio.TimerHandle | None = None
        self._reading: asyncio.Task[object] | None = None
        self._entered = 0.0  # loop time the caller last asked for a chunk

    def __enter__(self) -> StallWatch:
        loop = asyncio.get_running_loop()
        self.started_at = loop.time()
        self._handle = loop.call_at(self.started_at + self.allowance, self._check)
        return self

    def __exit__(self, exc_type: type[BaseException] | None,
                 exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    async def next(self, stream: AsyncIterator[T]) -> T:
        """The stream's next chunk (StopAsyncIteration at its end), watched."""
        task = asyncio.current_task()
        assert task is not None
        cancelling = task.cancelling()
        self._reading = task
        self._entered = asyncio.get_running_loop().time()
        try:
            chunk = await anext(stream)
        except asyncio.CancelledError as exc:
            if self._fired is not None and task.uncancel() <= cancelling:
                raise self._fired from exc
            raise
        finally:
            self._reading = None
        self._chunk()
        return chunk

    def _chunk(self) -> None:
        now = asyncio.get_running_loop().time()
        if self.last is None and self.on_first is not None:
            self.on_first()
        self.last = now
        _last_chunk[self.endpoint] = now

    def deadline(self) -> float:
        """When the call stalls, as far as is known now."""
        if self.last is not None:  # a gap counts from when the next chunk was asked for
            return max(self.last, self._entered) + self.timeout
        own = self.started_at + self.allowance
        busy = _last_chunk.get(self.endpoint, 0.0) + self.timeout
        return min(max(own, busy), self.started_at + QUEUE_WAIT_FACTOR * self.allowance)

    def _check(self) -> None:
        loop = asyncio.get_running_loop()
        now, deadline = loop.time(), self.deadline()
        if self._reading is None:  # the caller is busy, not the server: look again later
            deadline = max(deadline, now + self.timeout)
        if now < deadline:
            self._handle = loop.call_at(deadline, self._check)
            return
        self._handle = None
        # The limit that ran out, not the timer's (late) firing time.
        waited = self.timeout if self.last is not None else deadline - self.started_at
        self._fired = StallTimeoutError(round(waited, 1), started=self.last is not None)
        assert self._reading is not None  # checked above
        self._reading.cancel()
