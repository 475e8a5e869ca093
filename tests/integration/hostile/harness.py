"""What every hostile case asserts, and how it runs the command line.

A case runs `scholarflow` (a new process, bytes in and out: forked from a server
that has the libraries imported, see forkserver.py; or in-process, for what the
command line cannot reach), then checks, as a new user or an attacker would see it:
- the exit code (2 for a bad request, 1 for a run that failed);
- stderr ends in exactly one `error: ...` line that names the fix;
- no traceback, no raw control character (ESC, OSC) on the terminal;
- no secret in any output or any byte stored under SCHOLARFLOW_HOME;
- the session and the knowledge base that were there before are intact.
"""

from __future__ import annotations

import atexit
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.integration.hostile.forkserver import ForkServer

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = REPO / "examples" / "papers"
PAPER = EXAMPLES / "en_sparse_attention.md"
SEED_KB = "lab"
TIMEOUT = 90  # seconds per subprocess: a hang fails the case, not the whole run
SECRET = "S3cr3tPassw0rdXYZ"  # a password no message may show
API_KEY = "sk-hostile-SECRETKEY-0123456789"

EXIT_FAILED = 1
EXIT_BAD_REQUEST = 2


@dataclass(frozen=True)
class Result:
    args: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    raw_stderr: bytes

    @property
    def error_lines(self) -> list[str]:
        return [line for line in self.stderr.splitlines() if line.startswith("error:")]

    def describe(self) -> str:
        return (f"scholarflow {' '.join(map(repr, self.args))} -> {self.returncode}\n"
                f"--- stdout\n{self.stdout[-3000:]}\n--- stderr\n{self.stderr[-3000:]}")


