"""`scholarflow ask ... --server URL` and `scholarflow resume ID --server URL`: runs on a server.

A session is one of the person's threads on the server: `ask` without
`--session` starts a new one (the answer's closing line gives its id), and
`--session ID` continues one of theirs. The run streams as on this machine: its
custom events, the same the graph sends any client, go to cli/render.py (the
answer on stdout, the thinking on stderr; with `--json` every event as a line).

The graph's input is what `ask` sends on this machine (`query`, `kb`,
`doc_ids`, `document_contents` for `--file`, `mode_type`, `enable_web_search`);
the flags about the run (`--no-thinking`, `--review-plan`, `--approve-cost`,
`--llm-timeout`, `--max-context`, `--search-engine`) go in its `context`. The
model, its keys and the LLM limit are the server's own.

A run that pauses (an interrupt) is handled as on this machine: a plan to
review is shown and answered on the terminal (or standard input), and the run
goes on; a summary past the cost limits prints its estimate and how to approve
it (`scholarflow resume ID --server URL --approve-cost`), exit 2. Ctrl-C
cancels the run on the server, whose last checkpoint stays: `resume` continues
it. A question asked while another run of the session is going waits for it
(the server queues it).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import uuid
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, cast

import httpx

from scholarflow.cli.exits import EXIT_BAD_INPUT, EXIT_RUN_FAILED
from scholarflow.cli.remote import GRAPH_ID, Remote, check_thread_id, no_session
from scholarflow.cli.render import JsonRenderer, TerminalRenderer
from scholarflow.cli.run import (
    APPROVE_COST,
    REVIEW_PLAN,
    _cost_refused,
    _review_answer,
    note,
)
from scholarflow.errors import InputError
from scholarflow.printable import safe_text

if TYPE_CHECKING:
    from langgraph_sdk.schema import Command, MultitaskStrategy

Renderer = JsonRenderer | TerminalRenderer


async def ask(remote: Remote, payload: dict[str, Any], args: argparse.Namespace) -> int:
    """Run one question in a new session of the person's, or in `--session ID`."""
    if args.session is None:
        thread = await _new_thread(remote)
    else:
        thread = check_thread_id(remote, args.session)
        status = str((await _thread(remote, thread)).get("status"))
        if status == "busy":
            note(f"another run is in progress on session {thread}; this question waits for "
                 "it to finish")
        elif status == "interrupted":
            note(f"session {thread} had an unfinished run; this question replaces it")
    return await _run(remote, thread, {"input": payload}, args, multitask="enqueue")


async def resume(remote: Remote, args: argparse.Namespace) -> int:
    """Continue the session's run that stopped, or answer the pause it waits on."""
    thread = check_thread_id(remote, args.session_id)
    status = str((await _thread(remote, thread)).get("status"))
    state = await _state(remote, thread)
    again = f"ask with `scholarflow ask QUESTION --session {thread} {remote.hint()}`"
    if status == "busy":
        raise InputError(f"another run is in progress on session {thread}; wait for it to "
                         "finish (resume only a run that stopped)")
    if status == "error":
        error = (state.get("values") or {}).get("error") or "it failed"
        raise InputError(f"the last run of session {thread!r} failed ({safe_text(error)}); "
                         f"there is nothing to resume: {again}")
    cost, review = _pause(state, APPROVE_COST), _pause(state, REVIEW_PLAN)
    if cost is None and review is None and not state.get("next"):
        raise InputError(f"session {thread!r} has no unfinished run to resume; {again}")
    ref = _ref(remote, thread)
    if cost is not None and not args.approve_cost:
        return _cost_refused(cost, ref)  # nothing to run until it is approved
    note(f"resuming session {thread}")
    if cost is not None:
        request: dict[str, Any] = {"command": {"resume": {"action": "approve"}}}
    elif review is not None:
        request = {"command": {"resume": await _review_answer(review, ref)}}
    else:
        request = {"input": None}  # the stopped run goes on from its last checkpoint
    return await _run(remote, thread, request, args, multitask="reject")


def _ref(remote: Remote, thread: str) -> str:
    """The session as a `resume` command names it (run.py's messages say `resume {ref}`)."""
    return f"{thread} {remote.hint()}"


def _context(args: argparse.Namespace) -> dict[str, Any]:
    """The run's context: what the flags set, as `ask` sets it on this machine."""
    context: dict[str, Any] = {"show_thinking": not args.no_thinking}
    if getattr(args, "review_plan", False):
        context["review_plan"] = True
    if getattr(args, "approve_cost", False):  # approved before it is asked: no limit
        context.update(approval_documents=None, approval_tokens=None)
    if timeout := getattr(args, "llm_timeout", None):
        context["llm_timeout_seconds"] = timeout
    if window := getattr(args, "max_context", None):
        context["max_context_tokens"] = window
    if engine := getattr(args, "search_engine", None):
        context["search_engine"] = engine
    return context


