"""`langgraph dev` serves langgraph.json and the `langgraph_sdk` client streams runs from it.

Two real subprocesses per module: the scripted OpenAI server
(`python -m scholarflow.testing.fake_openai --port 0`) and `langgraph dev` in
the repository root, pointed at it through OPENAI_BASE_URL. Skipped only when
the `langgraph` CLI is not installed.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import EXAMPLES, INTENT_RULE

REPO = Path(__file__).resolve().parents[1]
GRAPH_ID = "scholarflow"  # langgraph.json
QA_RULE = "You answer a precise question"
INTENT_QA = '{"intent": "LITERATURE_QA", "confidence": 0.9, "reason": "a precise question"}'
ANSWER = "The model attends to a local window plus a few global tokens."
QUESTION = "Which attention pattern does the sparse model use?"
SECRET = "sk-secret-xyz"
EVENT_TYPES = frozenset({
    "thinking_start", "thinking_end", "thought_chunk", "answer_chunk", "final_answer",
    "node_complete", "node_error", "doc_summary_init", "doc_summary_start",
    "doc_summary_chunk", "doc_summary_complete", "doc_summary_error", "error",
})
FULL_CONTENT_NODES = ["request_init", "document_check", "intent_recognition",
                      "strategy_selection", "answer_generation", "session_save"]
FAKE_START_TIMEOUT = 30.0
SERVER_START_TIMEOUT = 90.0
RUN_TIMEOUT = 120.0


def _langgraph_cli() -> str | None:
    beside = Path(sys.executable).with_name("langgraph")
    return str(beside) if beside.exists() else shutil.which("langgraph")


LANGGRAPH = _langgraph_cli()
pytestmark = pytest.mark.skipif(
    LANGGRAPH is None,
    reason="the `langgraph` CLI is not installed (pip install 'langgraph-cli[inmem]')",
)


# --- processes ---------------------------------------------------------------------------------


def _free_port() -> int:
    while True:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = int(sock.getsockname()[1])
        if port != 2024:  # langgraph dev's default; something else may hold it
            return port


def _clean_env(home: Path) -> dict[str, str]:
    """The caller's environment without LLM, tracing or scholarflow settings, offline-safe."""
    dropped = ("OPENAI_", "SCHOLARFLOW_", "LANGSMITH_", "LANGCHAIN_", "TAVILY_", "BOCHA_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(dropped)}
    env.update(
        SCHOLARFLOW_HOME=str(home),
        PYTHONIOENCODING="utf-8",
        NO_COLOR="1",
        # Offline: no CLI analytics (langgraph_cli/analytics.py), no PyPI version check
        # (langgraph_api/cli.py), no LangSmith tracing. Without a license key the
        # metadata beacon is skipped anyway (langgraph_api/metadata.py).
        LANGGRAPH_CLI_NO_ANALYTICS="1",
        LANGGRAPH_NO_VERSION_CHECK="true",
        LANGSMITH_TRACING="false",
        LANGCHAIN_TRACING_V2="false",
    )
    return env


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Stop a process started with start_new_session=True, and its own children."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=5)


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _tail(path: Path, lines: int = 40) -> str:
    """The last lines of a log, without the colour codes structlog adds."""
    text = path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""
    return "\n".join(_ANSI.sub("", text).splitlines()[-lines:])


@dataclass(frozen=True)
class Fake:
    base_url: str  # .../v1
    log: Path

    @property
    def admin(self) -> str:
        return self.base_url.removesuffix("/v1") + "/_admin"


@dataclass(frozen=True)
class Server:
    url: str
    log: Path
    home: Path

    def log_tail(self) -> str:
        return f"--- langgraph dev log ({self.log}):\n{_tail(self.log)}"


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("langgraph_server")


@pytest.fixture(scope="module")
def fake(workdir: Path) -> Iterator[Fake]:
    log = workdir / "fake_openai.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "scholarflow.testing.fake_openai", "--port", "0"],
            stdout=out, stderr=subprocess.STDOUT, cwd=REPO,
            env=_clean_env(workdir / "unused-home"), start_new_session=True,
        )
    try:
        deadline = time.monotonic() + FAKE_START_TIMEOUT
        while True:
            found = re.search(r"listening on (http://\S+/v1)", _tail(log))
            if found:
                break
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"fake-openai did not start (exit {proc.poll()}):\n{_tail(log)}")
            time.sleep(0.1)
        yield Fake(found.group(1), log)
    finally:
        _stop(proc)


