"""What bench/recall.py's speed and quality parts share: the result table, the machine line.

A sibling module of bench/recall.py (split to keep modules under 400 lines);
bench/ is on sys.path when recall.py runs (see there).
"""

from __future__ import annotations

import os
import platform
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


def _params() -> Any:
    from scholarflow.retrieval.kb import RecallParams

    return RecallParams()


async def _timed(awaitable: Any) -> float:
    started = time.perf_counter()
    await awaitable
    return time.perf_counter() - started


def print_table(title: str, rows: Iterable[Row]) -> None:
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


def _machine_line() -> None:
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

