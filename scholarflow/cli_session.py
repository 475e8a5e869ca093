"""One run at a time per session, and a finished run's checkpoints compacted.

`session_lock` is an flock on `<SCHOLARFLOW_HOME>/locks/<hash of the id>.lock`,
held for the whole run. The kernel drops it when its process dies, so a
held lock means a live run, and a thread with unfinished nodes whose lock
is free was left by a dead one: `ask` can say which it is. The lock is per
machine: with PostgreSQL shared by several machines, runs on one session
from two machines are not serialised.

`compact_thread`: every checkpoint of a run holds the whole state, so each
document given directly is stored once per step (a 5 MB file left 93 MB of
checkpoints). Once a run has finished only the last checkpoint is needed
(`resume` continues unfinished runs only), so the rest are deleted.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hashlib
import os
import sqlite3
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver

from scholarflow.checkpoints import thread_config
from scholarflow.sessions.paths import home_dir

__all__ = ["SessionBusyError", "compact_thread", "forget_session_lock", "reclaim_space",
           "session_lock"]

_POLL_SECONDS = 0.1  # polled, not a blocking flock in a thread: Ctrl-C must stop the wait
# Free pages left by compaction are reused by later runs; past this much, give them back.
_VACUUM_FREE_BYTES = 64 * 1024 * 1024
_VACUUM_BUSY_MS = 2000  # VACUUM needs the file to itself: never wait long for it


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


async def compact_thread(saver: BaseCheckpointSaver[Any], session_id: str) -> None:
    """Delete every checkpoint of the session's thread but its latest (call once the run
    has finished); best effort: the run's outcome stands whatever happens here."""
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    latest = await saver.aget_tuple(thread_config(session_id))
    if latest is None or latest.metadata.get("source") == "input":
        return
    keep = latest.config["configurable"]["checkpoint_id"]
    if not isinstance(saver, AsyncSqliteSaver):
        with contextlib.suppress(NotImplementedError, AttributeError):
            await saver.aprune([session_id], strategy="keep_latest")
        return
    conn = saver.conn
    for table in ("writes", "checkpoints"):
        await conn.execute(f"DELETE FROM {table} WHERE thread_id = ? AND NOT "
                           "(checkpoint_ns = '' AND checkpoint_id = ?)", (session_id, keep))
    await conn.commit()


async def reclaim_space() -> None:
    """Give the checkpoint file's free pages back when they are many (after `compact_thread`,
    once the checkpointer is closed: VACUUM cannot run beside its open statements)."""
    from scholarflow.checkpoints import checkpoints_path
    from scholarflow.sessions.services import DATABASE_URL_ENV, env_url

    if env_url(DATABASE_URL_ENV) is None:
        with contextlib.suppress(Exception):  # busy (another process is in it): next time
            await asyncio.to_thread(_vacuum, checkpoints_path())


def _vacuum(path: Path) -> None:
    conn = sqlite3.connect(path, timeout=_VACUUM_BUSY_MS / 1000)
    try:
        pages = conn.execute("PRAGMA freelist_count").fetchone()[0]
        size = conn.execute("PRAGMA page_size").fetchone()[0]
        if int(pages) * int(size) > _VACUUM_FREE_BYTES:
            conn.execute("VACUUM")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