@pytest.fixture(scope="module")
def server(fake: Fake, workdir: Path) -> Iterator[Server]:
    assert LANGGRAPH is not None
    port = _free_port()
    home = workdir / "home"
    env = _clean_env(home)
    env.update(OPENAI_BASE_URL=fake.base_url, OPENAI_API_KEY="dummy-server-key")
    # The repository's own langgraph.json, served from the repository root. The
    # in-memory server pickles threads into ./.langgraph_api/ (gitignored); this
    # langgraph-cli has no working switch to turn that off (`disable_persistence` is
    # dropped by config validation and the env var is overwritten by `langgraph dev`).
    log = workdir / "langgraph_dev.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [LANGGRAPH, "dev", "--host", "127.0.0.1", "--port", str(port),
             "--no-browser", "--no-reload"],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=REPO, env=env,
            start_new_session=True,
        )
    started = Server(f"http://127.0.0.1:{port}", log, home)
    try:
        deadline = time.monotonic() + SERVER_START_TIMEOUT
        while True:
            try:
                if httpx.get(f"{started.url}/ok", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None:
                pytest.fail(f"langgraph dev exited with {proc.returncode}\n{started.log_tail()}")
            if time.monotonic() > deadline:
                pytest.fail(f"langgraph dev did not answer /ok within "
                            f"{SERVER_START_TIMEOUT:.0f}s\n{started.log_tail()}")
            time.sleep(0.5)
        yield started
    finally:
        _stop(proc)


# --- helpers -----------------------------------------------------------------------------------


async def _script(fake: Fake, **config: Any) -> None:
    async with httpx.AsyncClient(timeout=10) as http:
        (await http.post(f"{fake.admin}/reset")).raise_for_status()
        (await http.post(f"{fake.admin}/config", json=config)).raise_for_status()


@dataclass
class Run:
    custom: list[dict[str, Any]]
    values: dict[str, Any]  # the last root-namespace values
    parts: list[tuple[str, Any]]  # every (event, data), metadata included

    def types(self) -> list[str]:
        return [e.get("type", "?") for e in self.custom]


async def _stream(server: Server, thread_id: str, **kwargs: Any) -> Run:
    from langgraph_sdk import get_client

    client = get_client(url=server.url)
    run = Run([], {}, [])
    try:
        async with asyncio.timeout(RUN_TIMEOUT):
            async for part in client.runs.stream(
                thread_id, GRAPH_ID, stream_mode=["custom", "values"], stream_subgraphs=True,
                **kwargs,
            ):
                run.parts.append((part.event, part.data))
                # Subgraph parts are named "custom|<namespace>" / "values|<namespace>".
                if part.event.split("|")[0] == "custom":
                    run.custom.append(part.data)
                elif part.event == "values":
                    run.values = part.data
    finally:
        await client.aclose()
    return run


def _where(obj: Any, needle: str, path: str = "$") -> list[str]:
    """JSON paths of every key or string value that contains `needle`."""
    if isinstance(obj, dict):
        found = []
        for key, value in obj.items():
            if needle in str(key):
                found.append(f"{path}.{key} (key)")
            found += _where(value, needle, f"{path}.{key}")
        return found
    if isinstance(obj, list | tuple):
        return [p for i, v in enumerate(obj) for p in _where(v, needle, f"{path}[{i}]")]
    return [path] if needle in str(obj) else []


def _paper() -> str:
    return (EXAMPLES / "en_sparse_attention.md").read_text(encoding="utf-8")


# --- tests -------------------------------------------------------------------------------------


async def test_sdk_streams_a_run_from_langgraph_dev(server: Server, fake: Fake) -> None:
    from langgraph_sdk import get_client

    await _script(fake, rules=[{"match": INTENT_RULE, "reply": INTENT_QA},
                               {"match": QA_RULE, "reply": ANSWER}])
    client = get_client(url=server.url)
    try:
        assistants = await client.assistants.search(graph_id=GRAPH_ID)
        assert assistants, f"graph {GRAPH_ID!r} is not served\n{server.log_tail()}"
        thread = await client.threads.create()
    finally:
        await client.aclose()

    run = await _stream(server, thread["thread_id"],
                        input={"query": QUESTION, "content": _paper()})

    server_errors = [data for event, data in run.parts if event == "error"]
    assert not server_errors, f"{server_errors}\n{server.log_tail()}"
    failed = [e for e in run.custom if e.get("type") in ("node_error", "error")]
    assert not failed, f"the run failed: {failed}\n{server.log_tail()}"
    assert set(run.types()) <= EVENT_TYPES, run.types()

    chunks = [e["content"] for e in run.custom if e["type"] == "answer_chunk"]
    assert chunks and "".join(chunks) == ANSWER, run.types()
    completed = [e["node"] for e in run.custom if e["type"] == "node_complete"]
    assert completed == FULL_CONTENT_NODES, completed
    finals = [e for e in run.custom if e["type"] == "final_answer"]
    assert len(finals) == 1 and run.custom[-1] is finals[0], run.types()
    assert finals[0]["answer"] == ANSWER
    assert finals[0]["intent"] == "LITERATURE_QA"
    assert finals[0]["strategy"] == "full_content"
    assert finals[0]["session_id"]

    assert run.values.get("answer") == ANSWER, sorted(run.values)
    assert run.values.get("detected_intent") == "LITERATURE_QA", sorted(run.values)
    assert run.values.get("strategy") == "full_content"


async def test_a_key_given_in_context_is_never_stored(server: Server, fake: Fake) -> None:
    from langgraph_sdk import get_client

    await _script(fake, rules=[{"match": INTENT_RULE, "reply": INTENT_QA},
                               {"match": QA_RULE, "reply": ANSWER}])
    client = get_client(url=server.url)
    try:
        thread = await client.threads.create()
        thread_id = thread["thread_id"]
        run = await _stream(
            server, thread_id, input={"query": QUESTION, "content": _paper()},
            context={"openai_api_key": SECRET, "openai_api_base": fake.base_url,
                     "show_thinking": True},
        )
        failed = [e for e in run.custom if e.get("type") in ("node_error", "error")]
        assert not failed, f"the run failed: {failed}\n{server.log_tail()}"
        assert run.values.get("answer") == ANSWER, sorted(run.values)

        state = await client.threads.get_state(thread_id)
        history = await client.threads.get_history(thread_id, limit=100)
        stored_thread = await client.threads.get(thread_id)
    finally:
        await client.aclose()

    assert history, "no checkpoints were kept"
    leaks = {
        "stream events": _where(run.custom, SECRET),
        "streamed values": _where([d for e, d in run.parts if e.startswith("values")], SECRET),
        "threads.get_state": _where(state, SECRET),
        "threads.get_history": _where(history, SECRET),
        "threads.get": _where(stored_thread, SECRET),
        "server log": [line for line in _tail(server.log, 100_000).splitlines()
                       if SECRET in line],
        "SCHOLARFLOW_HOME": [str(p) for p in server.home.rglob("*")
                             if p.is_file() and SECRET.encode() in p.read_bytes()],
    }
    leaks = {where: paths for where, paths in leaks.items() if paths}
    assert not leaks, f"the API key from the run context was stored: {json.dumps(leaks)[:2000]}"
