"""`scholarflow sessions list | show | delete`, and one run at a time per session.

A session is a LangGraph thread of the configured checkpointer (SQLite in
`$SCHOLARFLOW_HOME`, or PostgreSQL): `list` reads each thread's latest
checkpoint for its `session` statistics, `show` the thread's `messages`
(rebuilt by LangGraph from the writes of every step), and `delete` removes
the thread's checkpoints and writes.

`session_lock` (storage/session_lock.py) is held for the whole run: a held
lock means a live run, and a thread with unfinished nodes whose lock is free
was left by a dead one: `ask` can say which it is.

No checkpoint is ever deleted but by `delete`: `messages` is a DeltaChannel,
rebuilt from every ancestor checkpoint's writes, and forks and rollbacks need
each step's checkpoint.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import CheckpointTuple

from scholarflow.errors import InputError
from scholarflow.printable import safe_json
from scholarflow.storage.checkpoints import (
    delete_thread,
    latest_checkpoints,
    open_checkpointer,
    thread_config,
)
from scholarflow.storage.session_lock import (
    SessionBusyError,
    forget_session_lock,
    session_lock,
)

__all__ = ["SessionBusyError", "delete_session", "forget_session_lock", "list_sessions",
           "no_session", "reclaim_space", "session_lock", "show_session"]

# Free pages left by deleted sessions are reused by later runs; past this much, give them back.
_VACUUM_FREE_BYTES = 64 * 1024 * 1024
_VACUUM_BUSY_MS = 2000  # VACUUM needs the file to itself: never wait long for it


def no_session(session_id: str) -> InputError:
    return InputError(f"no session {session_id!r}; see `scholarflow sessions list`")


# --- sessions list | show | delete --------------------------------------------------------------


async def list_sessions() -> int:
    """One JSON line per session, the most recently updated first."""
    async with open_checkpointer() as saver:
        rows = []
        for thread_id, checkpoint_id in await latest_checkpoints(saver):
            config = thread_config(thread_id)
            config["configurable"].update(checkpoint_ns="", checkpoint_id=checkpoint_id)
            latest = await saver.aget_tuple(config)
            if latest is not None:
                rows.append(_summary(thread_id, latest))
    # Stable: threads of equal updated_at stay newest checkpoint first.
    for row in sorted(rows, key=lambda r: -float(r["updated_at"] or 0)):
        print(safe_json(row))
    return 0


def _summary(thread_id: str, latest: CheckpointTuple) -> dict[str, Any]:
    """The session's line: its statistics as its latest checkpoint has them. A thread whose
    first run stopped before request_init has none yet: its checkpoint's time stands in."""
    session = latest.checkpoint["channel_values"].get("session")
    if isinstance(session, dict):
        return {"session_id": thread_id, "title": session.get("title", ""),
                "message_count": session.get("message_count", 0),
                "total_token_count": session.get("total_token_count", 0),
                "created_at": session.get("created_at"), "updated_at": session.get("updated_at")}
    from datetime import datetime

    at = datetime.fromisoformat(latest.checkpoint["ts"]).timestamp()
    return {"session_id": thread_id, "title": "", "message_count": 0, "total_token_count": 0,
            "created_at": at, "updated_at": at}


async def show_session(session_id: str) -> int:
    """One JSON line per message of the session, in conversation order."""
    from scholarflow.graph import build_graph
    from scholarflow.sessions.conversation import as_session_messages, message_type

    async with open_checkpointer() as saver:
        if await saver.aget_tuple(thread_config(session_id)) is None:
            raise no_session(session_id)
        snapshot = await build_graph(checkpointer=saver).aget_state(thread_config(session_id))
    messages = list(snapshot.values.get("messages") or [])
    shown = [m for m in messages if message_type(m) is not None]  # as as_session_messages
    for message, view in zip(shown, as_session_messages(messages), strict=True):
        print(safe_json({
            "id": message.id, "type": view.type.value, "token_count": view.token_count,
            "compressed": view.compressed, "created_at": view.created_at or None,
            "content": view.content,
        }))
    return 0


async def delete_session(session_id: str) -> int:
    """Delete the session's thread (every checkpoint and write) and its run lock."""
    async with open_checkpointer() as saver:
        if await saver.aget_tuple(thread_config(session_id)) is None:
            raise no_session(session_id)
        try:
            async with session_lock(session_id, wait=False):
                await delete_thread(saver, session_id)
                forget_session_lock(session_id)
        except SessionBusyError:
            # Deleted under a live run, the thread would come back with its next step.
            raise InputError(f"a run is in progress on session {session_id}; delete it once "
                             "that run has finished") from None
    await reclaim_space()
    print(json.dumps({"deleted": session_id}))
    return 0


async def reclaim_space() -> None:
    """Empty the checkpoint file's WAL, and give its free pages back when they are many
    (after deletes); once the checkpointer is closed: VACUUM cannot run beside its open
    statements. Best effort."""
    from scholarflow.settings import get_settings
    from scholarflow.storage.checkpoints import checkpoints_path

    if get_settings().database_url is None:
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

