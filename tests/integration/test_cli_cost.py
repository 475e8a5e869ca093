"""`scholarflow ask` over many documents: a summary past the cost limits prints its estimate
and waits (exit 2) unless --approve-cost says to run it; below the limits it runs.

The command line runs in-process (`cli.run`, output captured), against the real graph
and the scripted server.
"""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from scholarflow.cli import main as cli
from scholarflow.llm import rates
from tests.conftest import SUMMARY_RULE
from tests.integration.test_cli import Result
from tests.support import FakeOpenAIServer

Cli = Callable[..., Any]
MERGE_RULE = "summarise a set of academic documents"
QUESTION = "Summarize these papers"
SUMMARY = "This paper reports one finding that holds for every sample it measured."


@pytest.fixture
def sf(fake_llm: FakeOpenAIServer, capsys: pytest.CaptureFixture[str],
       monkeypatch: pytest.MonkeyPatch) -> Cli:
    """`await sf("ask", "hi")`: the command line, in this process."""
    fake_llm.configure(rules=[{"match": SUMMARY_RULE, "reply": SUMMARY},
                              {"match": MERGE_RULE, "reply": "The papers agree."}])
    rates.forget()  # as a new process: nothing measured

    async def call(*argv: str) -> Result:
        capsys.readouterr()
        monkeypatch.setattr(sys, "stdin", io.StringIO(""))
        code = await cli.run(cli._parser().parse_args(list(argv)))
        got = capsys.readouterr()
        assert "Traceback" not in got.out + got.err, got
        return Result(tuple(argv), code, got.out, got.err)
    return call


def _files(folder: Path, n: int, tag: str = "p") -> list[str]:
    """`--file` arguments for n small papers: more than 20 pass the default limit."""
    folder.mkdir(parents=True, exist_ok=True)
    args = []
    for i in range(n):
        path = folder / f"{tag}{i:02d}.md"
        path.write_text(f"# Paper {tag} {i}\n\nFinding {tag}-{i} holds for every sample.\n",
                        encoding="utf-8")
        args += ["--file", str(path)]
    return args


def _summary_calls(server: FakeOpenAIServer) -> int:
    return sum(SUMMARY_RULE in str(r["messages"]) for r in server.stats().requests)


def _cost_thoughts(out: Result) -> list[str]:
    return [e["content"] for e in out.json_lines()
            if e["type"] == "thought_chunk" and e.get("node") == "cost_check"]


async def test_past_the_limit_ask_prints_the_estimate_and_resume_approve_cost_runs_it(
    sf: Cli, fake_llm: FakeOpenAIServer, tmp_path: Path
) -> None:
    """Expected: exit 2 with one error line (the estimate, how to approve), no summary sent,
    the question kept; `resume --approve-cost` then answers with 21 summaries."""
    files = _files(tmp_path / "papers", 21)
    out = await sf("ask", QUESTION, *files, "--session", "lib", "--json")
    assert out.returncode == 2, out
    errors = [line for line in out.err_lines if line.startswith("error")]
    assert errors == [out.err_lines[-1]], out
    assert errors[0].startswith("error: this summary would send 21 documents: 21 summary calls "
                                "and 1 to merge them, ~")
    assert "time unknown" in errors[0]
    assert ("(21 documents to summarise over approval_documents=20); to run it: "
            "`scholarflow resume lib --approve-cost` (or ask again with --approve-cost)"
            ) in errors[0]
    assert _summary_calls(fake_llm) == 0
    assert not [e for e in out.json_lines() if e["type"] == "final_answer"]
    shown = (await sf("sessions", "show", "lib")).json_lines()
    assert [(m["type"], m["content"]) for m in shown] == [("USER", QUESTION)]

    again = await sf("resume", "lib", "--json")  # still not approved: the same answer
    assert again.returncode == 2 and again.err_lines[-1] == errors[0], again
    assert _summary_calls(fake_llm) == 0

    approved = await sf("resume", "lib", "--approve-cost", "--json")
    assert approved.returncode == 0, approved
    final = approved.json_lines()[-1]
    assert final["type"] == "final_answer" and final["answer"] == "The papers agree."
    assert _summary_calls(fake_llm) == 21
    shown = (await sf("sessions", "show", "lib")).json_lines()
    assert [m["type"] for m in shown] == ["USER", "ASSISTANT"]


async def test_ask_with_approve_cost_runs_at_once_and_says_the_cost(
    sf: Cli, fake_llm: FakeOpenAIServer, tmp_path: Path
) -> None:
    """Expected: exit 0, no pause; the estimate is a thinking line."""
    out = await sf("ask", QUESTION, *_files(tmp_path / "papers", 21), "--approve-cost", "--json")
    assert out.returncode == 0, out
    assert out.json_lines()[-1]["answer"] == "The papers agree."
    (line,) = _cost_thoughts(out)
    assert line.startswith("Cost: 21 documents: 21 summary calls and 1 to merge them")
    assert _summary_calls(fake_llm) == 21


async def test_below_the_limit_it_runs_and_a_later_estimate_has_a_saved_time(
    sf: Cli, fake_llm: FakeOpenAIServer, tmp_path: Path
) -> None:
    """Expected: 3 papers run without the flag (exit 0, estimate in the thinking stream,
    time unknown); the speed measured then is saved in the data folder, so the next
    command's estimate has a time from it."""
    # Paced replies, as a model writes them: a reply sent at once has no writing speed.
    fake_llm.configure(tokens_per_second=400)
    out = await sf("ask", QUESTION, *_files(tmp_path / "papers", 3), "--json")
    assert out.returncode == 0, out
    (line,) = _cost_thoughts(out)
    assert line.startswith("Cost: 3 documents: 3 summary calls") and "time unknown" in line
    saved = json.loads((tmp_path / "home" / rates.RATES_FILENAME).read_text(encoding="utf-8"))
    assert [entry["model"] for entry in saved.values()] == ["gpt-4o-mini"]

    rates.forget()  # the next command is a new process
    out = await sf("ask", QUESTION, *_files(tmp_path / "more", 3, tag="q"), "--json")
    (line,) = _cost_thoughts(out)
    assert "with the calls one after another (it read ~" in line and "saved on" in line, line
