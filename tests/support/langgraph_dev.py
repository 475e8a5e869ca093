"""Real `langgraph dev` servers for tests, beside the scripted OpenAI server, both as subprocesses.

`start_fake()` runs `python -m tests.support.fake_openai --port 0`;
`start_server()` runs `langgraph dev` in the repository root on a langgraph
config file, pointed at the fake through OPENAI_BASE_URL. The fake's in-flight
counter sees every LLM call the server makes (`fake_stats`). Test modules wrap
these in module-scoped fixtures: one server start per module.
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
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import httpx

if TYPE_CHECKING:
    from langgraph_sdk.client import LangGraphClient

REPO = Path(__file__).resolve().parents[2]
GRAPH_ID = "scholarflow"  # langgraph.json
FAKE_START_TIMEOUT = 30.0
SERVER_START_TIMEOUT = 90.0
RUN_TIMEOUT = 120.0


def langgraph_cli() -> str | None:
    beside = Path(sys.executable).with_name("langgraph")
    return str(beside) if beside.exists() else shutil.which("langgraph")


LANGGRAPH = langgraph_cli()
NO_CLI = "the `langgraph` CLI is not installed (pip install 'langgraph-cli[inmem]')"


class StartError(RuntimeError):
    """A process did not start; the message holds its log's tail."""


def free_port() -> int:
    while True:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = int(sock.getsockname()[1])
        if port != 2024:  # langgraph dev's default; something else may hold it
            return port


def clean_env(home: Path) -> dict[str, str]:
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


def stop(proc: subprocess.Popen[bytes]) -> None:
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


def tail(path: Path, lines: int = 40) -> str:
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
    token: str | None = None  # a person's, for a server with auth on (sdk_client sends it)

    def log_tail(self) -> str:
        return f"--- langgraph dev log ({self.log}):\n{tail(self.log)}"


@contextmanager
def start_fake(workdir: Path) -> Iterator[Fake]:
    log = workdir / "fake_openai.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tests.support.fake_openai", "--port", "0"],
            stdout=out, stderr=subprocess.STDOUT, cwd=REPO,
            env=clean_env(workdir / "unused-home"), start_new_session=True,
        )
    try:
        deadline = time.monotonic() + FAKE_START_TIMEOUT
        while not (found := re.search(r"listening on (http://\S+/v1)", tail(log))):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise StartError(f"fake-openai did not start (exit {proc.poll()}):\n{tail(log)}")
            time.sleep(0.1)
        yield Fake(found.group(1), log)
    finally:
        stop(proc)


def launch_server(
    workdir: Path, *, config: str = "langgraph.json", env: dict[str, str] | None = None,
    name: str = "langgraph_dev",
) -> tuple[subprocess.Popen[bytes], Server]:
    """Start `langgraph dev` on `config` (relative to the repository) without waiting for it."""
    assert LANGGRAPH is not None, NO_CLI
    port = free_port()
    home = workdir / f"{name}-home"
    full_env = clean_env(home)
    full_env.update(env or {})
    # The in-memory server pickles threads into ./.langgraph_api/ (gitignored); this
    # langgraph-cli has no working switch to turn that off (`disable_persistence` is
    # dropped by config validation and the env var is overwritten by `langgraph dev`).
    # --n-jobs-per-worker: `langgraph dev` runs one run at a time unless told otherwise.
    log = workdir / f"{name}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [LANGGRAPH, "dev", "--config", config, "--host", "127.0.0.1", "--port", str(port),
             "--no-browser", "--no-reload", "--n-jobs-per-worker", "32"],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=REPO,
            env=full_env, start_new_session=True,
        )
    return proc, Server(f"http://127.0.0.1:{port}", log, home)


