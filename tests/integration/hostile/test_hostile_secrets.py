"""Hostile secrets: passwords in every service URL and the API key, against failing and
working endpoints. Whatever fails, no secret is printed, logged or stored: every byte under
SCHOLARFLOW_HOME (sessions, checkpoints, caches, knowledge bases) is scanned."""

from __future__ import annotations

import pytest

from tests.integration.hostile.harness import (
    API_KEY,
    EXIT_BAD_REQUEST,
    EXIT_FAILED,
    PAPER,
    SECRET,
    SEED_KB,
    Seeded,
    assert_clean_error,
    assert_intact,
    assert_no_secret,
    llm_env,
    run,
)
from tests.support import FakeOpenAIServer

DEAD_LLM = f"http://user:{SECRET}@127.0.0.1:1/v1"  # nothing listens on port 1
QUESTION = "Which learning rate does each paper use?"
# Two documents (the knowledge base's and a given one): answered from recalled passages.
RECALL_ASK = ["ask", QUESTION, "--kb", SEED_KB, "--file", str(PAPER), "--no-thinking"]


def _with_password(base_url: str) -> str:
    return base_url.replace("http://", f"http://user:{SECRET}@", 1)


@pytest.mark.parametrize("args", [
    ["ask", "hi"],
    ["ask", "summarize", "--file", str(PAPER)],
    ["ask", "summarize", "--file", str(PAPER), "--json"],
], ids=["chat", "summary", "summary-json"])
def test_a_password_in_an_unreachable_openai_base_url_is_never_stored(
    args: list[str], seeded: Seeded, llm_server: FakeOpenAIServer,
) -> None:
    result = run(args, llm_env(llm_server.base_url, seeded.home, OPENAI_BASE_URL=DEAD_LLM))
    line = assert_clean_error(result, exit_code=EXIT_FAILED,
                              names=["OPENAI_BASE_URL", "server is running", "user:***@"])
    assert "after 4 attempts" in line  # retried by the node's policy, then said so
    assert_no_secret(seeded.home, result.stdout, result.stderr)
    assert_intact(seeded)


def test_debug_logs_and_tracebacks_hold_no_password(
    seeded: Seeded, llm_server: FakeOpenAIServer,
) -> None:
    env = llm_env(llm_server.base_url, seeded.home, OPENAI_BASE_URL=DEAD_LLM,
                  SCHOLARFLOW_DEBUG="1")
    result = run(["ask", "hi"], env)
    assert result.returncode == EXIT_FAILED, result.describe()
    assert "Traceback" in result.stderr  # debug shows them, scrubbed
    assert_no_secret(seeded.home, result.stdout, result.stderr)
    assert_intact(seeded)


def test_a_password_in_a_working_openai_base_url_is_never_stored(
    seeded: Seeded, llm_server: FakeOpenAIServer,
) -> None:
    env = llm_env(llm_server.base_url, seeded.home,
                  OPENAI_BASE_URL=_with_password(llm_server.base_url))
    result = run(["ask", "summarize", "--file", str(PAPER), "--json"], env)
    assert result.returncode == 0, result.describe()
    assert llm_server.stats().chat_calls >= 1
    assert_no_secret(seeded.home, result.stdout, result.stderr)
    assert_intact(seeded)


@pytest.mark.parametrize("args", [
    ["ingest", str(PAPER), "--kb", "more"],
    ["search", "learning rate", "--kb", SEED_KB],
    RECALL_ASK,
], ids=["ingest", "search", "ask-recall"])
def test_a_password_in_an_unreachable_embedding_url_is_never_stored(
    args: list[str], seeded: Seeded, llm_server: FakeOpenAIServer,
) -> None:
    env = llm_env(llm_server.base_url, seeded.home,
                  SCHOLARFLOW_EMBEDDING_BASE_URL=f"http://emb:{SECRET}@127.0.0.1:1/v1")
    result = run(args, env)
    line = assert_clean_error(result, exit_code=EXIT_FAILED,
                              names=["SCHOLARFLOW_EMBEDDING_BASE_URL", "server is running"])
    assert "emb:***@" in line
    assert_no_secret(seeded.home, result.stdout, result.stderr)
    assert_intact(seeded)


@pytest.mark.parametrize(("variable", "url", "args", "exit_code"), [
    # A real PostgreSQL with trust auth: the user and database do not exist.
    ("SCHOLARFLOW_DATABASE_URL", f"postgresql://nouser:{SECRET}@127.0.0.1:5432/nodb",
     ["ask", "hi"], EXIT_BAD_REQUEST),
    ("SCHOLARFLOW_DATABASE_URL", f"postgresql://nouser:{SECRET}@127.0.0.1:5432/nodb",
     ["sessions", "list"], EXIT_BAD_REQUEST),
    ("SCHOLARFLOW_REDIS_URL", f"redis://:{SECRET}@127.0.0.1:1/0", ["ask", "hi"],
     EXIT_BAD_REQUEST),
    ("SCHOLARFLOW_ES_URL", f"http://elastic:{SECRET}@127.0.0.1:1", ["search", "x", "--kb", "lab"],
     EXIT_BAD_REQUEST),
], ids=["postgres-ask", "postgres-sessions", "redis", "elasticsearch"])
def test_a_password_in_a_service_url_is_never_shown_nor_stored(
    variable: str, url: str, args: list[str], exit_code: int, seeded: Seeded,
    llm_server: FakeOpenAIServer,
) -> None:
    result = run(args, llm_env(llm_server.base_url, seeded.home, **{variable: url}))
    assert_clean_error(result, exit_code=exit_code, names=[variable])
    assert_no_secret(seeded.home, result.stdout, result.stderr)
    assert_intact(seeded)


def test_a_password_in_the_recall_api_url_is_never_shown_nor_stored(
    seeded: Seeded, llm_server: FakeOpenAIServer,
) -> None:
    env = llm_env(llm_server.base_url, seeded.home)
    papers = [str(PAPER), str(PAPER.with_name("en_retrieval_qa.md"))]
    assert run(["ingest", *papers, "--kb", "two"], env).returncode == 0
    url = f"http://u:{SECRET}@127.0.0.1:1/retrieval"
    result = run(["ask", QUESTION, "--kb", "two", "--no-thinking"],
                 {**env, "SCHOLARFLOW_RECALL_API_URL": url})
    assert_clean_error(result, exit_code=EXIT_FAILED,
                       names=["recall failed", "SCHOLARFLOW_RECALL_API_URL"])
    assert_no_secret(seeded.home, result.stdout, result.stderr)
    assert_intact(seeded)


def test_a_rejected_api_key_names_the_variable_and_is_never_stored(
    seeded: Seeded, llm_server: FakeOpenAIServer,
) -> None:
    llm_server.configure(rules=[{"match": ".", "status": 401}])
    result = run(["ask", "hi"], llm_env(llm_server.base_url, seeded.home))
    assert_clean_error(result, exit_code=EXIT_FAILED, names=["OPENAI_API_KEY", "401"])
    assert llm_server.stats().chat_calls == 1  # a bad key is not retried
    assert_no_secret(seeded.home, result.stdout, result.stderr, secrets=(API_KEY, SECRET))
    assert_intact(seeded)
