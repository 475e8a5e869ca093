"""The command line: ask, resume, route, sessions, ingest and search.

Every failure is one line on stderr, `error: <what was wrong, what to do>`,
and a non-zero exit: 2 for a bad request, 1 for a run that failed.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import logging
import os
import select
import sys
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, NoReturn, cast

from scholarflow.cli import kb as cli_kb
from scholarflow.cli import read as cli_read
from scholarflow.cli import remote as cli_remote
from scholarflow.cli import users as cli_users
from scholarflow.cli.exits import EXIT_BAD_INPUT, EXIT_RUN_FAILED, CliError, RunFailedError
from scholarflow.context import Context
from scholarflow.errors import InternalError, RetryableLLMError, ScholarflowError
from scholarflow.intents import Intent
from scholarflow.settings import get_settings

SEARCH_ENGINES = ("tavily", "bocha")
EXIT_PIPE_CLOSED = 141  # 128 + SIGPIPE: what a shell reports for a reader that went away


class _Parser(argparse.ArgumentParser):
    """argparse, with its usage errors as one `error:` line like every other bad request."""

    def error(self, message: str) -> NoReturn:
        print(f"error: {_safe(message)}; see `{self.prog} --help`", file=sys.stderr)
        sys.exit(EXIT_BAD_INPUT)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="scholarflow", description="Answers questions about your academic papers."
    )
    sub = parser.add_subparsers(dest="command", required=True)

    ask = sub.add_parser("ask", help="answer a question, streaming")
    ask.add_argument("question")
    _document_args(ask)
    ask.add_argument("--session", metavar="ID",
                     help="continue this session (see `sessions list`), or start a new "
                          "one with this id; without it, a new session")
    ask.add_argument("--mode", help="skip intent recognition: " + ", ".join(Intent))
    ask.add_argument("--web-search", action="store_true", help="search the web in chat")
    ask.add_argument("--search-engine", choices=SEARCH_ENGINES,
                     help="web search engine (default: the one whose API key is set; "
                          "tavily when both or neither are)")
    ask.add_argument("--no-thinking", action="store_true", help="hide the workflow's thinking")
    ask.add_argument("--json", action="store_true", help="print one stream event per line")
    ask.add_argument("--review-plan", action="store_true",
                     help="pause once the recall plan is made, to approve, edit or comment "
                          "on it (asked on the terminal, or read from standard input)")
    _add_approve_cost(ask)
    cli_kb.add_llm_timeout(ask)
    _add_max_context(ask)

    resume = sub.add_parser("resume", help="finish a session's run that stopped midway, or "
                                           "review the plan it waits on")
    resume.add_argument("session_id")
    resume.add_argument("--no-thinking", action="store_true", help="hide the workflow's thinking")
    resume.add_argument("--json", action="store_true", help="print one stream event per line")
    resume.add_argument("--review-plan", action="store_true",
                        help="review the recall plan, if the run has not made it yet")
    _add_approve_cost(resume)
    cli_kb.add_llm_timeout(resume)
    _add_max_context(resume)

    route = sub.add_parser("route", help="print the intent and strategy; generate nothing")
    route.add_argument("question", help="the question, or - for one question per stdin line")
    _document_args(route)

    sessions = sub.add_parser("sessions", help="list, show or delete stored sessions")
    verbs = sessions.add_subparsers(dest="verb", required=True)
    verbs.add_parser("list", help="one JSON line per session (thread), newest first")
    show = verbs.add_parser("show", help="one JSON line per message")
    show.add_argument("session_id")
    delete = verbs.add_parser("delete", help="delete a session: its thread's checkpoints")
    delete.add_argument("session_id")
    cli_kb.add_parsers(sub)
    cli_users.add_parser(sub)
    cli_read.add_parser(sub)
    cli_remote.add_arguments(parser, sub.choices)
    return parser


def _add_approve_cost(parser: argparse.ArgumentParser) -> None:
    """`--approve-cost`: lift the context's approval limits for this run (cost_check)."""
    parser.add_argument("--approve-cost", action="store_true",
                        help="run a summary of many documents even past the cost limits "
                             "(approval_documents, approval_tokens); without it, such a "
                             "summary prints its estimate and waits")


