"""The synchronous API (`invoke`, `stream`, `batch`): the async run, on a loop of ours.

Every node is an async function (they stream, and share one limiter of LLM
calls), and LangGraph runs such a node only from `ainvoke`/`astream`: its
sync `invoke` fails with "No synchronous function provided". So the compiled
graph's `stream` (which LangGraph's `invoke` and Runnable's `batch` call)
runs `astream` on one event loop in a daemon thread and hands its chunks to
the calling thread: the same run, the same answer, the same custom events.

One loop for every synchronous call in the process, not one per call: `batch`
runs its inputs in threads at once, and on one loop their LLM calls share the
limiter as the async API's do (max_concurrent_llm_calls), and their HTTP
connections stay open from one call to the next. A call made from that loop's
own thread (a sync call inside a node) gets a loop of its own, not a deadlock.
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import queue
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import Future
from contextlib import aclosing
from typing import Any, TypeVar

T = TypeVar("T")


class _Loop:
    """An event loop running in a daemon thread of its own."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever,
                                       name="scholarflow-sync", daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()
        self.loop.close()


_shared: _Loop | None = None
_shared_lock = threading.Lock()


def _shared_loop() -> _Loop:
    global _shared
    with _shared_lock:
        # A forked child has the parent's object but not its thread.
        if _shared is None or _shared.pid != os.getpid() or not _shared.thread.is_alive():
            _shared = _Loop()
        return _shared


def iterate(make: Callable[[], AsyncIterator[T]]) -> Iterator[T]:
    """The items of the async iterator `make()` returns, iterated on our loop, with the
    caller's context variables (a parent run's config, tracing). Closing this iterator
    early (a `break`) cancels the async one and waits for it to end."""
    shared = _shared_loop()
    own = _Loop() if threading.current_thread() is shared.thread else None
    try:
        yield from _iterate_on((own or shared).loop, make)
    finally:
        if own is not None:
            own.stop()


def _iterate_on(loop: asyncio.AbstractEventLoop,
                make: Callable[[], AsyncIterator[T]]) -> Iterator[T]:
    # (True, item) for each item, then (False, the finished task).
    out: queue.SimpleQueue[tuple[bool, Any]] = queue.SimpleQueue()
    started: Future[asyncio.Task[None]] = Future()
    context = contextvars.copy_context()

    async def pump() -> None:
        async with aclosing(make()) as items:  # type: ignore[type-var]
            async for item in items:
                out.put((True, item))

    def start() -> None:
        task = loop.create_task(pump(), context=context)
        task.add_done_callback(lambda done: out.put((False, done)))
        started.set_result(task)

    loop.call_soon_threadsafe(start)
    finished: asyncio.Task[None] | None = None
    try:
        while True:
            more, value = out.get()
            if not more:
                finished = value
                break
            yield value
    finally:
        if finished is None:  # closed early, or the caller was interrupted (Ctrl-C)
            task = started.result()
            loop.call_soon_threadsafe(task.cancel)
            while out.get()[0]:
                pass  # until it has ended: nothing of the run goes on behind the caller
    if finished.cancelled():
        raise asyncio.CancelledError()
    if (error := finished.exception()) is not None:
        raise error
