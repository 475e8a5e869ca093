"""What a process started as `python -m tests.integration.hostile.process_probe ARGS` finds when it
starts: printed as one JSON line, for test_hostile_harness.py to compare a forked run with
a new interpreter. `ARGS`: `exit N`, `raise`, `kill`, `sleep S` end it that way after printing."""

from __future__ import annotations

import json
import locale
import logging
import os
import signal
import sys
import threading
import time
from typing import Any


def _stream(stream: Any) -> dict[str, Any]:
    return {"encoding": stream.encoding, "errors": stream.errors,
            "line_buffering": stream.line_buffering, "write_through": stream.write_through,
            "isatty": stream.isatty(), "seekable": stream.seekable(), "fileno": stream.fileno()}


def facts() -> dict[str, Any]:
    handlers = {name: str(signal.getsignal(getattr(signal, name)))
                for name in ("SIGINT", "SIGTERM", "SIGPIPE", "SIGCHLD", "SIGHUP", "SIGXFSZ")}
    return {
        "argv": [ascii(a) for a in sys.argv[1:]],
        "argv0": sys.argv[0],
        "orig_argv": [ascii(a) for a in sys.orig_argv[1:]],
        "main": sys.modules["__main__"].__spec__.name,  # type: ignore[union-attr]
        "path0": sys.path[0],
        "cwd": os.getcwd(),
        "env": dict(os.environ),
        "stdin": _stream(sys.stdin), "stdout": _stream(sys.stdout), "stderr": _stream(sys.stderr),
        "stdin_bytes": ascii(sys.stdin.buffer.read()),
        "fs_encoding": [sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()],
        "locale": locale.setlocale(locale.LC_CTYPE),
        "flags": str(sys.flags),
        "dont_write_bytecode": sys.dont_write_bytecode,
        "signals": handlers,
        "threads": threading.active_count(),
        "root_log_handlers": len(logging.getLogger().handlers),
        "scholarflow_loaded": sorted(m for m in sys.modules if m.split(".")[0] == "scholarflow"),
        "pgrp_is_parents": os.getpgrp() == int(os.environ.get("PROBE_PGRP", "-1")),
        "umask": os.umask(0o022),
        "open_fds": sorted(int(fd) for fd in os.listdir("/proc/self/fd") if int(fd) > 2),
    }


def main() -> None:
    found = facts()
    found["open_fds"] = len(found["open_fds"]) - 1  # listdir's own descriptor
    print(json.dumps(found, sort_keys=True), flush=True)
    print("on stderr: \udcff", file=sys.stderr)  # backslashreplace, as on any stderr
    action = sys.argv[1:2]
    if action == ["exit"]:
        sys.exit(int(sys.argv[2]))
    if action == ["raise"]:
        raise RuntimeError("raised by the probe")
    if action == ["kill"]:
        os.kill(os.getpid(), signal.SIGKILL)
    if action == ["sleep"]:
        time.sleep(float(sys.argv[2]))


if __name__ == "__main__":
    main()
