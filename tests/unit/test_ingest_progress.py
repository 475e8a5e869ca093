"""`ingest` without a terminal: a progress line on stderr at most every 10 s, result lines
on stdout as ever."""

from __future__ import annotations

import json

import pytest

from scholarflow.cli import kb as cli_kb
from scholarflow.ingest.pipeline import IngestResult


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def added(name: str, chunks: int) -> IngestResult:
    return IngestResult(name, "added", doc_id=name, title=name, chunks=chunks, tokens=10 * chunks)


def test_progress_lines_are_at_most_every_ten_seconds(capsys: pytest.CaptureFixture[str]) -> None:
    clock = Clock()
    progress = cli_kb._Progress(clock)
    progress.start(4)  # pytest's stderr is no terminal
    clock.now += 4
    progress.embedded(30)
    progress.result(added("a.pdf", 30))
    clock.now += 7  # 11 s in: one line
    progress.embedded(20)  # half of b.pdf embedded
    clock.now += 1
    progress.embedded(5)  # 12 s: not yet 10 s since the last line
    clock.now += 10
    progress.result(added("b.pdf", 40))
    progress.close()
    out, err = capsys.readouterr()
    assert [json.loads(line)["source"] for line in out.splitlines()] == ["a.pdf", "b.pdf"]
    assert err.splitlines() == [
        "ingest: 1/4 files, 50 chunks, 4.5 chunks/s, about 33 s left",
        "ingest: 2/4 files, 70 chunks, 3.2 chunks/s, about 22 s left",
    ]


def test_no_line_before_ten_seconds(capsys: pytest.CaptureFixture[str]) -> None:
    clock = Clock()
    progress = cli_kb._Progress(clock)
    progress.start(1)
    clock.now += 9
    progress.result(added("a.pdf", 3))
    out, err = capsys.readouterr()
    assert err == "" and len(out.splitlines()) == 1
