"""A scripted OpenAI-compatible server for tests, benchmarks and the offline demo.

The real `ChatOpenAI` / `AsyncOpenAI` clients talk to it unmodified
(`base_url=server.base_url`, any api key). In-process use::

    with FakeOpenAIServer(latency=0.1) as server:
        server.configure(rules=[{"match": "hello", "reply": "hi", "times": 1}])
        ...  # point clients at server.base_url
        assert server.stats().chat_calls == 1

From another process: ``python -m tests.support.fake_openai --port 0``
prints ``fake-openai listening on http://127.0.0.1:PORT/v1`` when ready, and
`POST /_admin/config`, `POST /_admin/reset`, `GET /_admin/stats` script it.

A rule is {match (regex), reply or status, times, role, latency (s, this
rule's own), reasoning (a thought streamed first, in the delta field
reasoning_field: "reasoning_content" or "reasoning"), cut, logprobs}.
Config keys (`configure` and `/_admin/config`): rules, mode ("echo" or
"extractive"), latency (s), fail_every_n, fail_first_n, fail_status,
rate_limit_in_flight (429 for a call arriving while that many admitted calls
are in flight; 0: off), fault_latency (s before an injected failure is
answered; default: latency), retry_after (the 429's Retry-After, default "0"),
serve_at_most (K: calls served at once, the others wait their turn in arrival
order, and leave the queue when their client hangs up, like llama.cpp or Ollama
with K parallel slots; 0: no limit), prefill_tokens_per_second (prompt reading
after the latency, before the first token; 0: none), tokens_per_second (reply
pacing; 0: the whole reply at once). Stats count `queued`, `max_queued` and
`queue_wait_seconds`; each entry of `requests` has model, messages, max_tokens
(max_completion_tokens if sent, else max_tokens), max_tokens_field (which of the
two was sent, or None), stream and temperature.
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import sys
import threading
import time
from types import TracebackType
from typing import Any

import uvicorn

from tests.support.fake_openai_app import build_app
from tests.support.fake_openai_state import MODES, FakeState, FakeStats, Mode

__all__ = ["FakeOpenAIServer", "FakeStats", "main"]

_START_TIMEOUT = 10.0


def _uvicorn_config(state: FakeState, host: str, port: int) -> uvicorn.Config:
    return uvicorn.Config(
        build_app(state),
        host=host,
        port=port,
        # No access log: benchmarks send hundreds of requests. log_config=None
        # keeps uvicorn from rewriting the logging setup of the test process.
        log_config=None,
        log_level="warning",
        access_log=False,
        lifespan="off",
        timeout_graceful_shutdown=2,
    )


def _bound_port(server: uvicorn.Server) -> int:
    # With port 0 the OS picks the port; the listening socket knows which.
    for listener in getattr(server, "servers", []):
        for sock in listener.sockets:
            return int(sock.getsockname()[1])
    raise RuntimeError("fake-openai: server has no listening socket")


class FakeOpenAIServer:
    """The fake server on a daemon thread with its own event loop.

    `mode` and `latency` are the defaults that `reset()` goes back to.
    """

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        mode: Mode = "echo",
        latency: float = 0.0,
    ) -> None:
        self.host = host
        self.port = port
        self.state = FakeState(mode=mode, latency=latency)
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise RuntimeError("fake-openai: call start() first")
        return f"http://{self.host}:{self.port}/v1"

    def start(self) -> FakeOpenAIServer:
        """Start serving; returns once the server accepts connections."""
        if self._server is not None:
            return self
        server = uvicorn.Server(_uvicorn_config(self.state, self.host, self.port))
        thread = threading.Thread(target=server.run, name="fake-openai", daemon=True)
        thread.start()
        deadline = time.monotonic() + _START_TIMEOUT
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                server.should_exit = True
                raise RuntimeError(f"fake-openai: could not start on {self.host}:{self.port}")
            time.sleep(0.005)
        self._server, self._thread = server, thread
        self.port = _bound_port(server)
        # `started` is set once listening; one real connect proves it from outside.
        with socket.create_connection((self.host, self.port), timeout=_START_TIMEOUT):
            pass
        return self

    def stop(self) -> None:
        server, thread = self._server, self._thread
        if server is None or thread is None:
            return
        server.should_exit = True
        thread.join(timeout=_START_TIMEOUT)
        self._server = self._thread = None

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def configure(self, **config: Any) -> None:
        """Change rules, mode, latency or faults; raises ValueError on a bad key or value."""
        self.state.configure(**config)

    def reset(self) -> None:
        """Clear rules, faults, stats and log; mode and latency go back to the constructor's."""
        self.state.reset()

    def stats(self) -> FakeStats:
        """A snapshot: later calls do not change it."""
        return self.state.stats()


async def _serve_foreground(server: uvicorn.Server, host: str) -> None:
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            await task  # startup failed: surface its error or exit
            return
        await asyncio.sleep(0.01)
    print(f"fake-openai listening on http://{host}:{_bound_port(server)}/v1", flush=True)
    await task


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.support.fake_openai",
        description="Run the scripted fake OpenAI server in the foreground.",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765, help="0 picks a free port")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds before each reply")
    parser.add_argument("--mode", choices=MODES, default="echo")
    args = parser.parse_args(argv)
    state = FakeState(mode=args.mode, latency=args.latency)
    server = uvicorn.Server(_uvicorn_config(state, args.host, args.port))
    asyncio.run(_serve_foreground(server, args.host))
    return 0


if __name__ == "__main__":
    sys.exit(main())
