"""Elasticsearch and recall-service URLs: a bad one is one clear line naming its variable,
and no piece of a password in one reaches an error line, the run's error, its events or
what it saves, whichever way the URL is malformed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, cast

import httpx
import pytest
from elastic_transport import TransportError

from scholarflow.cli import kb as cli_kb
from scholarflow.cli import main as cli
from scholarflow.errors import ConfigurationError, RetryableLLMError
from scholarflow.ingest.documents import document_from_text
from scholarflow.ingest.pipeline import add_document
from scholarflow.nodes.errors import user_message
from scholarflow.retrieval.index.elastic_client import connect, es_errors
from scholarflow.retrieval.kb import RecallParams
from scholarflow.retrieval.kb_registry import open_knowledge_base
from scholarflow.retrieval.recall_api import HttpRecallRetriever, RecallApiError
from scholarflow.storage.services import SECRET_URL_ENVS, check_http_url
from tests.conftest import EXAMPLES, paper, run_graph
from tests.integration.test_cli import Result, base_env, run, run_many
from tests.integration.test_cli_kb import kb_env
from tests.support import FakeOpenAIServer

ES = "SCHOLARFLOW_ES_URL"
RECALL = "SCHOLARFLOW_RECALL_API_URL"
# (URL, its password's distinctive pieces); nothing listens on port 1.
ES_URLS = [
    ("http://elastic:Es7xSecret@127.0.0.1:1", ["Es7xSecret"]),
    ("http://elastic:s3cr#etEs9@127.0.0.1:1", ["s3cr", "etEs9"]),  # unencoded #
    ("http://elastic:Es4x/Pw8yQ@127.0.0.1:1", ["Es4x", "Pw8yQ"]),  # unencoded /
    ("http://elastic:Es5Secret@127.0.0.1:notaport", ["Es5Secret"]),
]
RECALL_URLS = [
    ("http://u:Rc7xSecret@127.0.0.1:1/retrieval", ["Rc7xSecret"]),
    ("http://u:s3cr#etRc9@127.0.0.1:1/retrieval", ["s3cr", "etRc9"]),
    ("http://u:Rc4x/Pw8yQ@127.0.0.1:1/retrieval", ["Rc4x", "Pw8yQ"]),
]
# How each fails: unreachable at the first recall step, or malformed (an unencoded # or /
# in the password) as a setting, before any LLM call.
RECALL_ERRORS = ["recall failed: ", f"{RECALL} must be", f"{RECALL} must be"]


def _leaks(text: str, pieces: list[str]) -> list[str]:
    return [p for p in pieces if p in text]


def _one_clean_line(result: Result, variable: str, pieces: list[str]) -> None:
    assert result.returncode != 0, result.describe()
    assert len(result.err_lines) == 1, result.describe()
    line = result.err_lines[0]
    assert line.startswith("error: ") and variable in line, result.describe()
    assert "unexpected" not in line and "internal error" not in line, result.describe()
    assert not _leaks(result.stdout + result.stderr, pieces), result.describe()


def test_search_with_a_bad_es_url_is_one_line_without_the_password(tmp_path: Path) -> None:
    env = base_env(tmp_path / "home")
    results = run_many([(["search", "hello", "--kb", "x"], {**env, ES: url})
                        for url, _pieces in ES_URLS])
    for (_url, pieces), result in zip(ES_URLS, results, strict=True):
        _one_clean_line(result, ES, pieces)


def test_ask_with_a_bad_recall_url_saves_and_says_no_password(
    llm_server: FakeOpenAIServer, tmp_path: Path,
) -> None:
    llm_server.reset()
    home = tmp_path / "home"
    env = kb_env(llm_server, home)
    papers = [str(EXAMPLES / "en_sparse_attention.md"), str(EXAMPLES / "en_retrieval_qa.md")]
    ingested = run(["ingest", *papers, "--kb", "x"], env)  # two documents: chunk recall
    assert ingested.returncode == 0, ingested.describe()
    homes = []
    for i, _case in enumerate(RECALL_URLS):
        homes.append(tmp_path / f"home{i}")
        shutil.copytree(home, homes[-1])
    results = run_many([(["ask", "what learning rate?", "--kb", "x", "--no-thinking"],
                         {**env, "SCHOLARFLOW_HOME": str(case_home), RECALL: url})
                        for (url, _pieces), case_home in zip(RECALL_URLS, homes, strict=True)])
    for (_url, pieces), expected, case_home, result in zip(RECALL_URLS, RECALL_ERRORS, homes,
                                                           results, strict=True):
        _one_clean_line(result, RECALL, pieces)
        assert result.err_lines[0].startswith(f"error: {expected}"), result.describe()
        for saved in (f for f in case_home.rglob("*") if f.is_file()):  # checkpoints, sessions
            data = saved.read_bytes()
            assert not [p for p in pieces if p.encode() in data], saved


@pytest.mark.parametrize(("url", "pieces", "expected"),
                         [(*case, error) for case, error in zip(RECALL_URLS, RECALL_ERRORS,
                                                                 strict=True)])
async def test_the_runs_error_and_events_hold_no_password(
    url: str, pieces: list[str], expected: str, fake_llm: FakeOpenAIServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    kb = await open_knowledge_base("lab", create=True)  # the documents' titles are local
    for doc_id, name in (("anchor", "en_sparse_attention.md"), ("rag", "en_retrieval_qa.md")):
        await add_document(kb, document_from_text(paper(name), doc_id=doc_id))
    monkeypatch.setenv(RECALL, url)
    out, events = await run_graph({"query": "Which learning rate does each paper use?",
                                   "kb": "lab", "mode_type": "LITERATURE_QA"})
    assert out["error"] is not None and out["error"].startswith(expected), out["error"]
    if expected != "recall failed: ":  # a malformed URL: found before any chat call
        assert fake_llm.stats().chat_calls == 0
    assert RECALL in out["error"] and "internal error" not in out["error"], out["error"]
    assert not _leaks(out["error"] + json.dumps(events, default=str), pieces)
    assert events[-1]["type"] == "error"


@pytest.mark.parametrize("url", [
    "http://elastic:Es5Secret@127.0.0.1:notaport", "http://u:s3cr#etEs9@127.0.0.1:1",
    "http://127.0.0.1:99999", "ftp://127.0.0.1:21", "127.0.0.1:9200", "http://:9200",
])
def test_a_malformed_url_is_a_configuration_error_naming_the_variable(url: str) -> None:
    for make in (lambda: connect(url), lambda: HttpRecallRetriever(url, ["i"])):
        with pytest.raises(ConfigurationError) as info:
            make()
        message = str(info.value)
        assert (ES in message) != (RECALL in message) and "must be an http(s) URL" in message
        assert not _leaks(message, ["Es5Secret", "s3cr", "etEs9"]), message
    for good in ("http://127.0.0.1:9200", "https://u:p%23w@es.example/prefix", "HTTP://h"):
        assert check_http_url(good, ES, "http://127.0.0.1:9200") == good


async def test_es_transport_errors_quoting_the_url_are_scrubbed() -> None:
    url = "http://elastic:Es7xSecret@127.0.0.1:9200"
    with pytest.raises(Exception) as info:
        async with es_errors(url, "search"):
            raise TransportError(f"bad node {url}")
    assert "Es7xSecret" not in str(info.value) and "could not search" in str(info.value)


async def test_a_recall_service_echoing_the_url_is_scrubbed() -> None:
    url = "http://u:Rc7xSecret@127.0.0.1:1/retrieval"
    transport = httpx.MockTransport(lambda _req: httpx.Response(500, text=f"no route {url}"))
    async with httpx.AsyncClient(transport=transport) as client:
        retriever = HttpRecallRetriever(url, ["i"], client=client)
        with pytest.raises(RecallApiError) as info:
            await retriever.search("q", doc_ids=None, params=RecallParams())
    assert "Rc7xSecret" not in str(info.value) and "HTTP 500" in str(info.value)


@pytest.mark.parametrize("variable", SECRET_URL_ENVS)
def test_any_service_url_is_scrubbed_from_cli_lines_and_node_errors(
    variable: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    url = "http://user:Zz9Secret@127.0.0.1:1/v1"
    monkeypatch.setenv(variable, url)

    async def failing(_args: Any) -> int:
        raise RuntimeError(f"library failure near {url}")

    monkeypatch.setattr(cli_kb, "search", failing)
    assert cli.main(["search", "hello"]) != 0
    assert "Zz9Secret" not in capsys.readouterr().err
    assert "Zz9Secret" not in user_message("recall_step", RuntimeError(f"at {url}"))


# --- one scrubbing of every error (scholarflow/scrub.py), the node guard, the endpoints -----

def test_scrub_removes_every_kind_of_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    from urllib.parse import quote

    from scholarflow.scrub import remember, scrub_secrets

    monkeypatch.setenv("OPENAI_API_KEY", "sk-envKey/with+odd=chars")
    monkeypatch.setenv("SCHOLARFLOW_RERANK_API_KEY", "rerankKey123456")
    monkeypatch.setenv("TAVILY_API_KEY", "tvly-Abcdef123456")
    remember("ctxKeyNotInEnv99")
    text = ("a http://u:PwAny1@other.host/v1 b redis://:PwRedis2@r:6379/0 c "
            f"{quote('sk-envKey/with+odd=chars', safe='')} d rerankKey123456 e "
            "tvly-Abcdef123456 f Bearer eyJhbGciOi.JIUzI1 g sk-proj-AAAAbbbbCCCC h "
            "api_key=plainSecret77 i ctxKeyNotInEnv99 j sk-envKey/with+odd=chars")
    out = scrub_secrets(text)
    for secret in ("PwAny1", "PwRedis2", "envKey", "rerankKey123456", "Abcdef123456",
                   "eyJhbGciOi", "AAAAbbbbCCCC", "plainSecret77", "ctxKeyNotInEnv99"):
        assert secret not in out, out
    assert "http://u:***@other.host/v1" in out and "Bearer ***" in out
    # Ordinary words stay readable.
    plain = "the model endpoint rejected the API key (401): check OPENAI_API_KEY"
    assert scrub_secrets(plain) == plain


def test_the_log_filter_scrubs_messages_and_tracebacks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import io
    import logging

    from scholarflow.scrub import ScrubFilter

    monkeypatch.setenv("OPENAI_BASE_URL", "http://u:LogSecret9@127.0.0.1:1/v1")
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.addFilter(ScrubFilter())
    log = logging.getLogger("scholarflow.test_scrub")
    log.addHandler(handler)
    try:
        try:
            raise RuntimeError("cannot connect to http://u:LogSecret9@127.0.0.1:1/v1")
        except RuntimeError:
            log.error("failed at %s", "http://u:LogSecret9@127.0.0.1:1/v1", exc_info=True)
    finally:
        log.removeHandler(handler)
    text = out.getvalue()
    assert "Traceback" in text and "RuntimeError" in text and "LogSecret9" not in text


async def test_the_guard_keeps_the_type_and_drops_every_secret(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import inspect
    import pickle

    from langgraph.errors import GraphInterrupt

    from scholarflow.errors import InternalError, RateLimitedLLMError
    from scholarflow.nodes.guard import guarded

    url = "http://u:GuardPw77@127.0.0.1:1/v1"
    monkeypatch.setenv("OPENAI_BASE_URL", url)

    async def node(state: dict[str, Any], runtime: Any) -> dict[str, Any]:
        try:
            raise OSError(f"socket to {url}")
        except OSError as exc:
            raise RateLimitedLLMError(f"429 at {url}\nsecond line",
                                      retry_after=3.0) from exc

    wrapped = guarded("answer_generation", node)
    assert inspect.signature(wrapped) == inspect.signature(node)  # LangGraph passes runtime
    with pytest.raises(RateLimitedLLMError) as info:
        await wrapped({}, runtime=None)
    error = info.value
    assert error.retry_after == 3.0 and "GuardPw77" not in repr(error)
    assert error.__cause__ is None and error.__context__ is None
    assert "\n" not in str(error) and "GuardPw77" not in str(pickle.loads(pickle.dumps(error)))

    def foreign(state: dict[str, Any]) -> dict[str, Any]:
        raise KeyError(f"no {url}")

    with pytest.raises(InternalError) as internal:
        guarded("plan_generation", foreign)({})
    message = str(internal.value)
    assert message.startswith("internal error in plan_generation: KeyError: ")
    assert "GuardPw77" not in message and "SCHOLARFLOW_DEBUG=1" in message

    def interrupts(state: dict[str, Any]) -> dict[str, Any]:
        raise GraphInterrupt(())

    with pytest.raises(GraphInterrupt):  # LangGraph's control flow passes untouched
        guarded("request_init", interrupts)({})


async def test_a_stored_failure_holds_no_password(
    fake_llm: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What LangGraph stores for a failed task (repr(exception) in the writes) and the run's
    state: no password of the endpoint, no key; the retry policy still retried 4 times."""
    from langgraph.checkpoint.memory import InMemorySaver

    from scholarflow import build_graph
    from scholarflow.context import Context

    key = "sk-context-only-" + "k" * 20
    base = fake_llm.base_url.replace("http://", "http://user:StoredPw55@")
    monkeypatch.setenv("OPENAI_BASE_URL", base)
    fake_llm.configure(fail_first_n=100, fail_status=500)
    saver = InMemorySaver()
    graph = build_graph(checkpointer=saver)
    config: Any = {"configurable": {"thread_id": "t1"}}
    with pytest.raises(RetryableLLMError) as raised:  # a run that could not answer fails
        await graph.ainvoke({"query": "hello there"}, config,
                            context=Context(openai_api_key=key))
    out = (await graph.aget_state(config)).values
    assert str(raised.value) == out["error"]
    assert "StoredPw55" not in str(raised.value) and key not in str(raised.value)
    assert fake_llm.stats().chat_calls == 4
    assert out["error"].startswith("the model endpoint http://user:***@127.0.0.1:")
    assert "after 4 attempts: the server is failing; try again later" in out["error"]
    stored = repr(saver.storage) + repr(saver.writes) + repr(saver.blobs)
    assert "RetryableLLMError" in stored  # the failed task's exception is there, scrubbed
    assert "StoredPw55" not in stored and key not in stored


