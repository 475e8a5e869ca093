"""`python -m scholarflow.cli ARGS` as a new process, without paying its imports each time.

A server process imports the third-party libraries the command line uses (langgraph,
langchain, openai, tiktoken, numpy, ...: ~2-3 s of every run) once, then forks one child per
run. Each child is a real, separate process that starts where `python -m` would: it gets
its own stdin, stdout and stderr pipes, environment, working directory, argv (bytes decoded
as the interpreter decodes them), sys.path[0] and exit status (a signal that kills it
included), then runs `scholarflow.cli` as `__main__` with runpy, as `-m` does. No scholarflow
module is imported before the fork: every run imports scholarflow afresh, in its own order,
with its own environment, so module state, import-time reads of the environment and import
cycles are those of a new process. tests/integration/hostile/test_hostile_harness.py checks that a
forked run and a new interpreter see the same things.

What a fork cannot give a run: an interpreter started with other PYTHON*, LC_* or LANG
variables (stdio encoding, locale, flags are set at start-up), other values of the
variables the server's imports looked up (OPENAI_LOG, LANGGRAPH_*, ...: the server reports
them), or environment values that are bytes. `ForkServer.accepts` says no to those, and
the harness starts a real subprocess instead.

The server: `python -m tests.integration.hostile.forkserver SOCKET`. One request per connection: a
length-prefixed pickle (module, argv, env, cwd) with the child's three stdio descriptors
passed along (SCM_RIGHTS). It answers `P<pid>` once forked and `S<wait status>` once the
child has ended; it exits when its stdin reaches EOF (the test process is gone).
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import json
import os
import pickle
import selectors
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# What the command line imports on its way to a run; a module missing here only costs time.
PRELOAD = (
    "langgraph.graph", "langgraph.graph.state", "langgraph.graph.message", "langgraph.types",
    "langgraph.runtime", "langgraph.config", "langgraph.errors", "langgraph.constants",
    "langgraph.channels", "langgraph.checkpoint.base", "langgraph.checkpoint.sqlite.aio",
    "langgraph.checkpoint.postgres.aio", "langchain_core.messages", "langchain_core.runnables",
    "langchain_core.outputs", "langchain_core.language_models.chat_models", "langchain_openai",
    "openai", "httpx", "tiktoken", "numpy", "pydantic", "aiosqlite", "psycopg", "psycopg_pool",
    "redis.asyncio", "elasticsearch", "elastic_transport", "pypdf", "tqdm", "tavily",
    "langgraph_sdk",
)
READY = b"ready"  # then the variables the imports read, as JSON, on one line
START_TIMEOUT = 120.0  # seconds for the server's imports, on a loaded machine


def startup_env(env: Mapping[str, Any]) -> dict[str, Any]:
    """The variables an interpreter reads when it starts (stdio encoding, locale, flags)."""
    return {k: v for k, v in env.items()
            if k.startswith(("PYTHON", "LC_")) or k in ("LANG", "LANGUAGE")}


# --- the server ----------------------------------------------------------------------------

@dataclass
class _Job:
    """What a forked child runs, once out of the server's loop."""

    module: str
    argv: list[bytes]
    env: dict[str, str]
    cwd: str
    fds: list[int]


def _receive(conn: socket.socket) -> tuple[dict[str, Any], list[int]]:
    conn.settimeout(30)  # a client that connects and says nothing does not stop the server
    data, fds, _flags, _addr = socket.recv_fds(conn, 1 << 16, 3)
    try:
        (size,) = struct.unpack("!I", data[:4])
        data = data[4:]
        while len(data) < size:
            chunk = conn.recv(1 << 20)
            if not chunk:
                raise EOFError("the request ended early")
            data += chunk
        if len(fds) != 3:
            raise ValueError(f"{len(fds)} descriptors, not 3")
        conn.settimeout(None)
        return pickle.loads(data), fds
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise


def _preload() -> list[str]:
    """Import PRELOAD; returns the environment variables those imports looked up by name
    (not those a scan of the whole environment went by, such as urllib's *_proxy one)."""
    read: set[str] = set()
    scanned: list[str] = [""]  # the key a scan of os.environ is at
    environ = type(os.environ)
    getitem, contains, iterate = environ.__getitem__, environ.__contains__, environ.__iter__

    def recorded_getitem(self: Any, key: str) -> str:
        if key != scanned[0]:
            read.add(key)
        return getitem(self, key)

    def recorded_contains(self: Any, key: object) -> bool:
        read.add(str(key))
        return contains(self, key)

    def recorded_iter(self: Any) -> Iterator[str]:
        for key in iterate(self):
            scanned[0] = key
            yield key
        scanned[0] = ""

    environ.__getitem__ = recorded_getitem  # type: ignore[method-assign]
    environ.__contains__ = recorded_contains  # type: ignore[method-assign]
    environ.__iter__ = recorded_iter  # type: ignore[method-assign]
    try:
        for name in PRELOAD:
            with contextlib.suppress(Exception):  # a run that needs it will say what is wrong
                importlib.import_module(name)
    finally:
        environ.__getitem__ = getitem  # type: ignore[method-assign]
        environ.__contains__ = contains  # type: ignore[method-assign]
        environ.__iter__ = iterate  # type: ignore[method-assign]
    return sorted(read)