def _add_max_context(parser: argparse.ArgumentParser) -> None:
    """`--max-context N`: Context.max_context_tokens (a value given wins over the
    environment's SCHOLARFLOW_MAX_CONTEXT_TOKENS, which wins over the server's report)."""
    parser.add_argument("--max-context", type=_window_tokens, default=None, metavar="N",
                        help="the model's context window in tokens (default: "
                             "$SCHOLARFLOW_MAX_CONTEXT_TOKENS, else what the server reports, "
                             "else 128000)")


def _window_tokens(value: str) -> int:
    if not value.strip().isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"expected the model's context window in tokens, a "
                                         f"whole number like 8192, got {value!r}")
    return int(value)


def _document_args(parser: argparse.ArgumentParser) -> None:
    # nargs="+" with extend: `--file papers/*.md` (the shell's expansion) and `--file a --file b`.
    parser.add_argument("--file", nargs="+", action="extend", default=[], metavar="PATH",
                        help="documents given directly: files, or folders (their PDF, Markdown "
                             "and text files); repeatable")
    parser.add_argument("--kb", help="knowledge base name")
    parser.add_argument("--doc", action="append", default=[], metavar="ID",
                        help="a document of the knowledge base (repeatable)")


def _question(text: str) -> str:
    if not text.strip():
        raise CliError("the question is empty: ask something, e.g. 'summarize this paper'")
    return text.strip()


def _session_id(value: str) -> str:
    from scholarflow.sessions.models import check_session_id

    try:
        return check_session_id(value)
    except ValueError as exc:
        raise CliError(f"invalid --session: {exc}; give another id, or leave --session out "
                       "to start a new session") from None


def _mode(value: str | None) -> str | None:
    if value is None:
        return None
    try:
        return Intent.parse(value).value
    except ValueError as exc:
        raise CliError(f"invalid --mode: {exc}") from None


async def _graph_input(args: argparse.Namespace, question: str, *,
                       check_kb: Callable[[str], str] | None = None) -> dict[str, Any]:
    from scholarflow.cli.files import load_documents
    from scholarflow.retrieval.index import check_kb_name

    payload: dict[str, Any] = {"query": question}
    if args.file:
        payload["document_contents"] = await load_documents(args.file)
    if args.kb is not None:  # an empty name is an error, not no knowledge base
        payload["kb"] = (check_kb or check_kb_name)(args.kb)
    if args.doc:
        payload["doc_ids"] = list(args.doc)
    return payload


def _run_context(args: argparse.Namespace) -> Context:
    given = getattr(args, "llm_timeout", None)
    extra: dict[str, Any] = {"llm_timeout_seconds": given} if given else {}
    if window := getattr(args, "max_context", None):
        extra["max_context_tokens"] = window
    if getattr(args, "review_plan", False):
        extra["review_plan"] = True
    if getattr(args, "approve_cost", False):  # approved before it is asked: no limit
        extra.update(approval_documents=None, approval_tokens=None)
    # Passed only when the Context has the field (plan review lands with the graph's node).
    known = {f.name for f in dataclasses.fields(Context)}
    ctx = Context(show_thinking=not args.no_thinking,
                  search_engine=getattr(args, "search_engine", None),
                  **{k: v for k, v in extra.items() if k in known})
    if not ctx.llm_configured:
        raise CliError("no LLM configured: set OPENAI_API_KEY (and OPENAI_BASE_URL for "
                       "DeepSeek, Qwen, vLLM or Ollama)")
    return ctx


