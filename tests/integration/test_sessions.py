"""Sessions are threads: `scholarflow sessions list | show | delete`, load or create, a failed
run's exit code and kept question, compression seen in `show`, and the plan review.

The command line runs in-process (`cli.run`, output captured): a subprocess
costs ~3 s of imports. SQLite and PostgreSQL (the `postgres_url` fixture) both.
"""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Callable
from typing import Any

import pytest
from langgraph.config import get_stream_writer
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt
from typing_extensions import TypedDict

from scholarflow import Context, build_graph
from scholarflow.cli import main as cli
from scholarflow.cli import run as cli_run
from scholarflow.errors import InputError
from scholarflow.storage.checkpoints import open_checkpointer, thread_config
from tests.integration.test_cli import Result
from tests.support import FakeOpenAIServer

Cli = Callable[..., Any]


@pytest.fixture
def sf(fake_llm: FakeOpenAIServer, capsys: pytest.CaptureFixture[str],
       monkeypatch: pytest.MonkeyPatch) -> Cli:
    """`await sf("ask", "hi", stdin=...)`: the command line, in this process."""
    async def call(*argv: str, stdin: str = "") -> Result:
        capsys.readouterr()
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
        code = await cli.run(cli._parser().parse_args(list(argv)))
        got = capsys.readouterr()
        assert "Traceback" not in got.out + got.err, got
        return Result(tuple(argv), code, got.out, got.err)
    return call


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "postgres":
        monkeypatch.setenv("SCHOLARFLOW_DATABASE_URL", request.getfixturevalue("pg_schema_url"))
    return str(request.param)


def one_error(out: Result, code: int, mentions: str = "", *, alone: bool = True) -> str:
    """The one `error:` line, last on stderr (`alone`: the only line there)."""
    assert out.returncode == code, out
    errors = [line for line in out.err_lines if line.startswith("error")]
    assert len(errors) == 1 and out.err_lines[-1] == errors[0], out
    assert mentions in errors[0] and (len(out.err_lines) == 1 or not alone), out
    return errors[0]


# --- sessions list | show | delete ---------------------------------------------------------------


async def test_list_show_delete_read_threads(sf: Cli, backend: str) -> None:
    for argv in (["ask", "first question", "--session", "alpha"], ["ask", "a new one"],
                 ["ask", "second question", "--session", "alpha", "--json"]):
        assert (await sf(*argv, "--no-thinking") if "--json" not in argv
                else await sf(*argv)).returncode == 0

    listed = (await sf("sessions", "list")).json_lines()
    assert [s["session_id"] == "alpha" for s in listed] == [True, False]  # newest first
    alpha, other = listed
    assert set(alpha) == {"session_id", "title", "message_count", "total_token_count",
                          "created_at", "updated_at"}
    assert (alpha["title"], alpha["message_count"], other["message_count"]) == (
        "first question", 4, 2)
    assert alpha["created_at"] < alpha["updated_at"]

    shown = (await sf("sessions", "show", "alpha")).json_lines()
    assert [(m["type"], m["content"]) for m in shown] == [
        ("USER", "first question"), ("ASSISTANT", "ok: first question"),
        ("USER", "second question"), ("ASSISTANT", "ok: second question")]
    assert all(m["compressed"] is False and m["token_count"] > 0 and m["id"] for m in shown)
    assert alpha["total_token_count"] == sum(m["token_count"] for m in shown)

    deleted = await sf("sessions", "delete", "alpha")
    assert (deleted.returncode, json.loads(deleted.stdout)) == (0, {"deleted": "alpha"})
    one_error(await sf("sessions", "show", "alpha"), 2, "no session 'alpha'")
    one_error(await sf("sessions", "delete", "alpha"), 2, "no session 'alpha'")
    assert [s["session_id"] for s in (await sf("sessions", "list")).json_lines()] == [
        other["session_id"]]


async def test_list_reads_one_checkpoint_per_thread(sf: Cli, monkeypatch: pytest.MonkeyPatch
                                                    ) -> None:
    """Hundreds of sessions must list without reading every checkpoint of each."""
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    for session in ("s1", "s2", "s3"):
        for question in ("one", "two"):  # ~20 checkpoints per thread
            asked = await sf("ask", question, "--session", session, "--no-thinking")
            assert asked.returncode == 0
    reads: list[str] = []
    original = AsyncSqliteSaver.aget_tuple

    async def counted(self: AsyncSqliteSaver, config: Any) -> Any:
        reads.append(config["configurable"]["thread_id"])
        return await original(self, config)

    monkeypatch.setattr(AsyncSqliteSaver, "aget_tuple", counted)
    monkeypatch.setattr(AsyncSqliteSaver, "alist", None)  # listing never walks the history
    listed = (await sf("sessions", "list")).json_lines()
    assert [s["session_id"] for s in listed] == ["s3", "s2", "s1"]
    assert sorted(reads) == ["s1", "s2", "s3"]


# --- load or create ------------------------------------------------------------------------------


