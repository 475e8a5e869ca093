"""Checkpoint bytes per turn of a long session: does a session's storage grow by the turn?

    .venv/bin/python bench/checkpoint_growth.py                 # 100 turns, SQLite
    .venv/bin/python bench/checkpoint_growth.py --turns 200 --window 8000

Runs the real graph (chat turns, and a turn with a 200 kB paper at turns 13, 38, 63 and 88)
against the scripted OpenAI server in-process, checkpointed in a fresh SQLite
file, and prints a table: the bytes the checkpoints and writes tables grew by at
turn 10 and at the last turn, the mean per turn over the whole session, the
messages in the thread and how many of them are compressed. `--window` sets
max_context_tokens (with small reserves) so that compression happens.

What keeps a turn's cost flat: `messages` and `document_texts` are DeltaChannels
(state.py), so a checkpoint stores the messages and texts its step wrote, not the
whole conversation again; every 100 writes of `messages` LangGraph stores one full
snapshot, whose cost is spread over those 100 writes.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

# The checkout: `bench.*` and tests/support import from it, wherever this runs from.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _table_bytes(path: Path) -> int:
    conn = sqlite3.connect(path)
    try:
        rows = [conn.execute(f"SELECT coalesce(sum(length({col})), 0) FROM {table}").fetchone()[0]
                for table, col in (("checkpoints", "checkpoint"), ("checkpoints", "metadata"),
                                   ("writes", "value"))]
    finally:
        conn.close()
    return int(sum(rows))


async def run(turns: int, window: int) -> list[tuple[str, str]]:
    import aiosqlite
    from langchain_core.runnables import RunnableConfig
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    from scholarflow import Context, build_graph
    from scholarflow.sessions.conversation import is_compressed
    from scholarflow.state import InputState
    from tests.support.fake_openai import FakeOpenAIServer

    home = Path(tempfile.mkdtemp(prefix="sf-bench-"))
    os.environ["SCHOLARFLOW_HOME"] = str(home)
    paper = ("Sparse attention keeps the top-k keys of every query. " * 3_700)[:200_000]
    grown: dict[int, int] = {}
    with FakeOpenAIServer() as server:
        os.environ["OPENAI_BASE_URL"] = server.base_url
        os.environ["OPENAI_API_KEY"] = "sk-bench"
        ctx = Context(max_context_tokens=window, reserved_answer_tokens=500,
                      system_tokens_estimate=300, show_thinking=False)
        path = home / "checkpoints.sqlite"
        async with aiosqlite.connect(path) as conn:
            graph = build_graph(checkpointer=AsyncSqliteSaver(conn))
            config: RunnableConfig = {"configurable": {"thread_id": "long-session"}}
            before = 0
            started = time.perf_counter()
            for turn in range(1, turns + 1):
                request: InputState = {"query": f"Turn {turn}: what do you think of "
                                                "sparse attention for long documents?"}
                if turn % 25 == 13:  # turns 10 and 100 stay chat turns, to compare
                    request["document_contents"] = {"paper": paper}
                await graph.ainvoke(request, config, context=ctx)
                await conn.commit()
                size = _table_bytes(path)
                grown[turn] = size - before
                before = size
            seconds = time.perf_counter() - started
            state = await graph.aget_state(config)
    messages = state.values["messages"]
    total = sum(grown.values())
    chat = [b for t, b in grown.items() if t % 25 != 13]
    last = max(grown)
    return [
        ("turns", str(turns)),
        ("max_context_tokens", str(window)),
        ("bytes at turn 10", f"{grown.get(10, 0):,}"),
        (f"bytes at turn {last - 1}", f"{grown[last - 1]:,}"),
        (f"turn {last - 1} / turn 10", f"{grown[last - 1] / max(grown.get(10, 1), 1):.2f}"),
        (f"bytes at turn {last} (a full snapshot of messages every 100 writes)",
         f"{grown[last]:,}"),
        ("median chat turn (bytes)", f"{statistics.median(chat):,.0f}"),
        ("mean bytes per turn", f"{total // turns:,}"),
        ("largest turn (bytes)",
         f"{max(grown.values()):,} (turn {max(grown, key=grown.__getitem__)})"),
        ("a turn with the 200 kB paper (bytes)", f"{grown.get(13, 0):,}"),
        ("checkpoint bytes in all", f"{total:,}"),
        ("messages in the thread", str(len(messages))),
        ("of them compressed", str(sum(1 for m in messages if is_compressed(m)))),
        ("seconds per turn", f"{seconds / turns:.3f}"),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument("--window", type=int, default=3000, help="max_context_tokens")
    args = parser.parse_args()
    rows = asyncio.run(run(args.turns, args.window))
    print("| metric | value |\n|---|---|")
    for name, value in rows:
        print(f"| {name} | {value} |")


if __name__ == "__main__":
    main()