async def _run(remote: Remote, thread: str, request: dict[str, Any], args: argparse.Namespace,
               *, multitask: str) -> int:
    """Stream the run, answering plan reviews, and a cost approval with `--approve-cost`;
    the exit code."""
    renderer: Renderer = JsonRenderer() if args.json else TerminalRenderer()
    ref = _ref(remote, thread)
    context = _context(args)
    while True:
        failure = await _stream(remote, thread, request, context, renderer, multitask, ref)
        if renderer.error is not None:  # the graph's error event: the terminal showed it
            if args.json:
                print(f"error: {safe_text(renderer.error)}", flush=True, file=sys.stderr)
            return EXIT_BAD_INPUT if renderer.bad_request else EXIT_RUN_FAILED
        if failure is not None:
            print(f"error: the run failed on the server: {safe_text(failure)}", file=sys.stderr)
            return EXIT_RUN_FAILED
        state = await _state(remote, thread)
        if (cost := _pause(state, APPROVE_COST)) is not None:
            if not args.approve_cost:
                return _cost_refused(cost, ref)
            request = {"command": {"resume": {"action": "approve"}}}
        elif (review := _pause(state, REVIEW_PLAN)) is not None:
            request = {"command": {"resume": await _review_answer(review, ref)}}
        else:
            break
        multitask = "reject"
    if renderer.final is not None:
        return 0
    print(f"error: the run stopped before answering; `scholarflow resume {ref}` continues it",
          file=sys.stderr)
    return EXIT_RUN_FAILED


async def _stream(remote: Remote, thread: str, request: dict[str, Any],
                  context: dict[str, Any], renderer: Renderer, multitask: str,
                  ref: str) -> str | None:
    """The run's events to the renderer; the server's own error line, if the run failed
    there without the graph's error event."""
    failure: str | None = None
    try:
        # durability "sync": each step is stored before the next, so `resume` goes on
        # from the step a cancelled run was in. on_disconnect "cancel": Ctrl-C stops it.
        async for part in remote.sdk.runs.stream(
            thread, GRAPH_ID, input=request.get("input"),
            command=cast("Command | None", request.get("command")), context=context,
            stream_mode="custom", stream_subgraphs=True,
            multitask_strategy=cast("MultitaskStrategy", multitask), on_disconnect="cancel",
            durability="sync",
        ):
            kind = part.event.split("|")[0]  # subgraphs' events: "custom|<namespace>"
            if kind == "custom" and isinstance(part.data, dict):
                renderer.handle(part.data)
            elif kind == "error":
                failure = _error_text(part.data)
    except asyncio.CancelledError:
        note(f"run stopped; `scholarflow resume {ref}` continues it")
        raise
    except httpx.HTTPStatusError as exc:
        if exc.response.status_code == 404:
            raise no_session(remote, thread) from None
        if exc.response.status_code == 409:
            raise InputError(f"another run is in progress on session {thread}; wait for it "
                             "to finish (resume only a run that stopped)") from None
        raise remote.failure(exc) from None
    except (httpx.HTTPError, OSError) as exc:
        raise remote.failure(exc) from None
    return failure


def _error_text(data: Any) -> str:
    if isinstance(data, dict):
        return " ".join(str(data.get("message") or data.get("error") or data).split())
    return " ".join(str(data).split())


def _pause(state: dict[str, Any], kind: str) -> dict[str, Any] | None:
    """The value of the interrupt of `kind` the thread waits on, if it does."""
    pending = state.get("interrupts") or [
        i for task in state.get("tasks") or [] for i in task.get("interrupts") or []]
    for each in pending:
        value = each.get("value") if isinstance(each, dict) else None
        if isinstance(value, dict) and value.get("type") == kind:
            return value
    return None


async def _new_thread(remote: Remote) -> str:
    try:
        created = await remote.sdk.threads.create()
    except (httpx.HTTPError, OSError) as exc:
        raise remote.failure(exc) from None
    return str(uuid.UUID(str(created["thread_id"])))


async def _thread(remote: Remote, thread: str) -> dict[str, Any]:
    return await _of_thread(remote, thread, remote.sdk.threads.get)


async def _state(remote: Remote, thread: str) -> dict[str, Any]:
    return await _of_thread(remote, thread, remote.sdk.threads.get_state)


async def _of_thread(remote: Remote, thread: str,
                     read: Callable[[str], Awaitable[Any]]) -> dict[str, Any]:
    """What `read` gives of one of the person's threads; a missing one is no session."""
    try:
        return dict(await read(thread))
    except httpx.HTTPStatusError as exc:
        if exc.response.status_code == 404:
            raise no_session(remote, thread) from None
        raise remote.failure(exc) from None
    except (httpx.HTTPError, OSError) as exc:
        raise remote.failure(exc) from None