@contextmanager
def start_server(
    workdir: Path, fake: Fake, *, config: str = "langgraph.json",
    env: dict[str, str] | None = None, name: str = "langgraph_dev", auth: bool = False,
) -> Iterator[Server]:
    """`langgraph dev` on `config`, answering /ok, with its LLM at the fake.

    The repository's configs ask every request for a person's token (scholarflow/server/);
    a test about something else runs its server with `SCHOLARFLOW_AUTH=off`, as one person
    on localhost would, unless it passes `auth=True`."""
    full_env = {"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "dummy-server-key",
                "SCHOLARFLOW_AUTH": "on" if auth else "off"}
    full_env.update(env or {})
    proc, server = launch_server(workdir, config=config, env=full_env, name=name)
    try:
        deadline = time.monotonic() + SERVER_START_TIMEOUT
        while True:
            try:
                if httpx.get(f"{server.url}/ok", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None:
                raise StartError(f"langgraph dev exited with {proc.returncode}\n"
                                 f"{server.log_tail()}")
            if time.monotonic() > deadline:
                raise StartError(f"langgraph dev did not answer /ok within "
                                 f"{SERVER_START_TIMEOUT:.0f}s\n{server.log_tail()}")
            time.sleep(0.5)
        yield server
    finally:
        stop(proc)


# --- talking to them ---------------------------------------------------------------------------


@asynccontextmanager
async def sdk_client(server: Server) -> AsyncIterator[LangGraphClient]:
    """A langgraph_sdk client of `server`, closed afterwards."""
    from langgraph_sdk import get_client

    client = get_client(url=server.url, api_key=server.token)
    try:
        yield client
    finally:
        await client.aclose()


async def script(fake: Fake, **config: Any) -> None:
    """Reset the fake (rules, stats) and configure it."""
    async with httpx.AsyncClient(timeout=10) as http:
        (await http.post(f"{fake.admin}/reset")).raise_for_status()
        (await http.post(f"{fake.admin}/config", json=config)).raise_for_status()


async def fake_stats(fake: Fake) -> dict[str, Any]:
    async with httpx.AsyncClient(timeout=10) as http:
        response = await http.get(f"{fake.admin}/stats")
        response.raise_for_status()
        stats: dict[str, Any] = response.json()
        return stats


@dataclass
class Run:
    custom: list[dict[str, Any]]
    values: dict[str, Any]  # the last root-namespace values
    parts: list[tuple[str, Any]]  # every (event, data), metadata included

    def types(self) -> list[str]:
        return [e.get("type", "?") for e in self.custom]

    @property
    def run_id(self) -> str:
        return str(next(d["run_id"] for e, d in self.parts if e == "metadata"))

    def failures(self) -> list[Any]:
        """Server errors and failed nodes, for assertion messages."""
        return ([d for e, d in self.parts if e == "error"]
                + [e for e in self.custom if e.get("type") in ("node_error", "error")])


async def stream(
    server: Server, thread_id: str | None, *, assistant: str = GRAPH_ID, **kwargs: Any
) -> Run:
    """One run streamed as a langgraph_sdk client does it: custom and values, subgraphs too."""
    run = Run([], {}, [])
    async with sdk_client(server) as client, asyncio.timeout(RUN_TIMEOUT):
        async for part in client.runs.stream(
            thread_id, assistant, stream_mode=["custom", "values"], stream_subgraphs=True,
            **kwargs,
        ):
            run.parts.append((part.event, part.data))
            # Subgraph parts are named "custom|<namespace>" / "values|<namespace>".
            if part.event.split("|")[0] == "custom":
                run.custom.append(part.data)
            elif part.event == "values":
                run.values = part.data
    return run


def where(obj: Any, needle: str, path: str = "$") -> list[str]:
    """JSON paths of every key or string value that contains `needle`."""
    if isinstance(obj, dict):
        found = []
        for key, value in obj.items():
            if needle in str(key):
                found.append(f"{path}.{key} (key)")
            found += where(value, needle, f"{path}.{key}")
        return found
    if isinstance(obj, list | tuple):
        return [p for i, v in enumerate(obj) for p in where(v, needle, f"{path}[{i}]")]
    return [path] if needle in str(obj) else []


def files_containing(root: Path, needle: str) -> list[str]:
    data = needle.encode()
    return [str(p) for p in root.rglob("*") if p.is_file() and data in p.read_bytes()]


async def new_thread(server: Server) -> str:
    async with sdk_client(server) as client:
        return str((await client.threads.create())["thread_id"])


def next_nodes(history: list[dict[str, Any]], run_id: str) -> list[str]:
    """The node each checkpoint of one run was about to run, oldest first."""
    mine = [c for c in reversed(history) if c["metadata"].get("run_id") == run_id]
    return [n for c in mine for n in c["next"]]


def session_of(events: list[dict[str, Any]]) -> str:
    return str(next(e["session_id"] for e in events if e.get("type") == "final_answer"))


def normalised(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events with the run's own session id (random per run) replaced by a marker."""
    session = session_of(events)
    text = json.dumps(events, ensure_ascii=False).replace(session, "<session>")
    return cast(list[dict[str, Any]], json.loads(text))


def shared_events(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events naming no document: the per-document summaries run in parallel."""
    return [e for e in events if "doc_id" not in e]


def doc_events(events: list[dict[str, Any]], doc_id: str) -> list[dict[str, Any]]:
    """One document's own events, in their order."""
    return [e for e in events if e.get("doc_id") == doc_id]


def cli_json_events(args: list[str], fake: Fake, home: Path) -> list[dict[str, Any]]:
    """What `scholarflow ask ... --json` prints, one event a line, run as a real subprocess."""
    env = clean_env(home)
    env.update(OPENAI_BASE_URL=fake.base_url, OPENAI_API_KEY="dummy-cli-key")
    proc = subprocess.run(
        [sys.executable, "-m", "scholarflow.cli", "ask", *args, "--json"],
        capture_output=True, text=True, encoding="utf-8", env=env, cwd=REPO,
        timeout=RUN_TIMEOUT, check=False, stdin=subprocess.DEVNULL,
    )
    shown = f"scholarflow ask {args} -> {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    assert "Traceback" not in proc.stdout + proc.stderr, shown
    try:
        return [json.loads(line) for line in proc.stdout.splitlines()]
    except json.JSONDecodeError as exc:
        raise AssertionError(f"not one JSON event a line ({exc}):\n{shown}") from None
