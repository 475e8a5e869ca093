"""Hostile faults: a failing model (500, 404, 429, timeouts, refused connections), bad
endpoint URLs, a data folder that is a file, and damaged databases. Each is one line that
says what to do, with the right exit code, nothing retried that cannot succeed, and what
was stored before left as it was (a damaged file is never deleted nor overwritten)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from scholarflow import Context
from scholarflow.errors import RateLimitedLLMError, RetryableLLMError
from tests.conftest import paper, run_graph
from tests.integration.hostile.harness import (
    EXIT_BAD_REQUEST,
    EXIT_FAILED,
    PAPER,
    SECRET,
    SEED_KB,
    Seeded,
    assert_clean_error,
    assert_intact,
    assert_knowledge_bases_intact,
    assert_no_secret,
    base_env,
    llm_env,
    run,
)
from tests.support import FakeOpenAIServer

QUESTION = "What learning rate did they use?"
GARBAGE = bytes(range(256)) * 32  # no SQLite header: "file is not a database"


def _ask(seeded: Seeded, llm_server: FakeOpenAIServer, **extra: str) -> Any:
    return run(["ask", QUESTION, "--file", str(PAPER), "--no-thinking"],
               llm_env(llm_server.base_url, seeded.home, **extra))


# --- the model fails -----------------------------------------------------------------------

def test_a_failing_model_500_is_retried_then_says_to_try_later(
    seeded: Seeded, llm_server: FakeOpenAIServer,
) -> None:
    llm_server.configure(fail_first_n=1000, fail_status=500)
    result = _ask(seeded, llm_server)
    assert_clean_error(result, exit_code=EXIT_FAILED,
                       names=["failed with 500 after 4 attempts", "try again later"])
    assert llm_server.stats().chat_calls == 4
    assert_no_secret(seeded.home, result.stdout, result.stderr)
    assert_intact(seeded)


def test_an_unknown_model_404_names_the_setting_and_is_not_retried(
    seeded: Seeded, llm_server: FakeOpenAIServer,
) -> None:
    llm_server.configure(rules=[{"match": ".", "status": 404}])
    result = _ask(seeded, llm_server)
    assert_clean_error(result, exit_code=EXIT_FAILED, names=["404", "check SCHOLARFLOW_MODEL"])
    assert llm_server.stats().chat_calls == 1
    assert_intact(seeded)


def test_a_model_that_does_not_answer_in_time_names_the_timeout_setting(
    seeded: Seeded, llm_server: FakeOpenAIServer,
) -> None:
    llm_server.configure(rules=[{"match": ".", "reply": "late", "latency": 5}])
    result = _ask(seeded, llm_server, SCHOLARFLOW_LLM_TIMEOUT="0.5")
    assert_clean_error(result, exit_code=EXIT_FAILED,
                       names=["did not answer within 0.5 s", "raise SCHOLARFLOW_LLM_TIMEOUT"])
    assert llm_server.stats().chat_calls == 4  # a timeout is worth retrying, 4 times at most
    assert_intact(seeded)


def test_a_refused_connection_names_the_url_variable(
    seeded: Seeded, llm_server: FakeOpenAIServer,
) -> None:
    result = run(["ask", "hi"], llm_env(llm_server.base_url, seeded.home,
                                        OPENAI_BASE_URL="http://127.0.0.1:1/v1"))
    assert_clean_error(result, exit_code=EXIT_FAILED,
                       names=["cannot reach the model", "check OPENAI_BASE_URL",
                              "server is running"])
    assert_intact(seeded)


async def test_rate_limiting_after_every_attempt_says_to_lower_the_limit(
    fake_llm: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The real policy's 8 attempts back off for ~35 s: same counts, no waiting.
    from langgraph.types import RetryPolicy

    import scholarflow.graph.main as main

    fast = tuple(RetryPolicy(initial_interval=0.01, max_interval=0.01, jitter=False,
                             max_attempts=n, retry_on=kind)
                 for n, kind in ((8, RateLimitedLLMError), (4, RetryableLLMError)))
    monkeypatch.setattr(main, "LLM_RETRY", fast)
    fake_llm.configure(fail_first_n=1000, fail_status=429)
    out, events = await run_graph({"query": "hello there"})
    assert fake_llm.stats().chat_calls == 8
    assert "kept rate limiting (429) after 8 attempts" in out["error"]
    assert "lower SCHOLARFLOW_MAX_CONCURRENT_LLM_CALLS or wait and retry" in out["error"]
    assert events[-1]["type"] == "error" and "\n" not in out["error"]


async def test_an_in_process_timeout_names_the_context_field(fake_llm: FakeOpenAIServer) -> None:
    fake_llm.configure(rules=[{"match": ".", "reply": "late", "latency": 3}])
    out, _events = await run_graph({"query": "Summarize this",
                                    "content": paper("en_sparse_attention.md")},
                                   Context(llm_timeout_seconds=0.3))
    assert "did not answer within 0.3 s" in out["error"]
    assert "llm_timeout_seconds" in out["error"]


# --- bad endpoint URLs: refused once, before any call --------------------------------------

BAD_URLS = ["not a url", "http://127.0.0.1:99999/v1", "ftp://x",
            f"http://u:{SECRET}@127.0.0.1:99999/v1"]


@pytest.mark.parametrize("url", BAD_URLS, ids=["not-a-url", "bad-port", "ftp", "password"])
def test_a_bad_openai_base_url_is_a_setting_error_never_retried(
    url: str, seeded: Seeded, llm_server: FakeOpenAIServer,
) -> None:
    result = _ask(seeded, llm_server, OPENAI_BASE_URL=url)
    assert_clean_error(result, exit_code=EXIT_BAD_REQUEST,
                       names=["OPENAI_BASE_URL=", "e.g. http://localhost:8000/v1"])
    assert llm_server.stats().chat_calls == 0 and llm_server.stats().embedding_calls == 0
    assert_no_secret(seeded.home, result.stdout, result.stderr)
    assert_intact(seeded)


@pytest.mark.parametrize(("url", "command"), [
    ("not a url", ["ask", "summarize these", "--file", str(PAPER)]),
    ("http://127.0.0.1:99999/v1", ["ingest", str(PAPER), "--kb", "more"]),
    (f"http://e:{SECRET}@127.0.0.1:99999/v1", ["search", "learning rate", "--kb", SEED_KB]),
], ids=["ask", "ingest", "search"])
def test_a_bad_embedding_url_is_a_setting_error_before_any_call(
    url: str, command: list[str], seeded: Seeded, llm_server: FakeOpenAIServer,
) -> None:
    result = run(command, llm_env(llm_server.base_url, seeded.home,
                                  SCHOLARFLOW_EMBEDDING_BASE_URL=url))
    assert_clean_error(result, exit_code=EXIT_BAD_REQUEST,
                       names=["SCHOLARFLOW_EMBEDDING_BASE_URL="])
    assert llm_server.stats().chat_calls == 0 and llm_server.stats().embedding_calls == 0
    assert_no_secret(seeded.home, result.stdout, result.stderr)
    assert_intact(seeded)


# --- the data folder and its files ---------------------------------------------------------

@pytest.mark.parametrize(("inside", "command"), [
    (False, ["ask", "hi"]), (True, ["sessions", "list"]), (False, ["ingest", str(PAPER)]),
], ids=["home-is-a-file", "home-inside-a-file", "ingest"])
def test_a_home_that_is_a_file_names_scholarflow_home(
    inside: bool, command: list[str], seeded: Seeded, llm_server: FakeOpenAIServer,
    tmp_path: Path,
) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_bytes(b"user data")
    home = blocker / "home" if inside else blocker
    env = {**llm_env(llm_server.base_url, seeded.home), "SCHOLARFLOW_HOME": str(home)}
    result = run(command, env)
    assert_clean_error(result, exit_code=EXIT_BAD_REQUEST,
                       names=[f"SCHOLARFLOW_HOME={home}", "point SCHOLARFLOW_HOME at a folder"])
    assert blocker.read_bytes() == b"user data"
    assert_intact(seeded)


def test_a_damaged_summary_cache_is_named_and_kept(
    seeded: Seeded, llm_server: FakeOpenAIServer, tmp_path: Path,
) -> None:
    db = seeded.home / "scholarflow.db"  # the summary cache (the sessions are checkpoints)
    for extra in ("-wal", "-shm"):  # the pages a WAL may still hold would repair it
        (seeded.home / f"scholarflow.db{extra}").unlink(missing_ok=True)
    db.write_bytes(GARBAGE)
    second = tmp_path / "second.md"
    second.write_text(paper("en_retrieval_qa.md"), encoding="utf-8")
    result = run(["ask", "Summarize these papers", "--file", str(PAPER), "--file", str(second),
                  "--mode", "LITERATURE_SUMMARY", "--no-thinking"],
                 llm_env(llm_server.base_url, seeded.home))
    assert_clean_error(result, exit_code=EXIT_BAD_REQUEST, names=[str(db), "move it aside"])
    assert db.read_bytes() == GARBAGE  # never deleted nor overwritten
    assert llm_server.stats().chat_calls == 0
    assert_intact(seeded)


@pytest.mark.parametrize("command", [["ask", "hi"], ["sessions", "list"], ["resume", "s"]],
                         ids=["ask", "list", "resume"])
def test_damaged_checkpoints_are_named_and_kept(
    command: list[str], seeded: Seeded, llm_server: FakeOpenAIServer,
) -> None:
    checkpoints = seeded.home / "checkpoints.sqlite"  # the sessions
    for extra in ("-wal", "-shm"):
        (seeded.home / f"checkpoints.sqlite{extra}").unlink(missing_ok=True)
    checkpoints.write_bytes(GARBAGE)
    result = run(command, llm_env(llm_server.base_url, seeded.home))
    assert_clean_error(result, exit_code=EXIT_BAD_REQUEST,
                       names=[str(checkpoints), "move it aside"])
    assert checkpoints.read_bytes() == GARBAGE
    assert llm_server.stats().chat_calls == 0
    assert_knowledge_bases_intact(seeded, sessions=False)  # they are in the damaged file


@pytest.mark.parametrize("command", [
    ["search", "learning rate", "--kb", "broken"],
    ["ask", QUESTION, "--kb", "broken", "--no-thinking"],
    ["ingest", str(PAPER), "--kb", "broken"],
], ids=["search", "ask", "ingest"])
def test_a_damaged_knowledge_base_is_named_and_the_others_work(
    command: list[str], seeded: Seeded, llm_server: FakeOpenAIServer,
) -> None:
    index = seeded.home / "kb" / "broken" / "index.sqlite"
    index.parent.mkdir()
    index.write_bytes(GARBAGE)
    env = llm_env(llm_server.base_url, seeded.home)
    result = run(command, env)
    assert_clean_error(result, exit_code=EXIT_BAD_REQUEST,
                       names=[str(index), "move it aside", "ingest"])
    assert index.read_bytes() == GARBAGE
    assert_knowledge_bases_intact(seeded)
    assert run(["search", "learning rate", "--kb", SEED_KB], env).returncode == 0


def test_no_llm_at_all_is_one_line_naming_the_key(tmp_path: Path) -> None:
    result = run(["ask", "hi"], base_env(tmp_path / "home"))
    assert_clean_error(result, exit_code=EXIT_BAD_REQUEST, names=["OPENAI_API_KEY"])