def _status_error(status: int, body: str = "boom") -> Exception:
    import openai

    request = httpx.Request("POST", "http://h/v1/chat/completions")
    response = httpx.Response(status, request=request, headers={"retry-after": "0"})
    cls = {401: openai.AuthenticationError, 404: openai.NotFoundError,
           429: openai.RateLimitError, 400: openai.BadRequestError}.get(
        status, openai.InternalServerError)
    return cls(body, response=cast(Any, response), body=None)  # openai types another httpx


@pytest.mark.parametrize(("exc", "expected"), [
    (_status_error(500), "failed with 500 after 4 attempts: the server is failing; try again "
                         "later or check its logs"),
    (_status_error(429), "kept rate limiting (429) after 4 attempts: lower "
                         "SCHOLARFLOW_MAX_CONCURRENT_LLM_CALLS or wait and retry"),
    (httpx.ReadTimeout("slow"),
     "did not answer within 120 s after 4 attempts: raise SCHOLARFLOW_LLM_TIMEOUT "
     "(llm_timeout_seconds) or check the server"),
    (httpx.ConnectError("refused"), "after 4 attempts: check OPENAI_BASE_URL and that the "
                                    "server is running"),
    (_status_error(401), "rejected the API key (401): check OPENAI_API_KEY"),
    (_status_error(404), "(404): check SCHOLARFLOW_MODEL"),
    (_status_error(400, "echoed sk-echoedKEY123456 back"), "check SCHOLARFLOW_MODEL"),
])
def test_each_endpoint_error_names_the_fix_without_the_password(
    exc: Exception, expected: str,
) -> None:
    from scholarflow.llm.calls import translate_api_error

    error = translate_api_error(
        exc, kind="model", model="m", model_env="SCHOLARFLOW_MODEL",
        base_url="http://user:TransPw42@host:8000/v1", timeout=120,
        timeout_setting="SCHOLARFLOW_LLM_TIMEOUT (llm_timeout_seconds)", attempts=4)
    message = str(error)
    assert expected in message, message
    assert "http://user:***@host:8000/v1" in message and "TransPw42" not in message
    assert "echoedKEY123456" not in message


