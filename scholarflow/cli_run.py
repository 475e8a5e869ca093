"""`scholarflow ask` and `scholarflow resume`: every run is checkpointed in its session's thread.

The thread id is the session id, so a new session is created before the run
starts. A run that stops midway (killed, Ctrl-C, a crash) keeps its last
checkpoint; `scholarflow resume ID` continues it from there, and the
document summaries that had finished are not requested again.

One run at a time per session (`cli_session.session_lock`): a question asked
while another process runs on the session waits for it, so each question
sees the answers before it and nothing is said about a run that is alive.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver

from scholarflow.checkpoints import open_checkpointer, thread_config
from scholarflow.cli import EXIT_BAD_INPUT, EXIT_RUN_FAILED
from scholarflow.cli_render import JsonRenderer, TerminalRenderer
from scholarflow.cli_session import SessionBusyError, compact_thread, reclaim_space, session_lock
from scholarflow.cli_text import safe_text
from scholarflow.context import Context
from scholarflow.errors import InputError
from scholarflow.graph import ScholarflowGraph, build_graph
from scholarflow.sessions.registry import check_backends, close_all, session_store
from scholarflow.state import InputState

Renderer = JsonRenderer | TerminalRenderer


def note(text: str) -> None:
    """A line about the run itself, on stderr (stdout is the answer or the JSON events)."""
    print(f"note: {safe_text(text)}", file=sys.stderr, flush=True)


def _describe(values: dict[str, Any], pending: tuple[str, ...]) -> str:
    query = " ".join(str(values.get("query") or "").split())
    query = query if len(query) <= 60 else query[:57] + "..."
    return f"{query!r}, stopped before {', '.join(pending)}"


async def _require_session(session_id: str) -> None:
    if await session_store().get(session_id) is None:
        raise InputError(f"no session {session_id!r}; see `scholarflow sessions list`")


async def _pending(graph: ScholarflowGraph, config: RunnableConfig) -> tuple[tuple[str, ...],
                                                                           dict[str, Any]]:
    """The nodes the thread's last run still had to run (none when it finished), and its state."""
    snapshot = await graph.aget_state(config)
    return tuple(snapshot.next), dict(snapshot.values or {})


async def ask(payload: dict[str, Any], ctx: Context, *, session: str | None,
              json_output: bool) -> int:
    """Run one question in `session` (a new session when None), checkpointed."""
    try:
        async with open_checkpointer() as saver:  # first: an unreachable database creates nothing
            await check_backends()  # an unreachable Redis too: one line, before any work
            given = session is not None
            if session is not None:
                await _require_session(session)
            else:
                session = (await session_store().create()).session_id
            request = {**payload, "session_id": session}
            graph = build_graph(checkpointer=saver)
            config = thread_config(session)
            busy = (f"another run is in progress on session {session}; this question waits "
                    "for it to finish")
            async with session_lock(session, wait=True, on_wait=lambda: note(busy)):
                # The lock is ours: unfinished nodes now were left by a run that died.
                pending, values = await _pending(graph, config) if given else ((), {})
                if pending:
                    note(f"session {session} had an unfinished run that stopped "
                         f"({_describe(values, pending)}); this question replaces it")
                code = await _stream(graph, cast(InputState, request), config, ctx, session,
                                     json_output, saver)
        await reclaim_space()
        return code
    finally:
        await close_all()


async def resume(session_id: str, ctx: Context, *, json_output: bool) -> int:
    """Continue the session's unfinished run from its last checkpoint."""
    try:
        async with open_checkpointer() as saver:
            await check_backends()
            await _require_session(session_id)
            graph = build_graph(checkpointer=saver)
            config = thread_config(session_id)
            try:
                async with session_lock(session_id, wait=False):
                    pending, values = await _pending(graph, config)
                    if not pending:
                        raise InputError(
                            f"session {session_id!r} has no unfinished run to resume; ask "
                            f"with `scholarflow ask QUESTION --session {session_id}`"
                        )
                    note(f"resuming {_describe(values, pending)}")
                    code = await _stream(graph, None, config, ctx, session_id, json_output,
                                         saver)
            except SessionBusyError:
                raise InputError(
                    f"another run is in progress on session {session_id}; wait for it to "
                    f"finish (resume only a run that stopped)") from None
        await reclaim_space()
        return code
    finally:
        await close_all()


async def _stream(graph: ScholarflowGraph, request: InputState | None, config: RunnableConfig,
                  ctx: Context, session_id: str, json_output: bool,
                  saver: BaseCheckpointSaver[Any]) -> int:
    """Stream the run's events to the renderer; `request` None continues the thread's run."""
    renderer: Renderer = JsonRenderer() if json_output else TerminalRenderer()
    try:
        # subgraphs=True: the document_summary subgraph's events come up too.
        # durability="sync": each step is on disk before the next starts, so a
        # killed run resumes from the step it was in, not an earlier one.
        stream = graph.astream(request, config, context=ctx, stream_mode="custom",
                               subgraphs=True, durability="sync")
        async for _namespace, event in stream:
            renderer.handle(cast(dict[str, Any], event))
    except asyncio.CancelledError:  # Ctrl-C: the checkpoint stays, say how to go on
        note(f"run stopped; `scholarflow resume {session_id}` continues it")
        raise
    if not (await _pending(graph, config))[0]:  # finished: its steps are not needed again
        await compact_thread(saver, session_id)
    if renderer.error is not None:
        if json_output:  # the terminal renderer already printed it
            print(f"error: {safe_text(renderer.error)}", file=sys.stderr)
        # A bad request or setting found inside the graph is still a bad request.
        return EXIT_BAD_INPUT if renderer.bad_request else EXIT_RUN_FAILED
    return 0 if renderer.final is not None else EXIT_RUN_FAILED
