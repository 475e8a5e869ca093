"""The `scholarflow` command line, run as a real subprocess against the scripted LLM server.

Each subprocess pays ~2-3 s of imports, so independent invocations run
concurrently (`run_many`) and the asks that several tests read run once per
module (`asked`).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import EXAMPLES, INTENT_RULE
from tests.support import FakeOpenAIServer

REPO = Path(__file__).resolve().parents[2]
PAPER = EXAMPLES / "en_sparse_attention.md"
QA_RULE = "You answer a precise question"  # the system prompt of a LITERATURE_QA answer
INTENT_QA = '{"intent": "LITERATURE_QA", "confidence": 0.9, "reason": "a precise question"}'
EVENT_TYPES = frozenset({
    "thinking_start", "thinking_end", "thought_chunk", "answer_chunk", "final_answer",
    "node_complete", "node_error", "doc_summary_init", "doc_summary_start",
    "doc_summary_chunk", "doc_summary_complete", "doc_summary_error", "error",
})
TIMEOUT = 60  # seconds per subprocess; a hang fails the test instead of the whole run

# Not a whole question: the rules are unsure, so the first ask makes an intent call.
Q1 = "The sparse model's attention pattern?"
Q2 = "How much memory does it save at 32k tokens?"
Q3 = "What are the limitations of the method?"
A1 = "It uses local windows plus a few global tokens."
A2 = "About eight times less memory than dense attention."
A3 = "Long-range retrieval degrades slightly."


@dataclass(frozen=True)
class Result:
    args: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str

    @property
    def err_lines(self) -> list[str]:
        return self.stderr.splitlines()

    def json_lines(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.stdout.splitlines()]

    def describe(self) -> str:
        return (f"scholarflow {' '.join(self.args)!r} -> {self.returncode}\n"
                f"--- stdout\n{self.stdout}--- stderr\n{self.stderr}")


def base_env(home: Path) -> dict[str, str]:
    """The caller's environment without any LLM, search, tracing or scholarflow setting."""
    dropped = ("OPENAI_", "SCHOLARFLOW_", "TAVILY_", "BOCHA_", "LANGSMITH_", "LANGCHAIN_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(dropped)}
    env["SCHOLARFLOW_HOME"] = str(home)
    env["PYTHONIOENCODING"] = "utf-8"
    return env


def llm_env(server: FakeOpenAIServer, home: Path) -> dict[str, str]:
    return {**base_env(home), "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "dummy"}


def run(args: Sequence[str], env: dict[str, str], stdin: str | None = None) -> Result:
    proc = subprocess.run(
        [sys.executable, "-m", "scholarflow.cli", *args],
        input=stdin if stdin is not None else "", capture_output=True, text=True,
        encoding="utf-8", env=env, cwd=REPO, timeout=TIMEOUT, check=False,
    )
    result = Result(tuple(args), proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stdout + proc.stderr, result.describe()
    return result


Call = tuple[Sequence[str], dict[str, str]] | tuple[Sequence[str], dict[str, str], str]


def run_many(calls: Sequence[Call]) -> list[Result]:
    """Independent invocations (args, env[, stdin]), concurrently; results in the order given."""
    with ThreadPoolExecutor(max_workers=min(len(calls), 4)) as pool:
        return list(pool.map(lambda call: run(*call), calls))


def session_of(result: Result) -> str:
    """The session id from the terminal renderer's closing line `session ID · ...`."""
    found = re.findall(r"^session ([0-9a-zA-Z_-]+) · ", result.stderr, re.MULTILINE)
    assert len(found) == 1, result.describe()
    return found[0]


def assert_one_error_line(result: Result, *, mentions: str = "") -> None:
    assert result.returncode != 0, result.describe()
    lines = result.err_lines
    assert len(lines) == 1 and lines[0].startswith("error: "), result.describe()
    assert mentions in lines[0], result.describe()


@dataclass(frozen=True)
class Asked:
    home: Path
    env: dict[str, str]
    first: Result  # ask Q1 --file PAPER (new session, thinking shown)
    second: Result  # ask Q2 --file PAPER --session <first> --mode LITERATURE_QA --json
    third: Result  # ask Q3 --file PAPER --no-thinking (another new session)
    requests: list[dict[str, Any]]  # what the scripted server received, in order


@pytest.fixture(scope="module")
def asked(llm_server: FakeOpenAIServer, tmp_path_factory: pytest.TempPathFactory) -> Asked:
    home = tmp_path_factory.mktemp("cli") / "home"
    env = llm_env(llm_server, home)
    llm_server.reset()
    llm_server.configure(rules=[
        {"match": INTENT_RULE, "reply": INTENT_QA},
        # Whatever intent Q3 gets, its answer is A3; the intent call still matches above.
        {"match": re.escape(Q3), "role": "last_user", "reply": A3},
        {"match": QA_RULE, "reply": A1, "times": 1},
        {"match": QA_RULE, "reply": A2, "times": 1},
    ])
    paper = str(PAPER)
    first = run(["ask", Q1, "--file", paper], env)
    assert first.returncode == 0, first.describe()
    second, third = run_many([
        (["ask", Q2, "--file", paper, "--session", session_of(first),
          "--mode", "LITERATURE_QA", "--json"], env),
        (["ask", Q3, "--file", paper, "--no-thinking"], env),
    ])
    requests = llm_server.stats().requests
    llm_server.reset()
    return Asked(home, env, first, second, third, requests)


def _texts(request: dict[str, Any]) -> list[str]:
    return [str(m.get("content") or "") for m in request["messages"]]


# --- ask ---------------------------------------------------------------------------------------


def test_ask_streams_the_answer_on_stdout_and_thinking_on_stderr(asked: Asked) -> None:
    r = asked.first
    assert r.returncode == 0, r.describe()
    assert r.stdout.strip() == A1, r.describe()
    thoughts = [line for line in r.err_lines if line.startswith("· ")]
    assert thoughts, r.describe()
    assert any("LITERATURE_QA" in line for line in thoughts), r.describe()
    assert re.search(r"^session \S+ · LITERATURE_QA · full_content$", r.stderr, re.MULTILINE), (
        r.describe())


def test_ask_no_thinking_hides_the_thoughts(asked: Asked) -> None:
    r = asked.third
    assert r.returncode == 0, r.describe()
    assert r.stdout.strip() == A3, r.describe()
    assert not [line for line in r.err_lines if line.startswith("·")], r.describe()
    assert session_of(r) != session_of(asked.first)  # no --session: a new one


def test_ask_json_prints_events_and_continues_the_session(asked: Asked) -> None:
    r = asked.second
    assert r.returncode == 0, r.describe()
    assert r.stderr == "", r.describe()
    lines = r.stdout.splitlines()
    assert lines, r.describe()
    events = []
    for line in lines:
        event = json.loads(line)  # every line is one JSON object
        assert isinstance(event, dict) and event.get("type") in EVENT_TYPES, line
        events.append(event)
    final = events[-1]
    assert final["type"] == "final_answer", r.describe()
    assert [e["type"] for e in events].count("final_answer") == 1
    chunks = "".join(e["content"] for e in events if e["type"] == "answer_chunk")
    assert final["answer"] == chunks == A2
    # --session continued the first ask's session; --mode skipped recognition.
    assert final["session_id"] == session_of(asked.first)
    assert final["intent"] == "LITERATURE_QA"
    decided = [e for e in events
               if e["type"] == "node_complete" and e.get("node") == "intent_recognition"]
    assert [e.get("decided_by") for e in decided] == ["override"], r.describe()
    completed = [e["node"] for e in events if e["type"] == "node_complete"]
    assert completed[0] == "request_init" and completed[-1] == "session_save", completed

    # The scripted server saw the first turn in the second answer's prompt.
    answers = [q for q in asked.requests if any(QA_RULE in t for t in _texts(q))]
    second = [q for q in answers if Q2 in _texts(q)[-1]]
    assert len(second) == 1, [_texts(q)[-1] for q in answers]
    history = "\n".join(_texts(second[0])[:-1])
    assert Q1 in history and A1 in history
    # --mode: no intent-recognition request carried the second question (whether the
    # first was decided by a request or by the example messages).
    intents = [q for q in asked.requests if any(INTENT_RULE in t for t in _texts(q))]
    assert not [q for q in intents if Q2 in "\n".join(_texts(q))]


# --- sessions ----------------------------------------------------------------------------------


def test_sessions_list_show_delete(asked: Asked) -> None:
    first, third = session_of(asked.first), session_of(asked.third)
    # Both sessions exist: their asks succeeded (and `delete` below finds the third).
    shown, deleted = run_many([(["sessions", "show", first], asked.env),
                               (["sessions", "delete", third], asked.env)])
    listed, gone = run_many([(["sessions", "list"], asked.env),
                             (["sessions", "show", third], asked.env)])

    assert shown.returncode == 0, shown.describe()
    messages = shown.json_lines()
    assert [m["type"] for m in messages] == ["USER", "ASSISTANT", "USER", "ASSISTANT"]
    assert [m["content"] for m in messages] == [Q1, A1, Q2, A2]
    for m in messages:
        assert isinstance(m["token_count"], int) and m["token_count"] > 0, m
        assert m["compressed"] is False, m

    assert deleted.returncode == 0, deleted.describe()
    assert json.loads(deleted.stdout) == {"deleted": third}
    assert_one_error_line(gone, mentions=third)
    assert gone.stdout == ""

    assert listed.returncode == 0, listed.describe()
    sessions = {s["session_id"]: s for s in listed.json_lines()}  # every line is JSON
    assert first in sessions and third not in sessions, listed.describe()
    assert sessions[first]["message_count"] == 4
    assert sessions[first]["total_token_count"] == sum(m["token_count"] for m in messages)


# --- route -------------------------------------------------------------------------------------


def test_route_needs_no_llm(tmp_path: Path) -> None:
    env = base_env(tmp_path / "home")  # no OPENAI_* at all
    questions = ["summarize this paper", "Which dataset was used in the experiments?",
                 "hello, how are you?"]
    single, batch = run_many([
        (["route", "summarize this paper"], env),
        (["route", "-", "--file", str(PAPER)], env, "\n".join(questions) + "\n"),
    ])
    keys = {"intent", "confidence", "decided_by", "strategy"}

    assert single.returncode == 0, single.describe()
    (line,) = single.json_lines()
    assert set(line) == keys
    assert line["intent"] == "LITERATURE_SUMMARY"
    assert line["decided_by"] == "rules"  # a clear request: no LLM needed to decide
    assert 0.0 <= line["confidence"] <= 1.0

    assert batch.returncode == 0, batch.describe()
    routed = batch.json_lines()
    assert len(routed) == 3, batch.describe()
    assert all(set(r) == keys for r in routed)
    assert routed[0]["intent"] == "LITERATURE_SUMMARY"
    assert routed[1]["intent"] == "LITERATURE_QA"
    assert routed[1]["strategy"] == "full_content"
    assert routed[2]["intent"] == "SIMPLE_INTERACTION" and routed[2]["strategy"] is None


# --- failures ----------------------------------------------------------------------------------


def test_bad_input_is_one_error_line_and_loses_nothing(asked: Asked, tmp_path: Path) -> None:
    env, paper = asked.env, str(PAPER)
    binary = tmp_path / "figure.md"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 8)
    stored = {session_of(asked.first), session_of(asked.third)}  # third may be deleted by now
    cases: dict[str, tuple[list[str], dict[str, str], str]] = {
        "blank question": (["ask", "  \t "], env, ""),
        "missing file": (["ask", Q1, "--file", paper, "--file", str(tmp_path / "nope.md")],
                         env, "nope.md"),
        "binary file": (["ask", Q1, "--file", str(binary)], env, "figure.md"),
        "directory": (["ask", Q1, "--file", str(tmp_path)], env, str(tmp_path)),
        "invalid mode": (["ask", Q1, "--mode", "NOT_AN_INTENT"], env, "NOT_AN_INTENT"),
        "blank session": (["ask", Q1, "--session", " "], env, "invalid --session"),
        "no LLM": (["ask", Q1], base_env(asked.home), "OPENAI_API_KEY"),
    }
    results = run_many([(args, run_env) for args, run_env, _ in cases.values()])
    failures = []
    for (name, (_, _, mentions)), result in zip(cases.items(), results, strict=True):
        try:
            assert_one_error_line(result, mentions=mentions)
        except AssertionError as exc:
            failures.append(f"[{name}] {exc}")
    assert not failures, "\n\n".join(failures)

    after = run(["sessions", "list"], env)
    assert after.returncode == 0, after.describe()
    kept = {s["session_id"] for s in after.json_lines()}
    assert session_of(asked.first) in kept, "a rejected request lost a stored session"
    assert kept <= stored, "a rejected request created a session"
