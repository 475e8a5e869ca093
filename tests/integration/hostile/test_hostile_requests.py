"""Hostile requests on the command line: bad arguments get one line and exit 2.

Encodings (bytes that are not UTF-8 in argv and on stdin, lone surrogates),
names that are no knowledge base (`../../etc`, `a/b`, empty, very long),
unknown documents and questions without words, for every command that takes
them; and 20 concurrent asks on one session. The cases of one table run at
once (`outcomes`), each in its own copy of the seeded home.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.integration.hostile.harness import (
    EXIT_BAD_REQUEST,
    PAPER,
    SEED_KB,
    Call,
    Result,
    Seeded,
    assert_clean_error,
    assert_clean_success,
    assert_intact,
    assert_no_new_session,
    assert_no_secret,
    copy_seeded,
    fingerprint,
    llm_env,
    run,
    run_many,
)
from tests.support import FakeOpenAIServer

KB_NAME_FIX = ("invalid knowledge base name", "letters, digits")
NO_WORDS_FIX = ("no words", "e.g.")


def test_unknown_session_id_format(seeded: Seeded, llm_server: FakeOpenAIServer) -> None:
    result = run(["sessions", "show", "no-such-session"], llm_env(llm_server.base_url, seeded.home))
    assert_clean_error(result, exit_code=EXIT_BAD_REQUEST, names=["sessions list"])
    assert_no_secret(seeded.home, result.stdout, result.stderr)
    assert_intact(seeded)


@dataclass(frozen=True)
class Case:
    id: str
    args: Sequence[str | bytes]
    names: tuple[str, ...]
    stdin: bytes = b""


CASES = [
    # --- encodings: argv bytes that are not UTF-8 arrive as lone surrogates
    Case("ask-question-not-utf8", ["ask", b"what \xff\xfe is this"],
         ("question is not valid UTF-8", "byte 0xff", "give it as UTF-8")),
    Case("ask-question-lone-surrogate", ["ask", b"surrogate \xed\xa0\x80 here"],
         ("question is not valid UTF-8", "give it as UTF-8")),
    Case("ask-doc-not-utf8", ["ask", "Summarize it", "--kb", SEED_KB, "--doc", b"\xc3("],
         ("--doc is not valid UTF-8",)),
    Case("search-query-not-utf8", ["search", b"learning \xff rate", "--kb", SEED_KB],
         ("query is not valid UTF-8",)),
    Case("route-stdin-not-utf8", ["route", "-"], ("not valid UTF-8", "line 2", "as UTF-8"),
         stdin=b"hello there\n\xff\xfe summarize\nsummarize this paper\n"),
    Case("route-question-not-utf8", ["route", b"\xff"], ("question is not valid UTF-8",)),
    # --- documents that are not there
    Case("ask-unknown-doc", ["ask", "Summarize it", "--kb", SEED_KB, "--doc", "nosuchdoc"],
         ("no document nosuchdoc", "scholarflow search")),
    Case("search-unknown-doc", ["search", "learning rate", "--kb", SEED_KB, "--doc", "nosuch"],
         ("no document", "scholarflow ingest")),
    Case("route-unknown-doc", ["route", "Summarize it", "--kb", SEED_KB, "--doc", "nosuch"],
         ("no document nosuch", "scholarflow search")),
    Case("ask-doc-without-kb", ["ask", "Summarize it", "--doc", "nosuch"],
         ("no knowledge base 'default'", "scholarflow ingest")),
    Case("ask-unknown-kb", ["ask", "Summarize it", "--kb", "nosuchkb"],
         ("no knowledge base 'nosuchkb'", "scholarflow ingest")),
    # --- knowledge base names that are no name
    Case("ask-kb-traversal", ["ask", "Summarize it", "--kb", "../../etc"], KB_NAME_FIX),
    Case("search-kb-traversal", ["search", "learning rate", "--kb", "../../etc"], KB_NAME_FIX),
    Case("ingest-kb-traversal", ["ingest", str(PAPER), "--kb", "../../etc"], KB_NAME_FIX),
    Case("route-kb-traversal", ["route", "Summarize it", "--kb", "../../etc"], KB_NAME_FIX),
    Case("ask-kb-slash", ["ask", "Summarize it", "--kb", "a/b"], KB_NAME_FIX),
    Case("ask-kb-empty", ["ask", "Summarize it", "--kb", ""], KB_NAME_FIX),
    Case("search-kb-empty", ["search", "learning rate", "--kb", ""], KB_NAME_FIX),
    Case("ask-kb-very-long", ["ask", "Summarize it", "--kb", "k" * 300], KB_NAME_FIX),
    Case("ingest-kb-very-long", ["ingest", str(PAPER), "--kb", "k" * 300], KB_NAME_FIX),
    # --- questions without words, where there is something to search
    Case("ask-wordless-with-file", ["ask", "???", "--file", str(PAPER)], NO_WORDS_FIX),
    Case("ask-wordless-with-kb", ["ask", "?!", "--kb", SEED_KB], NO_WORDS_FIX),
    Case("search-wordless", ["search", "???", "--kb", SEED_KB], NO_WORDS_FIX),
    # --- usage errors argparse finds: one line too, not its usage block
    Case("ask-llm-timeout-not-a-number", ["ask", "hi", "--llm-timeout", "abc"],
         ("--llm-timeout", "scholarflow ask --help")),
    Case("unknown-command", ["frobnicate"], ("invalid choice", "scholarflow --help")),
    Case("ask-without-question", ["ask"], ("question", "scholarflow ask --help")),
    Case("ask-unknown-flag", ["ask", "hi", "--temperature", "9"],
         ("unrecognized arguments", "--help")),
]


@dataclass(frozen=True)
class Outcome:
    seeded: Seeded
    result: Result


@pytest.fixture(scope="module")
def outcomes(seeded_template: Seeded, llm_server: FakeOpenAIServer,
             tmp_path_factory: pytest.TempPathFactory) -> dict[str, Outcome]:
    llm_server.reset()
    homes = {c.id: copy_seeded(seeded_template, tmp_path_factory.mktemp(c.id) / "home")
             for c in CASES}
    results = run_many([Call(c.args, llm_env(llm_server.base_url, homes[c.id].home), stdin=c.stdin)
                        for c in CASES])
    return {c.id: Outcome(homes[c.id], r) for c, r in zip(CASES, results, strict=True)}


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_a_bad_request_is_exit_2_and_one_line(case: Case, outcomes: dict[str, Outcome]) -> None:
    seeded, result = outcomes[case.id].seeded, outcomes[case.id].result
    assert_clean_error(result, exit_code=EXIT_BAD_REQUEST, names=case.names)
    assert_no_secret(seeded.home, result.stdout, result.stderr)
    assert_intact(seeded)
    assert_no_new_session(seeded)  # rejected before the run: no empty session left
    assert set(fingerprint(seeded.home)) == set(seeded.fingerprint)  # no knowledge base made


def test_route_answers_the_good_lines_around_a_bad_one(outcomes: dict[str, Outcome]) -> None:
    result = outcomes["route-stdin-not-utf8"].result
    routed = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(routed) == 3, result.describe()
    assert routed[0]["intent"] == "SIMPLE_INTERACTION" and "error" in routed[1]
    assert routed[2]["intent"] == "LITERATURE_SUMMARY"


# --- concurrency -------------------------------------------------------------------------

ASKERS = 20


def test_concurrent_asks_on_one_session_lose_nothing_and_say_only_what_is_true(
        seeded: Seeded, llm_server: FakeOpenAIServer) -> None:
    # Each answer takes a while, so the 20 runs overlap: every one but the first finds
    # another one running. None of them was left unfinished, so none may say so.
    llm_server.configure(latency=0.3)
    env = llm_env(llm_server.base_url, seeded.home)
    questions = [f"hello number {i}" for i in range(ASKERS)]
    results = run_many([Call(["ask", q, "--session", seeded.session_id, "--no-thinking"], env,
                             timeout=240) for q in questions], workers=ASKERS)
    for result in results:
        assert_clean_success(result)
        assert "unfinished" not in result.stderr, result.describe()
    waited = [r for r in results if "another run is in progress on session" in r.stderr]
    assert waited, "the asks never overlapped: the case proves nothing"
    stored = [m for m in fingerprint(seeded.home)["messages"] if m[0] == seeded.session_id]
    for question in questions:  # each question and its answer, none lost
        assert (seeded.session_id, "USER", question) in stored
    assert sum(1 for m in stored if m[1] == "ASSISTANT") == ASKERS + 1
    assert_intact(seeded)
    assert_no_secret(seeded.home, *(r.stdout + r.stderr for r in results))


# --- --llm-timeout -----------------------------------------------------------------------

@pytest.mark.parametrize("argv", [
    ["ask", "hello", "--llm-timeout", "7.5"],
    ["resume", "some-session", "--llm-timeout", "7.5"],
])
def test_llm_timeout_flag_sets_the_context(argv: list[str], monkeypatch: pytest.MonkeyPatch,
                                           tmp_path: Path) -> None:
    from scholarflow.cli import main as cli
    from scholarflow.cli import run as cli_run

    monkeypatch.setenv("SCHOLARFLOW_HOME", str(tmp_path))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("SCHOLARFLOW_LLM_TIMEOUT", "99")  # a value given wins over it
    seen: dict[str, Any] = {}

    async def capture(*args: Any, **kwargs: Any) -> int:
        seen["ctx"] = next(a for a in args if hasattr(a, "llm_timeout_seconds"))
        return 0

    monkeypatch.setattr(cli_run, "ask", capture)
    monkeypatch.setattr(cli_run, "resume", capture)
    assert cli.main(argv) == 0
    assert seen["ctx"].llm_timeout_seconds == 7.5


def test_llm_timeout_must_be_positive() -> None:
    from scholarflow.cli import main as cli

    parser = cli._parser()
    with pytest.raises(SystemExit):
        parser.parse_args(["ask", "hello", "--llm-timeout", "0"])
    args = parser.parse_args(["search", "x", "--llm-timeout", "3"])
    assert isinstance(args, argparse.Namespace) and args.llm_timeout == 3.0


async def test_a_held_session_lock_is_another_live_run(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from scholarflow.cli.session import SessionBusyError, session_lock

    monkeypatch.setenv("SCHOLARFLOW_HOME", str(tmp_path))
    waited: list[bool] = []
    async with session_lock("s1", wait=False):
        with pytest.raises(SessionBusyError):  # resume: refuses
            async with session_lock("s1", wait=False):
                pass
        async with session_lock("s2", wait=False):  # another session: free
            pass

        async def later() -> None:
            async with session_lock("s1", wait=True, on_wait=lambda: waited.append(True)):
                pass

        import asyncio

        waiter = asyncio.create_task(later())
        await asyncio.sleep(0.3)
        assert waited == [True] and not waiter.done()  # ask: says so, and waits
    await asyncio.wait_for(waiter, 5)  # released: it goes on


@pytest.mark.parametrize(("kind", "bad_request"), [("input", True), ("config", True),
                                                   ("run", False), (None, False)])
@pytest.mark.parametrize("json_output", [False, True])
def test_an_error_from_inside_the_graph_keeps_its_kind(kind: str | None, bad_request: bool,
                                                       json_output: bool) -> None:
    # request_init raising InputError is a bad request (exit 2), as the same error caught
    # before the run would be; a failed model call is a failed run (exit 1).
    import io

    from scholarflow.cli.render import JsonRenderer, TerminalRenderer

    out, err = io.StringIO(), io.StringIO()
    renderer = JsonRenderer(out) if json_output else TerminalRenderer(out, err)
    message = "no document x\x1b[31m in knowledge base 'lab'; see `scholarflow search`"
    node_error: dict[str, Any] = {"type": "node_error", "node": "request_init",
                                  "error": message}
    if kind is not None:
        node_error["kind"] = kind
    renderer.handle(node_error)
    renderer.handle({"type": "error", "message": message, "session_id": "s"})
    assert renderer.error == message and renderer.bad_request is bad_request
    assert "\x1b" not in out.getvalue() + err.getvalue()  # escaped on either stream


async def test_a_bad_request_inside_the_graph_is_tagged_input(fake_llm: FakeOpenAIServer) -> None:
    from tests.conftest import run_graph

    # (An unknown session id is not one: it starts that session.)
    _out, events = await run_graph({"query": "hi", "doc_ids": ["no-such-document"]})
    node_errors = [e for e in events if e["type"] == "node_error"]
    assert (node_errors[0]["node"], node_errors[0]["kind"]) == ("request_init", "input")
    assert all(e["kind"] == "input" for e in node_errors)