def _serve(path: str) -> _Job | None:
    read = _preload()
    # What is imported now lives as long as any child: out of the collector's sight, a
    # child neither copies those pages (copy-on-write) nor spends ~0.5 s on them at exit.
    # What a child creates is collected, finalized and warned about as in a new process.
    gc.collect()
    gc.freeze()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(128)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    selector.register(0, selectors.EVENT_READ)  # EOF: the test process is gone
    running: dict[int, tuple[int, socket.socket]] = {}  # pidfd -> (pid, connection)
    polled: dict[int, socket.socket] = {}  # pid -> connection, without pidfd_open
    os.write(1, READY + b" " + json.dumps(read).encode() + b"\n")
    while True:
        for key, _events in selector.select(timeout=0.02 if polled else None):
            if key.fileobj is listener:
                conn, _ = listener.accept()
                try:
                    request, fds = _receive(conn)
                except Exception as exc:
                    with contextlib.suppress(OSError):
                        conn.sendall(f"E{type(exc).__name__}: {exc}\n".encode())
                    conn.close()
                    continue
                sys.stdout.flush()
                sys.stderr.flush()
                pid = os.fork()
                if pid == 0:  # the child: leave the server's loop with nothing of it open
                    selector.close()
                    listener.close()
                    for pidfd, (_pid, other) in running.items():
                        os.close(pidfd)
                        other.close()
                    for other in polled.values():
                        other.close()
                    conn.close()
                    return _Job(request["module"], request["argv"], request["env"],
                                request["cwd"], fds)
                for fd in fds:
                    os.close(fd)
                with contextlib.suppress(OSError):  # a client gone: the child is reaped anyway
                    conn.sendall(f"P{pid}\n".encode())
                try:
                    pidfd = os.pidfd_open(pid)
                except (AttributeError, OSError):
                    polled[pid] = conn
                else:
                    running[pidfd] = (pid, conn)
                    selector.register(pidfd, selectors.EVENT_READ)
            elif key.fileobj == 0:
                if not os.read(0, 1 << 16):
                    return None
            else:
                pidfd = key.fd
                pid, conn = running.pop(pidfd)
                selector.unregister(pidfd)
                os.close(pidfd)
                _report(conn, os.waitpid(pid, 0)[1])
        for pid in list(polled):
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                _report(polled.pop(pid), status)


def _report(conn: socket.socket, status: int) -> None:
    with contextlib.suppress(OSError):
        conn.sendall(f"S{status}\n".encode())
    conn.close()


def _run(job: _Job) -> None:
    """In the child: become `python -m MODULE ARGV` run from `cwd` with `env`."""
    import runpy

    for target, fd in zip((0, 1, 2), job.fds, strict=True):
        os.dup2(fd, target)
    for fd in set(job.fds) - {0, 1, 2}:
        os.close(fd)
    os.chdir(job.cwd)
    os.environ.clear()
    os.environ.update(job.env)
    args = [os.fsdecode(a) for a in job.argv]  # as the interpreter decodes argv
    sys.orig_argv = [sys.executable, "-m", job.module, *args]
    sys.argv = ["-m", *args]  # runpy puts the module's path in argv[0], as -m does
    sys.path[0] = os.getcwd()  # -m puts the working directory first
    for name in [m for m in sys.modules if m == "tests" or m.startswith("tests.")]:
        del sys.modules[name]  # the server's own packages: found again from the new path
    importlib.invalidate_caches()  # files added since the server started are found
    runpy._run_module_as_main(job.module, alter_argv=True)  # type: ignore[attr-defined]


# --- the client ----------------------------------------------------------------------------

