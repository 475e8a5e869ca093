"""Elasticsearch and recall-service URLs: a bad one is one clear line naming its variable,
and no piece of a password in one reaches an error line, the run's error, its events or
what it saves, whichever way the URL is malformed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import httpx
import pytest
from elastic_transport import TransportError

from scholarflow import cli, cli_kb
from scholarflow.documents import document_from_text
from scholarflow.errors import ConfigurationError
from scholarflow.ingest.pipeline import add_document
from scholarflow.nodes.errors import user_message
from scholarflow.sessions.services import SECRET_URL_ENVS, check_http_url
from scholarflow.testing import FakeOpenAIServer
from scholarflow.tools.index.elastic_client import connect, es_errors
from scholarflow.tools.kb import RecallParams
from scholarflow.tools.kb_registry import open_knowledge_base
from scholarflow.tools.recall_api import HttpRecallRetriever, RecallApiError
from tests.conftest import EXAMPLES, paper, run_graph
from tests.test_cli import Result, base_env, run, run_many
from tests.test_cli_kb import kb_env

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
