"""A part's table: one column per half (tuning, checking) and one for both.

Each part keeps one record per question (anything with a `.q`: its Question) and a
`summarise` function that turns a list of records into (metric, value) rows; the
rows must be the same for any list, the empty one included.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from statistics import median
from typing import Any, Protocol, TypeVar

from bench.litqa.questions import HALF_NAMES, HALVES, Question


class Record(Protocol):
    q: Question


R = TypeVar("R", bound=Record)
Rows = list[tuple[str, str]]


def share(hits: int, n: int) -> str:
    return f"{hits}/{n} = {hits / n:.2f}" if n else "-"


def p50_max(values: Sequence[float], fmt: str = ",.0f") -> str:
    return f"{median(values):{fmt}} / {max(values):{fmt}}" if values else "-"


def print_halves(title: str, half: str, records: Sequence[R],
                 summarise: Callable[[list[R]], Rows], note: str = "") -> None:
    """The Markdown table of `records`, per half as `half` asks (tune, check or all)."""
    columns: list[tuple[str, list[R]]] = [
        (HALF_NAMES[h], [r for r in records if r.q.half == h])
        for h in HALVES if half in (h, "all")]
    columns = [c for c in columns if c[1]]  # a question file of our own is all tuning
    if half == "all" and len(columns) > 1:
        columns.append(("all", list(records)))
    tables = [summarise(rs) for _, rs in columns]
    print(f"## {title}\n")
    print("| metric | " + " | ".join(f"{name} ({len(rs)})" for name, rs in columns) + " |")
    print("|---|" + "---|" * len(columns))
    for i, (metric, _) in enumerate(tables[0]):
        print(f"| {metric} | " + " | ".join(t[i][1] for t in tables) + " |")
    if note:
        print(f"\n{note}")
    print()


def progress(q: Question, text: str) -> None:
    """One line per question on stderr, as it finishes: long runs show where they are."""
    import sys

    print(f"q{q.n} ({HALF_NAMES[q.half]}): {text}", file=sys.stderr, flush=True)


def values(records: Sequence[Any], name: str) -> list[Any]:
    return [getattr(r, name) for r in records]
