"""`scholarflow ask` and `scholarflow resume`: every run is checkpointed in its session's thread.

The thread id is the session id: `--session NAME` continues that session, or
starts it when there is none (load or create: docs/architecture.md#sessions); without it a new
uuid names a new one. A run that stops midway (killed, Ctrl-C, a crash)
keeps its last checkpoint; `scholarflow resume ID` continues it from there,
and the document summaries that had finished are not requested again. A run
that failed raised its typed error from the graph after its `error` event:
it is over (its question stays in the thread), nothing to resume.

A summary past the context's cost limits pauses in cost_check (`interrupt()`):
without `--approve-cost` the estimate is printed as the error, with how to
approve it, and the command exits 2; the run waits, so `scholarflow resume ID
--approve-cost` runs it without asking anything again. With the flag the limits
are lifted for the run (cli/main.py), so it never pauses.

With `--review-plan` the run pauses after plan_generation (`interrupt()`):
the plan is shown on stderr and the answer read from the terminal, or from
standard input when it is not one, and the run goes on in the same process
(`Command(resume=...)`). No answer (end of input) leaves it waiting for
`scholarflow resume ID`.

One run at a time per session (`cli_session.session_lock`): a question asked
while another process runs on the session waits for it, so each question
sees the answers before it and nothing is said about a run that is alive.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
import uuid
from typing import Any, Literal, cast

from langchain_core.runnables import RunnableConfig
from langgraph.types import Command, StateSnapshot

from scholarflow.cli.exits import EXIT_BAD_INPUT, EXIT_RUN_FAILED, CliError
from scholarflow.cli.render import JsonRenderer, TerminalRenderer, plan_review_text
from scholarflow.cli.session import SessionBusyError, no_session, reclaim_space, session_lock
from scholarflow.context import Context
from scholarflow.errors import ConfigurationError, InputError, ScholarflowError
from scholarflow.graph import ScholarflowGraph, build_graph
from scholarflow.llm.rates import save_rates
from scholarflow.printable import has_surrogates, safe_text
from scholarflow.state import InputState
from scholarflow.storage.cache_registry import check_backends, close_all
from scholarflow.storage.checkpoints import open_checkpointer, thread_config
from scholarflow.storage.paths import home_path

Renderer = JsonRenderer | TerminalRenderer
LastRun = Literal["none", "finished", "failed", "stopped", "review"]
REVIEW_PLAN = "review_plan"  # the `type` of the plan-review interrupt's value
APPROVE_COST = "approve_cost"  # the `type` of cost_check's interrupt value
_REVIEW_PROMPT = "approve (Enter), e to edit the sub-questions one per line, or type feedback: "


def note(text: str) -> None:
    """A line about the run itself, on stderr (stdout is the answer or the JSON events)."""
    print(f"note: {safe_text(text)}", file=sys.stderr, flush=True)


def _describe(snapshot: StateSnapshot) -> str:
    """The run's question, short, and where it stopped."""
    values = snapshot.values or {}
    question = str(values.get("question") or "")
    if not question and (messages := values.get("messages")):
        question = str(messages[-1].content)  # stopped before request_init took it
    question = " ".join(question.split())
    question = question if len(question) <= 60 else question[:57] + "..."
    if _review(snapshot) is not None:
        return f"{question!r}, waiting for its plan to be reviewed"
    if _review(snapshot, APPROVE_COST) is not None:
        return f"{question!r}, waiting for its cost to be approved"
    return f"{question!r}, stopped before {', '.join(snapshot.next)}"


def _review(snapshot: StateSnapshot, kind: str = REVIEW_PLAN) -> dict[str, Any] | None:
    """The interrupt of `kind` (the plan review, or the cost approval) the thread waits
    on, if it does."""
    for pending in snapshot.interrupts:
        if isinstance(pending.value, dict) and pending.value.get("type") == kind:
            return pending.value
    return None


def _last_run(snapshot: StateSnapshot) -> LastRun:
    """What became of the thread's last run."""
    if not snapshot.next:
        return "finished" if snapshot.values else "none"
    if _review(snapshot) is not None or _review(snapshot, APPROVE_COST) is not None:
        return "review"
    # A failed run raised from session_save: its pending task holds the error.
    if snapshot.tasks and all(task.error is not None for task in snapshot.tasks):
        return "failed"
    return "stopped"


