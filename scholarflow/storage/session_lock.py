"""One run at a time per session: an flock, for the command line and Python sessions.

`session_lock` is an flock on `<SCHOLARFLOW_HOME>/locks/<hash of the id>.lock`,
held for the whole run. The kernel drops it when its process dies, so a held
lock means a live run. The lock is per machine: with PostgreSQL shared by
several machines, runs on one session from two machines are not serialised.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hashlib
import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path

from scholarflow.storage.paths import home_dir

__all__ = ["SessionBusyError", "forget_session_lock", "session_lock"]

_POLL_SECONDS = 0.1  # polled, not a blocking flock in a thread: Ctrl-C must stop the wait


class SessionBusyError(Exception):
    """Another live process is running on the session (raised only when not waiting)."""


@contextlib.asynccontextmanager
async def session_lock(session_id: str, *, wait: bool,
                       on_wait: Callable[[], None] | None = None) -> AsyncIterator[None]:
    """Hold the session's run lock; when another process holds it, wait (`on_wait` is
    called once first) or raise SessionBusyError."""
    path = await asyncio.to_thread(_lock_path, session_id)
    await asyncio.to_thread(path.parent.mkdir, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        told = False
        while not _try_lock(fd):
            if not wait:
                raise SessionBusyError(session_id)
            if not told and on_wait is not None:
                on_wait()
            told = True
            await asyncio.sleep(_POLL_SECONDS)
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())  # who holds it, for a person looking
        yield
    finally:
        os.close(fd)  # closing releases the flock


def _lock_path(session_id: str) -> Path:
    name = hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return home_dir() / "locks" / f"{name}.lock"


def forget_session_lock(session_id: str) -> None:
    """Remove a deleted session's lock file (a run that holds it keeps its open file)."""
    _lock_path(session_id).unlink(missing_ok=True)


def _try_lock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True
