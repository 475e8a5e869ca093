"""A session named in a Python run is kept, as the command line keeps it.

LangGraph keeps nothing of a run without a checkpointer, so `build_graph()`
run twice with `{"session_id": "s1"}` would answer the second question with
no history, and say nothing. A caller who names a session (`session_id`, or
the thread id in the config) expects it kept: such a run opens the store the
command line uses (storage/checkpoints.py: SQLite in SCHOLARFLOW_HOME, or the
PostgreSQL of SCHOLARFLOW_DATABASE_URL) for its duration, on the session's
thread, one run at a time per session (storage/session_lock.py), so
`scholarflow sessions show s1` shows it and `scholarflow ask --session s1`
goes on with it.

A graph with a checkpointer of its own (`build_graph(checkpointer=...)`, or the
one LangGraph server gives `scholarflow.graph:graph`, by `copy()` or in the
config) is left alone: there the thread is the session, as LangGraph has it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.constants import CONFIG_KEY_CHECKPOINTER
from langgraph.pregel import Pregel

CHECKPOINT_NS = "checkpoint_ns"  # set when the graph runs as another graph's subgraph


def named_session(graph: Pregel[Any, Any, Any, Any], request: Any,
                  config: RunnableConfig) -> str | None:
    """The session a run without any checkpointer names, or None (nothing to keep, or a
    checkpointer of the caller's keeps it)."""
    configurable = config.get("configurable") or {}
    if (graph.checkpointer is not None or configurable.get(CONFIG_KEY_CHECKPOINTER) is not None
            or configurable.get(CHECKPOINT_NS)):
        return None
    asked = request.get("session_id") if isinstance(request, Mapping) else None
    named = asked or configurable.get("thread_id")
    return str(named) if named else None


@asynccontextmanager
async def kept_session(graph: Pregel[Any, Any, Any, Any], request: Any,
                       config: RunnableConfig) -> AsyncIterator[RunnableConfig]:
    """`config` for the run: as given, or on the named session's thread in the default
    store, which stays open (and the session locked) for the block."""
    session_id = named_session(graph, request, config)
    if session_id is None:
        yield config
        return
    # Imported here: a run that names no session opens no database.
    from scholarflow.storage.checkpoints import open_checkpointer
    from scholarflow.storage.session_lock import session_lock

    async with open_checkpointer() as saver, session_lock(session_id, wait=True):
        configurable = dict(config.get("configurable") or {})
        # A different thread id stays: request_init says the thread is the session.
        configurable.setdefault("thread_id", session_id)
        configurable[CONFIG_KEY_CHECKPOINTER] = saver
        yield {**config, "configurable": configurable}