async def ask(payload: dict[str, Any], ctx: Context, *, session: str | None,
              json_output: bool, approve_cost: bool = False) -> int:
    """Run one question in `session` (a new session when None or unknown), checkpointed."""
    try:
        async with open_checkpointer() as saver:  # first: an unreachable database creates nothing
            await check_backends()  # an unreachable Redis too: one line, before any work
            session_id = session if session is not None else str(uuid.uuid4())
            graph = build_graph(checkpointer=saver)
            config = thread_config(session_id)
            busy = (f"another run is in progress on session {session_id}; this question waits "
                    "for it to finish")
            async with session_lock(session_id, wait=True, on_wait=lambda: note(busy)):
                # The lock is ours: unfinished nodes now were left by a run that died.
                if await saver.aget_tuple(config) is None:
                    if session is not None:
                        note(f"session {session_id} is new")
                else:
                    snapshot = await graph.aget_state(config)
                    last = _last_run(snapshot)
                    if last in ("stopped", "review"):
                        note(f"session {session_id} had an unfinished run "
                             f"({_describe(snapshot)}); this question replaces it")
                request = cast(InputState, payload)
                code = await _run(graph, request, config, ctx, session_id, json_output,
                                  approve_cost=approve_cost)
        await reclaim_space()
        return code
    finally:
        _save_rates()
        await close_all()


async def resume(session_id: str, ctx: Context, *, json_output: bool,
                 approve_cost: bool = False) -> int:
    """Continue the session's unfinished run from its last checkpoint, or answer the plan
    review it waits on."""
    try:
        async with open_checkpointer() as saver:
            await check_backends()
            config = thread_config(session_id)
            if await saver.aget_tuple(config) is None:
                raise no_session(session_id)
            graph = build_graph(checkpointer=saver)
            try:
                async with session_lock(session_id, wait=False):
                    snapshot = await graph.aget_state(config)
                    code = await _resume(graph, snapshot, config, ctx, session_id, json_output,
                                         approve_cost=approve_cost)
            except SessionBusyError:
                raise InputError(
                    f"another run is in progress on session {session_id}; wait for it to "
                    f"finish (resume only a run that stopped)") from None
        await reclaim_space()
        return code
    finally:
        _save_rates()
        await close_all()


def _save_rates() -> None:
    """Keep the model's speed measured by this command for the next one's cost estimate
    (llm/rates.py); a data folder that cannot take it changes nothing."""
    with contextlib.suppress(ScholarflowError):
        save_rates(home_path())


async def _resume(graph: ScholarflowGraph, snapshot: StateSnapshot, config: RunnableConfig,
                  ctx: Context, session_id: str, json_output: bool, *,
                  approve_cost: bool) -> int:
    last = _last_run(snapshot)
    ask_again = f"ask with `scholarflow ask QUESTION --session {session_id}`"
    if last == "failed":
        error = (snapshot.values or {}).get("error") or "it failed"
        raise InputError(f"the last run of session {session_id!r} failed ({error}); there "
                         f"is nothing to resume: {ask_again}")
    if last in ("none", "finished"):
        raise InputError(f"session {session_id!r} has no unfinished run to resume; {ask_again}")
    if (cost := _review(snapshot, APPROVE_COST)) is not None and not approve_cost:
        return _cost_refused(cost, session_id)  # nothing to run until it is approved
    note(f"resuming {_describe(snapshot)}")
    if last == "review":
        if cost is not None:
            answer: Any = {"action": "approve"}
        else:
            review = _review(snapshot)
            assert review is not None
            answer = await _review_answer(review, session_id)
        return await _run(graph, Command(resume=answer), config, ctx, session_id, json_output,
                          approve_cost=approve_cost)
    return await _run(graph, None, config, ctx, session_id, json_output,
                      approve_cost=approve_cost)


def _cost_refused(cost: dict[str, Any], session_id: str) -> int:
    """Say what the summary would cost and how to run it; the run waits for the approval."""
    print(f"error: {safe_text(str(cost.get('estimate') or 'this summary needs approval'))} "
          f"({safe_text('; '.join(map(str, cost.get('over') or [])))}); to run it: "
          f"`scholarflow resume {session_id} --approve-cost` (or ask again with "
          "--approve-cost)", file=sys.stderr)
    return EXIT_BAD_INPUT