class ForkServer:
    """A running server; `run` is safe to call from several threads at once."""

    def __init__(self, env: Mapping[str, str], cwd: Path) -> None:
        self.env = dict(env)
        self._dir = tempfile.mkdtemp(prefix="sf-fork-")
        self.path = os.path.join(self._dir, "server.sock")
        self._log = bytearray()
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "tests.integration.hostile.forkserver", self.path],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=self.env, cwd=cwd,
        )
        assert self._proc.stdout is not None and self._proc.stderr is not None
        threading.Thread(target=self._drain, args=(self._proc.stderr,), daemon=True).start()
        ready = _read_line(self._proc.stdout.fileno(), time.monotonic() + START_TIMEOUT)
        if not ready.startswith(READY + b" "):
            self.close()
            raise RuntimeError(f"the fork server did not start: {ready!r}\n{self.log()}")
        # Read by the server's imports: a run that sets them otherwise needs its own imports.
        self.import_env: frozenset[str] = frozenset(json.loads(ready.split(b" ", 1)[1]))
        threading.Thread(target=self._drain, args=(self._proc.stdout,), daemon=True).start()

    def _drain(self, stream: Any) -> None:
        for chunk in iter(lambda: stream.read1(1 << 16), b""):
            self._log += chunk
            del self._log[:-20_000]

    def log(self) -> str:
        return self._log.decode(errors="replace")

    def alive(self) -> bool:
        return self._proc.poll() is None

    def accepts(self, env: Mapping[str, Any]) -> bool:
        """Whether a fork of this server can be a new interpreter given `env`: no bytes, and
        what the interpreter's start-up and the server's imports read is the same."""
        return (self.alive() and all(isinstance(v, str) for v in env.values())
                and startup_env(env) == startup_env(self.env)
                and all(env.get(k) == self.env.get(k) for k in self.import_env))

    def run(self, module: str, argv: Sequence[bytes], env: Mapping[str, str], *,
            stdin: bytes, timeout: float, cwd: Path) -> tuple[int, bytes, bytes]:
        """(exit code, stdout, stderr) of `python -m MODULE ARGV`; like subprocess.run, a
        run over `timeout` is killed and raises subprocess.TimeoutExpired."""
        if not os.path.isdir(cwd):  # where subprocess.run would fail too
            raise FileNotFoundError(f"no such directory: {cwd}")
        deadline = time.monotonic() + timeout
        payload = pickle.dumps({"module": module, "argv": list(argv), "env": dict(env),
                                "cwd": str(cwd)})
        message = struct.pack("!I", len(payload)) + payload
        in_r, in_w = os.pipe()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            try:
                sock.connect(self.path)
                sent = socket.send_fds(sock, [message], [in_r, out_w, err_w])
                sock.sendall(message[sent:])
            except BaseException:
                for fd in (in_w, out_r, err_r):
                    os.close(fd)
                raise
            finally:
                for fd in (in_r, out_w, err_w):
                    os.close(fd)
            lines = _Lines(sock)
            started = lines.next(deadline)
            if not started.startswith("P"):
                for fd in (in_w, out_r, err_r):
                    os.close(fd)
                raise RuntimeError(f"the fork server refused the run: {started}\n{self.log()}")
            pid = int(started[1:])
            out, err, timed_out = _communicate(pid, stdin, in_w, out_r, err_r, deadline)
            ended = lines.next(None if timed_out else deadline + 30)
        if timed_out:
            raise subprocess.TimeoutExpired([sys.executable, "-m", module, *argv], timeout,
                                            output=out, stderr=err)
        if not ended.startswith("S"):
            raise RuntimeError(f"the fork server lost run {pid}: {ended}\n{self.log()}")
        return os.waitstatus_to_exitcode(int(ended[1:])), out, err

    def close(self) -> None:
        if self._proc.poll() is None:
            assert self._proc.stdin is not None
            with contextlib.suppress(OSError):
                self._proc.stdin.close()  # the server exits at EOF
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        with contextlib.suppress(OSError):
            os.unlink(self.path)
        with contextlib.suppress(OSError):
            os.rmdir(self._dir)


class _Lines:
    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._buffer = b""

    def next(self, deadline: float | None) -> str:
        while b"\n" not in self._buffer:
            left = None if deadline is None else max(0.01, deadline - time.monotonic())
            self._sock.settimeout(left)
            try:
                chunk = self._sock.recv(4096)
            except TimeoutError:
                return "timed out"
            if not chunk:
                return "connection closed"
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line.decode()


def _read_line(fd: int, deadline: float) -> bytes:
    data = b""
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while not data.endswith(b"\n"):
            if not selector.select(max(0.0, deadline - time.monotonic())):
                break
            chunk = os.read(fd, 1)
            if not chunk:
                break
            data += chunk
    return data


def _communicate(pid: int, stdin: bytes, in_w: int, out_r: int, err_r: int,
                 deadline: float) -> tuple[bytes, bytes, bool]:
    """subprocess's communicate(): write stdin, read stdout and stderr to their ends."""
    chunks: dict[int, list[bytes]] = {out_r: [], err_r: []}
    timed_out = False
    with selectors.DefaultSelector() as selector:
        if stdin:
            os.set_blocking(in_w, False)
            selector.register(in_w, selectors.EVENT_WRITE)
        else:
            os.close(in_w)
        selector.register(out_r, selectors.EVENT_READ)
        selector.register(err_r, selectors.EVENT_READ)
        offset = 0
        while selector.get_map():
            left = deadline - time.monotonic()
            if left <= 0 and not timed_out:
                timed_out = True
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            for key, _events in selector.select(max(0.01, left) if not timed_out else 1.0):
                fd = key.fd
                if fd == in_w:
                    try:
                        offset += os.write(in_w, stdin[offset:offset + (1 << 16)])
                    except BlockingIOError:
                        continue
                    except BrokenPipeError:  # the child closed its stdin: as communicate()
                        offset = len(stdin)
                    if offset >= len(stdin):
                        selector.unregister(in_w)
                        os.close(in_w)
                    continue
                chunk = os.read(fd, 1 << 16)
                if chunk:
                    chunks[fd].append(chunk)
                else:
                    selector.unregister(fd)
                    os.close(fd)
    return b"".join(chunks[out_r]), b"".join(chunks[err_r]), timed_out


if __name__ == "__main__":
    _job = _serve(sys.argv[1])
    if _job is not None:
        _run(_job)  # the child: its exit status is the run's, as `python -m` would end