def base_env(home: Path) -> dict[str, str]:
    """The caller's environment without any LLM, search, tracing or scholarflow setting."""
    dropped = ("OPENAI_", "SCHOLARFLOW_", "TAVILY_", "BOCHA_", "LANGSMITH_", "LANGCHAIN_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(dropped)}
    env["SCHOLARFLOW_HOME"] = str(home)
    env["PYTHONIOENCODING"] = "utf-8"
    return env


def llm_env(base_url: str, home: Path, **extra: str) -> dict[str, str]:
    """Pointed at the scripted server, with fake embeddings (no local model load)."""
    return {**base_env(home), "OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": API_KEY,
            "SCHOLARFLOW_EMBEDDING_MODEL": "fake-embedding", **extra}


def run(args: Sequence[str | bytes], env: Mapping[str, str | bytes], *,
        stdin: bytes = b"", timeout: float = TIMEOUT, cwd: Path = REPO,
        module: str = "scholarflow.cli") -> Result:
    """`python -m scholarflow.cli ARGS` as a new process; arguments and stdin may be raw
    bytes. The process is forked from a server that has the third-party libraries imported
    (tests/integration/hostile/forkserver.py), or started anew when the environment asks for another
    interpreter (or SCHOLARFLOW_TEST_SUBPROCESS=1): the same process either way."""
    argv = [a if isinstance(a, bytes) else a.encode() for a in args]
    server = fork_server()
    if server is not None and server.accepts(env):
        returncode, stdout, stderr = server.run(
            module, argv, env, stdin=stdin, timeout=timeout, cwd=cwd)  # type: ignore[arg-type]
    else:
        proc = subprocess.run(
            [sys.executable.encode(), b"-m", module.encode(), *argv],
            input=stdin, capture_output=True, env=dict(env),  # type: ignore[arg-type]
            cwd=cwd, timeout=timeout, check=False,
        )
        returncode, stdout, stderr = proc.returncode, proc.stdout, proc.stderr
    return Result(tuple(a if isinstance(a, str) else a.decode(errors="replace") for a in args),
                  returncode, stdout.decode(errors="replace"),
                  stderr.decode(errors="replace"), stderr)


_server: ForkServer | None = None
_server_lock = threading.Lock()
_server_failed = False


def fork_server() -> ForkServer | None:
    """The fork server of this test process, started on first use; None when runs must be
    real subprocesses (SCHOLARFLOW_TEST_SUBPROCESS=1, or the server could not start)."""
    global _server, _server_failed
    if os.environ.get("SCHOLARFLOW_TEST_SUBPROCESS") or not hasattr(socket, "send_fds"):
        return None
    with _server_lock:
        if _server is None and not _server_failed:
            home = Path(tempfile.gettempdir()) / "scholarflow-fork-server-home"  # never used
            try:
                _server = ForkServer(base_env(home), REPO)
            except (OSError, RuntimeError) as exc:
                _server_failed = True
                warnings.warn(f"fork server unavailable, runs are subprocesses: {exc}",
                              stacklevel=2)
                return None
            atexit.register(_server.close)
        return _server


def assert_clean_error(result: Result, *, exit_code: int, names: Iterable[str] = ()) -> str:
    """Exit code, one `error:` line naming each of `names` (what to do), no traceback,
    no control characters; returns the error line."""
    text = result.describe()
    assert result.returncode == exit_code, text
    assert "Traceback" not in result.stdout + result.stderr, text
    assert len(result.error_lines) == 1, text
    line = result.error_lines[0]
    assert result.stderr.rstrip("\n").splitlines()[-1] == line, text  # the last word
    for name in names:
        assert name.lower() in line.lower(), f"{name!r} not in the error line\n{text}"
    assert_terminal_safe(result.raw_stderr)
    return line


def assert_terminal_safe(raw: bytes) -> None:
    """No escape sequence or other control character but newline, tab and CR."""
    bad = sorted({b for b in raw if (b < 0x20 and b not in b"\n\t\r") or b == 0x7F})
    assert not bad, f"control bytes {bad} on the terminal: {raw[-500:]!r}"
    assert "\x9b" not in raw.decode(errors="replace"), raw[-500:]  # C1 CSI


def stored_bytes(home: Path) -> Iterable[tuple[Path, bytes]]:
    for path in sorted(home.rglob("*")):
        if path.is_file() and not path.is_symlink():
            yield path, path.read_bytes()


def assert_no_secret(home: Path | None, *outputs: str, secrets: Sequence[str] = (SECRET, API_KEY)
                     ) -> None:
    """No secret in the outputs nor in any byte stored under `home` (databases included)."""
    for secret in secrets:
        for out in outputs:
            assert secret not in out, f"secret {secret!r} printed: {out[-2000:]}"
        if home is None or not home.exists():
            continue
        needles = {secret.encode(), secret.encode("utf-16-le")}
        for path, data in stored_bytes(home):
            for needle in needles:
                assert needle not in data, f"secret {secret!r} stored in {path}"


# --- what was there before a case: one session and one knowledge base --------------------

@dataclass(frozen=True)
class Seeded:
    home: Path
    session_id: str
    fingerprint: dict[str, Any]


def fingerprint(home: Path) -> dict[str, Any]:
    """The sessions with their messages, and each knowledge base's documents and chunks."""
    found: dict[str, Any] = {}
    checkpoints = home / "checkpoints.sqlite"
    if checkpoints.exists():
        found["sessions"], found["messages"] = _threads(checkpoints)
    for index in sorted((home / "kb").glob("*/index.sqlite")):
        with sqlite3.connect(f"file:{index}?mode=ro", uri=True) as conn:
            found[f"kb:{index.parent.name}"] = (
                sorted(conn.execute("SELECT doc_id FROM documents")),
                conn.execute("SELECT count(*) FROM chunks").fetchone(),
            )
    return found


def _threads(path: Path) -> tuple[list[tuple[str]], list[tuple[str, str, str]]]:
    """The sessions (threads) of a checkpoint file, and their messages as
    (session, type, content), read as LangGraph rebuilds them."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    async def read() -> tuple[list[tuple[str]], list[tuple[str, str, str]]]:
        import aiosqlite
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        from scholarflow import build_graph
        from scholarflow.sessions.conversation import as_session_messages
        from scholarflow.storage.checkpoints import latest_checkpoints, thread_config

        sessions: list[tuple[str]] = []
        messages: list[tuple[str, str, str]] = []
        async with aiosqlite.connect(path) as conn:
            saver = AsyncSqliteSaver(conn)
            graph = build_graph(checkpointer=saver)
            try:
                threads = await latest_checkpoints(saver)
            except sqlite3.OperationalError:  # no table yet
                threads = []
            for thread_id, _ in threads:
                sessions.append((thread_id,))
                values = (await graph.aget_state(thread_config(thread_id))).values
                messages += [(thread_id, m.type.value, m.content)
                             for m in as_session_messages(values.get("messages") or [])]
        return sorted(sessions), sorted(messages)

    # A thread of its own: callers may be inside an event loop.
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, read()).result()


def seed(base_url: str, home: Path) -> Seeded:
    """A home with one knowledge base (`lab`, one paper) and one session (one chat turn)."""
    env = llm_env(base_url, home)
    ingest = run(["ingest", str(EXAMPLES / "en_retrieval_qa.md"), "--kb", SEED_KB], env)
    assert ingest.returncode == 0, ingest.describe()
    ask = run(["ask", "hello there", "--json"], env)
    assert ask.returncode == 0, ask.describe()
    import json

    final = [json.loads(line) for line in ask.stdout.splitlines()][-1]
    return Seeded(home, final["session_id"], fingerprint(home))


def copy_seeded(seeded: Seeded, target: Path) -> Seeded:
    shutil.copytree(seeded.home, target)
    return Seeded(target, seeded.session_id, seeded.fingerprint)


def assert_intact(seeded: Seeded) -> None:
    """What was stored before the case is still there (new sessions may have been added)."""
    now = fingerprint(seeded.home)
    before = seeded.fingerprint
    assert set(before["sessions"]) <= set(now.get("sessions", [])), now
    assert set(before["messages"]) <= set(now.get("messages", [])), now
    for key, value in before.items():
        if key.startswith("kb:"):
            assert now.get(key) == value, (key, now.get(key), value)


# --- many cases at once, and what a success looks like ------------------------------------

@dataclass(frozen=True)
class Call:
    """One `scholarflow` invocation for `run_many`."""

    args: Sequence[str | bytes]
    env: Mapping[str, str | bytes]
    stdin: bytes = b""
    timeout: float = TIMEOUT


def run_many(calls: Sequence[Call], *, workers: int = 4) -> list[Result]:
    """Independent invocations at once; results in order."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(calls)))) as pool:
        return list(pool.map(lambda c: run(c.args, c.env, stdin=c.stdin, timeout=c.timeout),
                             calls))


def assert_clean_success(result: Result) -> None:
    """Exit 0, no `error:` line, no traceback, nothing on stderr that drives a terminal."""
    text = result.describe()
    assert result.returncode == 0, text
    assert not result.error_lines, text
    assert "Traceback" not in result.stdout + result.stderr, text
    assert_terminal_safe(result.raw_stderr)


def assert_no_new_session(seeded: Seeded) -> None:
    """A request rejected before its run left no session behind."""
    assert fingerprint(seeded.home).get("sessions") == seeded.fingerprint["sessions"]


def assert_knowledge_bases_intact(seeded: Seeded, *, sessions: bool = True) -> None:
    """assert_intact for a case that damages a file on purpose (fingerprint() cannot read
    it): the seeded knowledge bases as they were, and the sessions unless `sessions` is
    False (their checkpoint file is the damaged one)."""
    if sessions:
        _sessions, messages = _threads(seeded.home / "checkpoints.sqlite")
        assert set(seeded.fingerprint["messages"]) <= set(messages)
    for key, value in seeded.fingerprint.items():
        if not key.startswith("kb:"):
            continue
        index = seeded.home / "kb" / key.removeprefix("kb:") / "index.sqlite"
        with sqlite3.connect(f"file:{index}?mode=ro", uri=True) as conn:
            now = (sorted(conn.execute("SELECT doc_id FROM documents")),
                   conn.execute("SELECT count(*) FROM chunks").fetchone())
        assert now == value, (key, now, value)