async def _ask(args: argparse.Namespace) -> int:
    from scholarflow.cli import run as cli_run
    from scholarflow.cli.files import check_request

    question = _question(args.question)
    mode = _mode(args.mode)
    if args.session is not None:
        _session_id(args.session)
    ctx = _run_context(args)
    payload = await _graph_input(args, question)
    # Before the run: a bad request is exit 2 and leaves no session behind.
    await check_request(payload)
    payload.update(mode_type=mode, enable_web_search=args.web_search)
    if args.web_search and (args.file or args.kb or args.doc):
        # Only simple_interaction searches: a document task would drop the flag unsaid.
        cli_run.note("--web-search applies to chat; a question about the given documents "
                     "is answered from them, without web search")
    return await cli_run.ask(payload, ctx, session=args.session, json_output=args.json,
                             approve_cost=args.approve_cost)


async def _remote_input(args: argparse.Namespace) -> dict[str, Any]:
    """What `ask` sends a server (cli/remote_commands.py): the graph input it runs on this machine,
    whose `--kb` may also be PERSON/NAME, a knowledge base another person shares."""
    from scholarflow.retrieval.index import check_kb_ref

    payload = await _graph_input(args, _question(args.question), check_kb=check_kb_ref)
    payload.update(mode_type=_mode(args.mode), enable_web_search=args.web_search)
    return payload


async def _resume(args: argparse.Namespace) -> int:
    from scholarflow.cli import run as cli_run
    from scholarflow.llm.window import probe_window

    ctx = _run_context(args)
    await probe_window(ctx)  # what request_init does for `ask`: a resumed run skips it
    return await cli_run.resume(args.session_id, ctx, json_output=args.json,
                                approve_cost=args.approve_cost)


async def _route(args: argparse.Namespace) -> int:
    from scholarflow.cli.files import stdin_questions
    from scholarflow.nodes.intent import recognise_intent, select_strategy
    from scholarflow.nodes.request import document_budget, fits_whole, gather_documents
    from scholarflow.state import State
    from scholarflow.tokens import count_tokens

    ctx = Context()
    infos, _contents = await gather_documents(cast(State, await _graph_input(args, "-")))
    questions: Iterable[tuple[str, str | None]] = (
        stdin_questions(sys.stdin.buffer) if args.question == "-" else [(args.question, None)]
    )
    failures: list[str] = []
    for number, (raw, bad) in enumerate(questions, start=1):
        why = bad or (None if raw.strip() else "the question is empty")
        if why is not None:
            print(json.dumps({"error": why}), flush=True)
            failures.append(f"line {number}: {why}" if args.question == "-" else why)
            continue
        question = raw.strip()
        decision = await recognise_intent(ctx, question, documents=infos)
        strategy = None
        if infos and decision.intent is not Intent.SIMPLE_INTERACTION:
            budget = document_budget(ctx, session_tokens=0, query_tokens=count_tokens(question))
            strategy = select_strategy(decision.intent,
                                       use_direct_content=fits_whole(ctx, infos, budget),
                                       document_count=len(infos))
        print(json.dumps({
            "intent": decision.intent.value, "confidence": round(decision.confidence, 3),
            "decided_by": decision.decided_by, "strategy": strategy,
        }, ensure_ascii=False), flush=True)
    if failures:
        raise CliError(f"{len(failures)} question(s) not routed ({failures[0]}): fix them and "
                       "route them again")
    return 0


async def _sessions(args: argparse.Namespace) -> int:
    from scholarflow.cli import session as cli_session

    if args.verb == "list":
        return await cli_session.list_sessions()
    if args.verb == "show":
        return await cli_session.show_session(args.session_id)
    return await cli_session.delete_session(args.session_id)


async def _checked(command: Callable[[argparse.Namespace], Awaitable[int]],
                   args: argparse.Namespace) -> int:
    """`command(args)` once its text arguments are valid UTF-8: argv bytes that are not
    arrive as lone surrogates, which would fail later, after a session was created."""
    from scholarflow.cli.files import check_text_args

    check_text_args(args)
    _check_home()
    return await command(args)


