"""A failed run raises its error even when the exception LangGraph handled is gone.

LangGraph remembers the exceptions it routed to an error handler by id() only
(graph/handlers.py): once one is freed, a later exception at the same address is
taken as handled, and the run ends as if it had succeeded. These tests free what
they can and put session_save's exception at a freed handled exception's address.
"""

from __future__ import annotations

import copy
import gc
import uuid
import weakref
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from scholarflow import build_graph
from scholarflow.errors import FatalLLMError
from scholarflow.graph import handlers
from scholarflow.nodes import errors, guard
from tests.conftest import SUMMARY_RULE, paper, run_graph
from tests.support import FakeOpenAIServer

MAX_COPIES = 200_000  # new exceptions tried for the freed address (a few hundred suffice)


class _Probe:
    """Records what handle_node_error handled and, when session_save fails, whether it is
    still alive; then gives session_save's exception the handled one's id if it is free."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.handled: list[tuple[str, int, weakref.ref[BaseException]]] = []
        self.alive_at_session_save: list[bool] = []
        self.reused: list[bool] = []
        failure_update, scrubbed = errors.failure_update, guard.scrubbed

        def recording(node: str, exc: BaseException) -> dict[str, Any]:
            self.handled.append((node, id(exc), weakref.ref(exc)))
            return failure_update(node, exc)

        def colliding(node: str, exc: Exception, runtime: Any = None) -> Exception:
            failure = scrubbed(node, exc, runtime)
            if node != "session_save" or not self.handled:
                return failure
            gc.collect()  # what only a cycle keeps is freed now, not at some later moment
            _, target, ref = self.handled[-1]
            self.alive_at_session_save.append(ref() is not None)
            held = []  # each copy is kept, so the next one takes another free address
            for _ in range(MAX_COPIES):
                twin = copy.copy(failure)
                if id(twin) == target:
                    self.reused.append(True)
                    return twin
                held.append(twin)
            self.reused.append(False)
            return failure

        monkeypatch.setattr(errors, "failure_update", recording)
        monkeypatch.setattr(guard, "scrubbed", colliding)


async def test_a_failed_run_raises_though_its_handled_error_was_collected(
    fake_llm: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake_llm.configure(rules=[{"match": ".*", "status": 400}])  # fatal: not retried
    probe = _Probe(monkeypatch)
    graph = build_graph(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": uuid.uuid4().hex}}
    # answer_generation fails (handled: node_error, then session_save); session_save raises.
    with pytest.raises(FatalLLMError, match="400"):
        await graph.ainvoke({"query": "What learning rate did they use?",
                             "content": paper("en_sparse_attention.md")}, config)
    assert [node for node, _, _ in probe.handled] == ["answer_generation"]
    assert probe.alive_at_session_save == [True]  # kept until the run ends
    assert probe.reused == [False]  # so no new exception could take its id
    state = await graph.aget_state(config)
    assert state.next == ("session_save",)  # the run stopped in its failing node
    # Once the run is over, nothing holds it any more.
    gc.collect()
    assert probe.handled[-1][2]() is None


async def test_a_subgraph_handler_keeps_its_error_in_the_runs_list(
    fake_llm: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake_llm.configure(rules=[
        {"match": SUMMARY_RULE + ".*BROKEN", "status": 400},
        {"match": SUMMARY_RULE, "reply": "fine summary"},
        {"match": "summarise a set", "reply": "ANSWER"},
    ])
    lists: list[list[BaseException] | None] = []
    kept_errors = handlers.kept_errors

    def spying() -> list[BaseException] | None:
        lists.append(kept_errors())
        return lists[-1]

    monkeypatch.setattr(handlers, "kept_errors", spying)
    docs = {"a": "# A\n\nalpha", "b": "# BROKEN\n\nbeta", "c": "# C\n\ngamma"}
    out, _ = await run_graph({"query": "Summarize these papers", "document_contents": docs})
    assert out["answer"] == "ANSWER"
    # summary_failed, inside document_summary, got the run's list through the config.
    (kept,) = lists
    assert kept is not None and [type(e) for e in kept] == [FatalLLMError]
