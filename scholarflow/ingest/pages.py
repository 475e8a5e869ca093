"""Page numbers as a person reads them in a message."""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["page_ranges"]


def page_ranges(pages: Iterable[int]) -> str:
    """1, 2, 3, 5 -> "1-3, 5"."""
    runs: list[list[int]] = []
    for page in sorted(set(pages)):
        if runs and page == runs[-1][-1] + 1:
            runs[-1].append(page)
        else:
            runs.append([page])
    return ", ".join(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]) for run in runs)
