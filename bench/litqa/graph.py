"""One question through the whole graph, as a caller runs it, and what the run returned.

Only public surfaces: `build_graph`, `Context`, the run's input (`query`, `kb`), and the
thread's state afterwards (`graph.aget_state`: the output fields, `recalled`, `plan`).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Run:
    values: dict[str, Any]  # the thread's state after the run
    seconds: float
    error: str | None = None  # the exception or timeout that ended it, or the state's error
    interrupted: bool = False  # stopped for a person's approval (interrupt())
    usage: list[dict[str, Any]] = field(default_factory=list)

    @property
    def answer(self) -> str:
        return str(self.values.get("answer") or "")

    @property
    def calls(self) -> int:
        return len(self.usage)

    @property
    def prompt_tokens(self) -> int:
        return sum(int(u["input_tokens"]) for u in self.usage)

    @property
    def source_docs(self) -> set[str]:
        return {s["doc_id"] for s in self.values.get("sources") or []}


def build(window: int, llm_timeout: float) -> tuple[Any, Any]:
    """The graph with an in-memory checkpointer, and the Context the parts run it with."""
    from langgraph.checkpoint.memory import InMemorySaver

    from scholarflow import Context, build_graph

    # A local model on a busy 2-core machine reads ~50-100 prompt tokens a second: the
    # default first-token wait times out under load.
    context = Context(show_thinking=False, max_context_tokens=window,
                      llm_timeout_seconds=llm_timeout)
    return build_graph(checkpointer=InMemorySaver()), context


async def ask(graph: Any, context: Any, query: str, kb: str, limit: float) -> Run:
    """Run `query` over knowledge base `kb` on a new thread, for at most `limit` seconds."""
    config: Any = {"configurable": {"thread_id": uuid.uuid4().hex}}
    started = time.perf_counter()
    error = None
    try:
        async with asyncio.timeout(limit):
            await graph.ainvoke({"query": query, "kb": kb}, config, context=context)
    except TimeoutError:
        error = f"stopped after {limit:.0f} s"
    except Exception as exc:  # the row says what failed; the next question runs
        error = f"{type(exc).__name__}: {str(exc)[:200]}"
    seconds = time.perf_counter() - started
    snapshot = await graph.aget_state(config)
    values = dict(snapshot.values)
    return Run(values, seconds, error or values.get("error"),
               interrupted=bool(snapshot.interrupts), usage=list(values.get("usage") or []))