@pytest.mark.parametrize("url", ["not a url", "http://127.0.0.1:99999/v1", "ftp://x",
                                 "http://u:BadUrlPw1@h:99999/v1", "http://:8000/v1"])
def test_a_bad_endpoint_is_refused_once_naming_the_setting(
    url: str, monkeypatch: pytest.MonkeyPatch,
) -> None:
    from scholarflow.context import Context

    monkeypatch.setenv("OPENAI_BASE_URL", url)
    with pytest.raises(ConfigurationError) as from_env:
        Context()
    assert str(from_env.value).startswith("OPENAI_BASE_URL=")
    assert "e.g. http://localhost:8000/v1" in str(from_env.value)
    assert "BadUrlPw1" not in str(from_env.value)
    monkeypatch.delenv("OPENAI_BASE_URL")
    with pytest.raises(ConfigurationError, match=r"^openai_api_base="):
        Context(openai_api_base=url)
    monkeypatch.setenv("SCHOLARFLOW_EMBEDDING_MODEL", "e")
    monkeypatch.setenv("SCHOLARFLOW_EMBEDDING_BASE_URL", url)
    with pytest.raises(ConfigurationError, match=r"^SCHOLARFLOW_EMBEDDING_BASE_URL="):
        Context()


async def test_a_home_that_is_a_file_and_damaged_databases_are_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    from scholarflow.errors import CorruptDataError
    from scholarflow.storage.paths import home_dir
    from scholarflow.storage.summary_cache import SqliteSummaryCache

    blocker = tmp_path / "afile"
    blocker.write_text("x")
    for home, expected in ((blocker, "is a file, not a folder"),
                           (blocker / "sub", f"is inside {blocker}, which is a file")):
        monkeypatch.setenv("SCHOLARFLOW_HOME", str(home))
        with pytest.raises(ConfigurationError, match=r"^SCHOLARFLOW_HOME=") as info:
            home_dir()
        assert expected in str(info.value) and "point SCHOLARFLOW_HOME at a folder" in str(
            info.value)
    garbage = bytes(range(256)) * 20
    damaged = tmp_path / "scholarflow.db"
    damaged.write_bytes(garbage)
    cache = SqliteSummaryCache(damaged)
    with pytest.raises(CorruptDataError) as corrupt:
        await cache.get_many(["doc_summary:a:b"])
    await cache.close()
    assert str(damaged) in str(corrupt.value) and "move it aside" in str(corrupt.value)
    assert damaged.read_bytes() == garbage  # never deleted nor overwritten
