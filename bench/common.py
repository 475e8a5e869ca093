"""What the benchmarks share: the result table, the machine line, timing helpers."""

from __future__ import annotations

import os
import platform
import resource
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass
class Row:
    metric: str
    value: str
    target: str = ""
    ok: bool | None = None


def default_params() -> Any:
    """Search parameters at the product's defaults (`RecallParams()`)."""
    from scholarflow.retrieval.kb import RecallParams

    return RecallParams()


async def timed(awaitable: Any) -> float:
    """Seconds `awaitable` took."""
    started = time.perf_counter()
    await awaitable
    return time.perf_counter() - started


def cpu_seconds() -> float:
    """CPU seconds of this process so far (user + system, every thread)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    return own.ru_utime + own.ru_stime


def print_table(title: str, rows: Iterable[Row]) -> None:
    """A Markdown table (metric | value | target | ok?); MISSED lists the targets missed."""
    rows = list(rows)
    print(f"## {title}\n")
    print("| metric | value | target | ok? |")
    print("|---|---|---|---|")
    for r in rows:
        ok = "" if r.ok is None else ("ok" if r.ok else "MISSED")
        print(f"| {r.metric} | {r.value} | {r.target} | {ok} |")
    missed = [r.metric.strip() for r in rows if r.ok is False]
    print()
    if missed:
        print("MISSED: " + "; ".join(missed))


def machine_line() -> None:
    """The cores, CPU and load the figures were measured with."""
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as info:
            cpu = next(line.split(":", 1)[1].strip() for line in info
                       if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    print(f"\nmachine: {os.cpu_count()} cores ({cpu}), load average {load}, Python "
          f"{platform.python_version()}, numpy {np.__version__}. One run on a noisy 2-core "
          "machine shared with other work: expect +-20% between runs.")