async def test_an_unknown_session_name_starts_that_session(sf: Cli) -> None:
    new = await sf("ask", "hello", "--session", "my-project", "--no-thinking")
    assert new.returncode == 0 and new.stdout.strip() == "ok: hello", new
    assert new.err_lines[0] == "note: session my-project is new", new
    again = await sf("ask", "more", "--session", "my-project", "--no-thinking")
    notes = [x for x in again.err_lines if x.startswith("note:")]
    assert again.returncode == 0 and not notes, again
    fresh = await sf("ask", "a new session", "--no-thinking")  # a new uuid: no note needed
    assert fresh.returncode == 0 and not [x for x in fresh.err_lines if x.startswith("note:")]
    ids = [s["session_id"] for s in (await sf("sessions", "list")).json_lines()]
    assert len(ids) == 2 and ids[1] == "my-project" and len(ids[0]) == 36  # str(uuid4())
    one_error(await sf("ask", "hi", "--session", " "), 2, "invalid --session")
    one_error(await sf("ask", "hi", "--session", "s" * 201), 2, "at most 200 characters")


# --- a failed run --------------------------------------------------------------------------------


async def test_a_failed_run_exits_1_once_and_keeps_its_question(
    sf: Cli, fake_llm: FakeOpenAIServer
) -> None:
    assert (await sf("ask", "hello", "--session", "s", "--no-thinking")).returncode == 0
    fake_llm.configure(fail_first_n=10, fail_status=401)  # a bad key: not retried
    one_error(await sf("ask", "will fail", "--session", "s", "--no-thinking"), 1, "401")
    failed_json = await sf("ask", "fails too", "--session", "s", "--json")
    one_error(failed_json, 1, "401")
    assert failed_json.json_lines()[-1]["type"] == "error"
    fake_llm.reset()
    resumed = await sf("resume", "s")
    one_error(resumed, 2, "failed")
    assert "nothing to resume" in resumed.stderr and "--session s" in resumed.stderr
    shown = (await sf("sessions", "show", "s")).json_lines()
    assert [(m["type"], m["content"]) for m in shown] == [
        ("USER", "hello"), ("ASSISTANT", "ok: hello"), ("USER", "will fail"),
        ("USER", "fails too")]
    after = await sf("ask", "working again", "--session", "s", "--no-thinking")
    assert after.returncode == 0 and after.err_lines[-1].startswith("session s · "), after


# --- compression ---------------------------------------------------------------------------------


async def test_compression_shows_in_sessions_show(sf: Cli, fake_llm: FakeOpenAIServer) -> None:
    fake_llm.configure(rules=[{"match": "Summarise the conversation below",
                               "reply": "SUMMARY OF EARLIER TURNS"}])
    ctx = Context(max_context_tokens=2_000, reserved_answer_tokens=300,
                  system_tokens_estimate=200)
    async with open_checkpointer() as saver:
        graph = build_graph(checkpointer=saver)
        for i in range(5):  # 328 tokens a round: past 0.8 x 2000 in the fifth
            await graph.ainvoke({"query": f"question {i} " + "words " * 300},
                                thread_config("long"), context=ctx)
    shown = (await sf("sessions", "show", "long")).json_lines()
    kinds = [(m["type"], m["compressed"]) for m in shown]
    folded = [("USER", True), ("ASSISTANT", True)] * 3
    kept = [("USER", False), ("ASSISTANT", False)] * 2
    assert kinds == [*folded, ("COMPRESSION", False), *kept], kinds
    assert shown[6]["content"] == "SUMMARY OF EARLIER TURNS"
    (listed,) = (await sf("sessions", "list")).json_lines()
    assert listed["message_count"] == 11
    assert listed["total_token_count"] == sum(m["token_count"] for m in shown
                                              if not m["compressed"])


# --- exit codes and the plan review, on a small graph of the same shape -------------------------


class _State(TypedDict, total=False):
    query: str
    question: str
    answer: str


def _review_graph(fail: BaseException | None = None) -> Callable[..., Any]:
    """A stand-in for build_graph: plan_generation's interrupt, then the answer is what the
    review said (or `fail` is raised after the error event, as session_save does)."""
    def plan(state: _State) -> _State:
        if fail is not None:
            get_stream_writer()({"type": "node_error", "node": "plan", "error": str(fail)})
            get_stream_writer()({"type": "error", "message": str(fail), "session_id": "x"})
            raise fail
        said = interrupt({"type": "review_plan", "question": state["question"],
                          "sub_questions": ["what data?", "which \x1b[31mmodel?"],
                          "plan": [{"step": 1, "queries": ["what data?"], "doc_id": None},
                                   {"step": 2, "queries": ["which model?"], "doc_id": "p1"}]})
        return {"answer": json.dumps(said)}

    def save(state: _State) -> _State:
        get_stream_writer()({"type": "final_answer", "answer": state["answer"],
                             "session_id": "x"})
        return {}

    def build(checkpointer: Any = None, **_: Any) -> Any:
        graph = StateGraph(_State)
        graph.add_node("request_init", lambda state: {"question": state["query"]})
        graph.add_node("plan_generation", plan)
        graph.add_node("session_save", save)
        graph.add_edge(START, "request_init")
        graph.add_edge("request_init", "plan_generation")
        graph.add_edge("plan_generation", "session_save")
        graph.add_edge("session_save", END)
        return graph.compile(checkpointer=checkpointer)
    return build


