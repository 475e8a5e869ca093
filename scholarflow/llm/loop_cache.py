"""Objects bound to one event loop (HTTP clients and their pools): one per loop and key.

An httpx.AsyncClient, the ChatOpenAI and AsyncOpenAI clients over it, an
aiohttp session: each belongs to the loop it first ran in, and used from
another loop fails ("Event loop is closed" once `asyncio.run` has ended the
first). A script may run the graph with several `asyncio.run` calls, a thread
with a loop of its own, or the synchronous API (graph/sync.py): each loop gets
its own, and what a loop made goes with it when the loop is gone.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

T = TypeVar("T")

# The loop -> its objects. Weak: a finished loop (and its clients) is not kept alive.
_by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[Hashable, Any]] = (
    weakref.WeakKeyDictionary())
_outside: dict[Hashable, Any] = {}  # made with no loop running (sync callers)
_lock = threading.Lock()  # loops in several threads may ask at once


def running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def per_loop(key: Hashable, make: Callable[[], T], *, limit: int = 32) -> T:
    """The running loop's object for `key`, made by `make()` the first time.

    At most `limit` per loop: past it the oldest is dropped (as lru_cache would).
    """
    loop = running_loop()
    with _lock:
        made = _outside if loop is None else _by_loop.setdefault(loop, {})
        if key in made:
            found: T = made[key]
            return found
    value = make()  # outside the lock: a client may take a while to build
    with _lock:
        made = _outside if loop is None else _by_loop.setdefault(loop, {})
        if key not in made:
            while len(made) >= limit:
                del made[next(iter(made))]
            made[key] = value
        kept: T = made[key]
        return kept


def forget_loop(loop: asyncio.AbstractEventLoop) -> None:
    """Drop what `loop` made (it is closing)."""
    with _lock:
        _by_loop.pop(loop, None)


def set_result_threadsafe(future: asyncio.Future[T], value: T,
                          dropped: Callable[[], None]) -> None:
    """`future.set_result(value)` from any thread (a process-wide limiter hands a slot to a
    waiter of another thread's loop); `dropped()` when nobody takes it: the future was
    cancelled meanwhile, or its loop is closed."""
    loop = future.get_loop()
    if loop is running_loop():
        future.set_result(value)
        return

    def settle() -> None:
        if future.done():
            dropped()
        else:
            future.set_result(value)

    try:
        loop.call_soon_threadsafe(settle)
    except RuntimeError:  # closed
        dropped()