async def _run(graph: ScholarflowGraph, request: InputState | Command[Any] | None,
               config: RunnableConfig, ctx: Context, session_id: str, json_output: bool, *,
               approve_cost: bool = False) -> int:
    """Stream the run to the renderer, answering plan reviews as they come, and a cost
    approval when `approve_cost`; `request` None continues the thread's run. The exit code."""
    renderer: Renderer = JsonRenderer() if json_output else TerminalRenderer()
    while True:
        try:
            await _stream(graph, request, config, ctx, session_id, renderer)
        except ScholarflowError as exc:
            if renderer.error is None:  # not the run's failure (no error event): main says it
                raise
            if json_output:  # the terminal renderer printed it already
                print(f"error: {safe_text(renderer.error)}", file=sys.stderr)
            # A bad request or setting found inside the graph is still a bad request.
            bad = isinstance(exc, InputError | ConfigurationError)
            return EXIT_BAD_INPUT if bad else EXIT_RUN_FAILED
        snapshot = await graph.aget_state(config)
        if (cost := _review(snapshot, APPROVE_COST)) is not None:
            if not approve_cost:
                return _cost_refused(cost, session_id)
            request = Command(resume={"action": "approve"})
            continue
        review = _review(snapshot)
        if review is None:
            break
        request = Command(resume=await _review_answer(review, session_id))
    if renderer.final is not None:
        return 0
    # Paused by something else than a plan review (interrupt_before, say).
    print(f"error: the run stopped before answering ({_describe(snapshot)}); "
          f"`scholarflow resume {session_id}` continues it", file=sys.stderr)
    return EXIT_RUN_FAILED


async def _stream(graph: ScholarflowGraph, request: InputState | Command[Any] | None,
                  config: RunnableConfig, ctx: Context, session_id: str,
                  renderer: Renderer) -> None:
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


# --- plan review --------------------------------------------------------------------------------


async def _review_answer(review: dict[str, Any], session_id: str) -> dict[str, Any]:
    """The resume value for the plan review: approve, edited sub-questions or feedback, as
    answered on the terminal (or standard input). End of input: CliError, the run waits."""
    tty = sys.stdin.isatty()
    print(plan_review_text(review), file=sys.stderr, flush=True)
    while True:
        line = await _read_line(session_id, _REVIEW_PROMPT)
        text = line.strip()
        if not text:
            return {"action": "approve"}
        answer: dict[str, Any] = {"action": "feedback", "feedback": text}
        if text.lower() == "e":
            answer = {"action": "edit", "sub_questions": await _read_sub_questions(session_id)}
        if (why := _refused(answer)) is None:
            return answer
        # Checked here: the graph would end the run on it, and the plan would be lost.
        if not tty:
            raise CliError(f"{why}; `scholarflow resume {session_id}` asks again")
        print(f"{safe_text(why)}; the plan is unchanged, answer again", file=sys.stderr)


def _refused(answer: dict[str, Any]) -> str | None:
    """Why plan_review would refuse the answer (a format the graph checks again), or None."""
    from scholarflow.nodes.plan_review import parse_review

    if answer.get("sub_questions") == []:
        return "no sub-questions given after 'e': give at least one, one per line"
    try:
        parse_review(answer, feedback_left=1)  # rounds left: the graph's to count
    except InputError as exc:
        return str(exc).split("; resume with", 1)[0]  # the JSON forms mean nothing here
    return None


async def _read_sub_questions(session_id: str) -> list[str]:
    """Lines up to an empty line (or the end of input), one sub-question each."""
    print("the sub-questions, one per line; an empty line ends them:", file=sys.stderr)
    questions: list[str] = []
    while line := (await _read_line(session_id, "", eof_ok=True)).strip():
        questions.append(line)
    return questions


async def _read_line(session_id: str, prompt: str, *, eof_ok: bool = False) -> str:
    """One line of standard input, with its newline; "" at its end (a CliError unless
    `eof_ok`). Read in a daemon thread: Ctrl-C must not wait for the line."""
    if prompt:
        print(prompt, end="", file=sys.stderr, flush=True)
    loop = asyncio.get_running_loop()
    done: asyncio.Future[str | None] = loop.create_future()  # None: not UTF-8

    def read() -> None:
        line: str | None
        try:
            line = sys.stdin.readline()
        except UnicodeDecodeError:
            line = None
        except (OSError, ValueError):  # closed or unreadable: as good as its end
            line = ""
        loop.call_soon_threadsafe(_settle, done, line)

    threading.Thread(target=read, daemon=True).start()
    try:
        line = await done
    except asyncio.CancelledError:
        note(f"the run waits for its plan review; `scholarflow resume {session_id}` "
             "continues it")
        raise
    if prompt and (not line or not sys.stdin.isatty()):
        print(file=sys.stderr)  # end the prompt's line: no Enter was echoed to end it
    if line is None or has_surrogates(line):
        raise CliError(f"the answer to the plan review is not valid UTF-8; type it again "
                       f"with `scholarflow resume {session_id}`")
    if not line and not eof_ok:
        raise CliError(f"no answer to the plan review (end of input); the run waits for it: "
                       f"`scholarflow resume {session_id}` continues it")
    return line


def _settle(future: asyncio.Future[str | None], line: str | None) -> None:
    if not future.done():  # cancelled meanwhile (Ctrl-C)
        future.set_result(line)
