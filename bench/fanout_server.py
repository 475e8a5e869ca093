"""The scripted OpenAI server of bench/fanout.py: a subprocess, or a thread (`--in-process`).

A sibling module of bench/fanout.py (split to keep modules under 400 lines);
bench/adaptive.py uses it too, through fanout.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx

# The scripted server is test support (tests/support/): importable from the repository root,
# whichever folder the benchmark runs from.
REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


class ServerProcess:
    """`python -m tests.support.fake_openai --port 0`, scripted over HTTP."""

    def __init__(self, latency: float) -> None:
        self.latency = latency
        self.proc: subprocess.Popen[str] | None = None
        self.base_url = ""
        self.admin: httpx.AsyncClient | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.support.fake_openai", "--port", "0",
             "--latency", str(self.latency)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()  # "fake-openai listening on http://...:PORT/v1"
        if "listening on" not in line:
            err = self.proc.stderr.read() if self.proc.stderr else ""
            raise RuntimeError(f"fake-openai did not start: {line!r} {err[-500:]}")
        self.base_url = line.strip().rsplit(" ", 1)[-1]
        self.admin = httpx.AsyncClient(base_url=self.base_url.removesuffix("/v1"), timeout=30)

    async def configure(self, **config: Any) -> None:
        assert self.admin is not None
        (await self.admin.post("/_admin/config", json=config)).raise_for_status()

    async def reset(self) -> None:
        assert self.admin is not None
        (await self.admin.post("/_admin/reset")).raise_for_status()

    async def stats(self) -> dict[str, Any]:
        assert self.admin is not None
        r = await self.admin.get("/_admin/stats")
        r.raise_for_status()
        data: dict[str, Any] = r.json()
        data.pop("requests", None)  # every prompt of 200 documents: not needed here
        return data

    def cpu_seconds(self) -> float | None:
        """User + system CPU the server process has used so far (Linux /proc)."""
        if self.proc is None:
            return None
        try:
            with open(f"/proc/{self.proc.pid}/stat", encoding="ascii") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            return None
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    async def aclose(self) -> None:
        if self.admin is not None:
            await self.admin.aclose()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class ServerThread:
    """The same server on a thread of this process (`--in-process`)."""

    def __init__(self, latency: float) -> None:
        from tests.support import FakeOpenAIServer

        self.server = FakeOpenAIServer(latency=latency)
        self.base_url = ""

    def start(self) -> None:
        self.server.start()
        self.base_url = self.server.base_url

    async def configure(self, **config: Any) -> None:
        self.server.configure(**config)

    async def reset(self) -> None:
        self.server.reset()

    async def stats(self) -> dict[str, Any]:
        s = self.server.stats().to_dict()
        s.pop("requests", None)
        return s

    def cpu_seconds(self) -> float | None:
        return None  # same process: its CPU is in the client's

    async def aclose(self) -> None:
        self.server.stop()


@asynccontextmanager
async def scripted_environment(server: Any) -> AsyncIterator[Any]:
    """A bench's process pointed at `server` (started here) with a temporary home and a
    dummy key; both are cleaned up after the block."""
    home = tempfile.TemporaryDirectory(prefix="scholarflow-bench-")
    os.environ["SCHOLARFLOW_HOME"] = str(Path(home.name) / "home")
    os.environ["OPENAI_API_KEY"] = "sk-bench-not-a-real-key"
    os.environ.pop("SCHOLARFLOW_MODEL", None)
    server.start()
    os.environ["OPENAI_BASE_URL"] = server.base_url
    try:
        yield server
    finally:
        await server.aclose()
        home.cleanup()