def _check_home() -> None:
    """A SCHOLARFLOW_HOME that is a file (or inside one) is one line naming the setting,
    whatever the command: reading commands would otherwise find no knowledge base or
    session there, and send the user to create one where none can be."""
    from scholarflow.storage.paths import ensure_folder, home_path

    home = home_path()
    if any(p.exists() and not p.is_dir() for p in (home, *home.parents)):
        ensure_folder(home)  # raises the ConfigurationError that says so


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if _debug() else logging.ERROR,
                        format="%(levelname)s %(name)s: %(message)s")
    from scholarflow.scrub import install_log_scrubbing

    install_log_scrubbing()  # debug logs and their tracebacks hold no secret either
    try:
        code = asyncio.run(run(args))
        sys.stdout.flush()  # here, not at exit: a reader gone meanwhile is caught below
        return code
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return _reader_gone()


def _reader_gone() -> int:
    """Standard output's reader went away (`scholarflow search ... | head -1`): stop
    quietly, as Unix tools do. What is still buffered, and the interpreter's flush at
    exit, go to /dev/null; the exit code is the one a shell gives a process that
    SIGPIPE ended. (SIGPIPE itself stays ignored: it would also end the process on a
    model server's dropped connection.)"""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return EXIT_PIPE_CLOSED


def _stdout_closed() -> bool:
    """Whether standard output is a pipe whose reader is gone (so a BrokenPipeError came
    from printing, not from a connection)."""
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & select.POLLERR for _fd, events in poller.poll(0))
    except (OSError, ValueError, AttributeError):  # no fd (a test's StringIO), or no poll
        return False


async def run(args: argparse.Namespace) -> int:
    """The parsed command, its failure one `error:` line on stderr; the exit code.
    (`main` without the process setup: tests call it in their own event loop.)"""
    command = {"ask": _ask, "resume": _resume, "route": _route, "sessions": _sessions,
               "ingest": cli_kb.ingest, "search": cli_kb.search, "kb": cli_kb.library,
               "users": cli_users.run, "read": cli_read.read}[args.command]
    try:
        if (server := cli_remote.server_for(args)) is not None:
            from scholarflow.cli.remote_commands import run as run_on_server

            return await run_on_server(server, args, ask_input=_remote_input)
        return await _checked(command, args)
    except ScholarflowError as exc:
        print(f"error: {_safe(str(exc))}", file=sys.stderr)
        # A model or server that failed (unreachable, 5xx, 429, timeout) or a bug is a
        # failed run; anything else is the request or the configuration (a bad key or URL).
        failed_run = isinstance(exc, RetryableLLMError | InternalError | RunFailedError)
        return EXIT_RUN_FAILED if failed_run else EXIT_BAD_INPUT
    except Exception as exc:
        if isinstance(exc, BrokenPipeError) and _stdout_closed():
            return _reader_gone()
        if _debug():  # the traceback, scrubbed: a library's message may quote a URL or key
            from scholarflow.scrub import scrubbed_traceback

            print(scrubbed_traceback(exc), end="", file=sys.stderr)
        print(f"error: unexpected {type(exc).__name__}: {_safe(str(exc))} "
              "(set SCHOLARFLOW_DEBUG=1 for details)", file=sys.stderr)
        return EXIT_RUN_FAILED


def _debug() -> bool:
    return get_settings().debug


def _safe(message: str) -> str:
    """The message on one line, without any secret of the service URLs: a driver's
    message may quote a malformed URL that no handler of ours rewrote."""
    from scholarflow.printable import safe_text
    from scholarflow.scrub import scrub_secrets

    # safe_text: a file name in the message must not drive the terminal (ESC, OSC, bidi).
    return safe_text(scrub_secrets(" ".join(message.split())))


if __name__ == "__main__":
    sys.exit(main())