def _answered(out: Result) -> Any:
    final = out.json_lines()[-1]
    assert final["type"] == "final_answer", out
    return json.loads(final["answer"])


async def test_an_input_error_inside_the_graph_exits_2_once(
    sf: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cli_run, "build_graph", _review_graph(InputError("bad plan input")))
    one_error(await sf("ask", "q", "--no-thinking"), 2, "bad plan input")
    one_error(await sf("ask", "q", "--json"), 2, "bad plan input")


@pytest.mark.parametrize(("typed", "expected"), [
    ("\n", {"action": "approve"}),
    ("focus on the datasets\n", {"action": "feedback", "feedback": "focus on the datasets"}),
    ("e\nwhich datasets?\n  which baselines?  \n\nignored\n",
     {"action": "edit", "sub_questions": ["which datasets?", "which baselines?"]}),
], ids=["approve", "feedback", "edit"])
async def test_review_plan_reads_the_answer_and_resumes(
    sf: Cli, monkeypatch: pytest.MonkeyPatch, typed: str, expected: dict[str, Any]
) -> None:
    monkeypatch.setattr(cli_run, "build_graph", _review_graph())
    out = await sf("ask", "compare them", "--review-plan", "--json", stdin=typed)
    assert out.returncode == 0 and _answered(out) == expected, out
    assert "plan for review: compare them" in out.stderr
    assert "  2. which \\x1b[31mmodel?" in out.stderr  # shown, not obeyed by the terminal
    assert "  2. search: which model? (document p1)" in out.stderr


async def test_review_plan_without_an_answer_waits_for_resume(
    sf: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cli_run, "build_graph", _review_graph())
    stopped = await sf("ask", "compare them", "--session", "r", "--review-plan", "--json")
    line = one_error(stopped, 2, "no answer to the plan review", alone=False)
    assert "`scholarflow resume r`" in line and stopped.returncode == 2
    one_error(await sf("resume", "r", "--json", stdin="e\n\n"), 2, "no sub-questions given",
              alone=False)
    resumed = await sf("resume", "r", "--json", stdin="more on the baselines\n")
    assert resumed.returncode == 0, resumed
    assert _answered(resumed) == {"action": "feedback", "feedback": "more on the baselines"}
    assert resumed.stderr.startswith("note: resuming 'compare them', waiting for its plan "
                                     "to be reviewed"), resumed
    one_error(await sf("resume", "r"), 2, "no unfinished run")


async def test_a_question_replaces_a_run_waiting_for_review(
    sf: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cli_run, "build_graph", _review_graph())
    assert (await sf("ask", "first", "--session", "w", "--review-plan", "--json")).returncode == 2
    out = await sf("ask", "second", "--session", "w", "--json", stdin="\n")
    assert out.returncode == 0 and _answered(out) == {"action": "approve"}, out
    assert ("had an unfinished run ('first', waiting for its plan to be reviewed); this "
            "question replaces it") in out.stderr


async def test_review_plan_on_the_real_graph(sf: Cli) -> None:
    from tests.conftest import EXAMPLES

    files = [a for name in ("en_sparse_attention.md", "en_retrieval_qa.md")
             for a in ("--file", str(EXAMPLES / name))]
    out = await sf("ask", "Which learning rate does each paper use?", *files, "--mode",
                   "LITERATURE_QA", "--session", "hitl", "--review-plan", "--json",
                   stdin="e\nWhich learning rate was used?\n\n")
    assert out.returncode == 0, out
    events = out.json_lines()
    reviewed = [e for e in events if e["type"] == "node_complete"
                and e.get("node") == "plan_review"]
    assert [(e["action"], e["steps"]) for e in reviewed] == [("edit", 1)], events
    assert events[-1]["type"] == "final_answer" and events[-1]["strategy"] == "chunk_recall"
    assert "plan for review: Which learning rate does each paper use?" in out.stderr
    kinds = [m["type"] for m in (await sf("sessions", "show", "hitl")).json_lines()]
    assert kinds == ["USER", "ASSISTANT"]


async def test_a_review_answer_the_graph_would_refuse_is_asked_again(
    sf: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cli_run, "build_graph", _review_graph())
    out = await sf("ask", "compare them", "--session", "q", "--review-plan", "--json",
                   stdin="e\n???\n\n")
    line = one_error(out, 2, "sub_questions[0] has no words to search for", alone=False)
    assert "`scholarflow resume q` asks again" in line and '"action"' not in line
    resumed = await sf("resume", "q", "--json", stdin="\n")
    assert resumed.returncode == 0 and _answered(resumed) == {"action": "approve"}, resumed
