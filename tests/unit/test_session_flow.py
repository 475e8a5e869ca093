"""Sessions through the graph: the thread is the session. History injection, compression,
load or create, secrets."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver

from scholarflow import Context, build_graph
from scholarflow.graph import ScholarflowGraph
from scholarflow.nodes.common import question_turn
from scholarflow.sessions.conversation import as_session_messages
from scholarflow.sessions.models import MessageType
from scholarflow.tokens import count_message_tokens
from tests.conftest import INTENT_RULE, paper
from tests.support import FakeOpenAIServer


def _contents(request: dict[str, Any]) -> list[str]:
    return [str(m["content"]) for m in request["messages"]]


class Thread:
    """One session: a thread of a graph with an in-memory checkpointer."""

    def __init__(self, thread_id: str = "t1") -> None:
        self.graph: ScholarflowGraph = build_graph(checkpointer=InMemorySaver())
        self.config: Any = {"configurable": {"thread_id": thread_id}}

    async def ask(self, payload: dict[str, Any], ctx: Context | None = None
                  ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        events = [e async for e in self.graph.astream(payload, self.config, context=ctx,
                                                      stream_mode="custom")]
        return dict((await self.graph.aget_state(self.config)).values), events


async def test_history_windows_per_stage(fake_llm: FakeOpenAIServer) -> None:
    thread = Thread()
    for i in range(5):
        await thread.ask({"query": f"turn {i}"})
    # chat sees all active messages, then the question (with its language reminder)
    chat = _contents(fake_llm.stats().requests[-1])
    assert all(any(f"turn {i}" == c for c in chat) for i in range(4))
    assert chat[-1] == question_turn("turn 4")
    # answer generation: the last 3 rounds; intent recognition: the last 2
    fake_llm.configure(rules=[{"match": INTENT_RULE, "reply": '{"intent": "LITERATURE_QA"}'}])
    await thread.ask({"query": "Thoughts?", "content": paper("en_sparse_attention.md")})
    intent_req, answer_req = fake_llm.stats().requests[-2:]
    intent_text = _contents(intent_req)[0]
    assert "turn 4" in intent_text and "turn 3" in intent_text and "turn 2" not in intent_text
    answer = _contents(answer_req)
    assert "turn 2" in answer and "turn 1" not in answer
    assert answer[-1] == question_turn("Thoughts?")


async def test_long_session_is_compressed(fake_llm: FakeOpenAIServer) -> None:
    fake_llm.configure(rules=[{"match": "Summarise the conversation below",
                               "reply": "SUMMARY OF EARLIER TURNS"}])
    ctx = Context(max_context_tokens=12_000, reserved_answer_tokens=1_000,
                  system_tokens_estimate=500)
    thread = Thread()
    await thread.ask({"query": "start"}, ctx)
    for i in range(12):
        values, _ = await thread.ask({"query": f"question {i} " + "words " * 900}, ctx)
        assert values["session"]["total_token_count"] <= ctx.max_context_tokens * 0.8
    limit = ctx.max_context_tokens - ctx.reserved_answer_tokens
    assert max(count_message_tokens(_contents(r)) for r in fake_llm.stats().requests) <= limit
    messages = as_session_messages(values["messages"])
    active = [m for m in messages if not m.compressed]
    assert active[0].type is MessageType.COMPRESSION
    assert active[0].content == "SUMMARY OF EARLIER TURNS"
    assert any(m.compressed for m in messages)
    assert values["session"]["message_count"] == len(messages)
    # the next chat prompt starts its history with the summary
    await thread.ask({"query": "what did we discuss?"}, ctx)
    chat = _contents(fake_llm.stats().requests[-1])
    assert chat[1].startswith("Summary of the earlier conversation:")


async def test_an_unknown_thread_starts_a_session_with_its_id(fake_llm: FakeOpenAIServer) -> None:
    thread = Thread("brand-new")
    values, events = await thread.ask({"query": "hi"})
    assert values["session"]["session_id"] == "brand-new"
    assert values["session"]["message_count"] == 2
    init = next(e for e in events if e["type"] == "node_complete"
                and e.get("node") == "request_init")
    assert init["new_session"] is True and init["session_id"] == "brand-new"
    values, events = await thread.ask({"query": "again", "session_id": "brand-new"})
    init = next(e for e in events if e["type"] == "node_complete"
                and e.get("node") == "request_init")
    assert init["new_session"] is False and values["session"]["message_count"] == 4


async def test_api_key_never_reaches_state_checkpoints_events_or_sessions(
    fake_llm: FakeOpenAIServer, tmp_path: Path
) -> None:
    secret = "sk-secret-do-not-store-7f3a"
    ctx = Context(openai_api_key=secret, openai_api_base=fake_llm.base_url)
    saver = InMemorySaver()
    graph = build_graph(checkpointer=saver)
    config: Any = {"configurable": {"thread_id": "t1"}}
    events = []
    async for chunk in graph.astream(
        {"query": "Summarize this paper", "content": paper("en_sparse_attention.md")},
        config, context=ctx, stream_mode=["custom", "values", "updates"], subgraphs=True,
    ):
        events.append(chunk)
    dumped = repr(events) + repr(list(saver.storage.items())) + repr(list(saver.writes.items()))
    history = [s async for s in graph.aget_state_history(config)]
    dumped += repr(history)
    assert secret not in dumped
    for path in (tmp_path / "home").rglob("*"):  # the summary cache, and whatever else
        assert not path.is_file() or secret.encode() not in path.read_bytes(), path
    state = await graph.aget_state(config)
    assert state.values["answer"] and json.dumps(state.values, default=str).find(secret) == -1
