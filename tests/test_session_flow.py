"""Sessions through the graph: history injection, compression, unknown ids, secrets."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver

from scholarflow import Context, build_graph
from scholarflow.sessions.models import MessageType
from scholarflow.sessions.registry import session_store
from scholarflow.testing import FakeOpenAIServer
from scholarflow.tokens import count_message_tokens
from tests.conftest import INTENT_RULE, paper, run_graph


def _contents(request: dict[str, Any]) -> list[str]:
    return [str(m["content"]) for m in request["messages"]]


async def test_history_windows_per_stage(fake_llm: FakeOpenAIServer) -> None:
    out, _ = await run_graph({"query": "turn 0"})
    session = out["session_id"]
    for i in range(1, 5):
        await run_graph({"query": f"turn {i}", "session_id": session})
    # chat sees all active messages
    chat = _contents(fake_llm.stats().requests[-1])
    assert all(any(f"turn {i}" == c for c in chat) for i in range(5))
    # answer generation: the last 3 rounds; intent recognition: the last 2
    fake_llm.configure(rules=[{"match": INTENT_RULE, "reply": '{"intent": "LITERATURE_QA"}'}])
    await run_graph({"query": "Thoughts?", "session_id": session,
                     "content": paper("en_sparse_attention.md")})
    intent_req, answer_req = fake_llm.stats().requests[-2:]
    intent_text = _contents(intent_req)[0]
    assert "turn 4" in intent_text and "turn 3" in intent_text and "turn 2" not in intent_text
    answer = _contents(answer_req)
    assert "turn 2" in answer and "turn 1" not in answer and answer[-1] == "Thoughts?"


async def test_long_session_is_compressed(fake_llm: FakeOpenAIServer) -> None:
    fake_llm.configure(rules=[{"match": "Summarise the conversation below",
                               "reply": "SUMMARY OF EARLIER TURNS"}])
    ctx = Context(max_context_tokens=12_000, reserved_answer_tokens=1_000,
                  system_tokens_estimate=500)
    out, _ = await run_graph({"query": "start"}, ctx)
    session = out["session_id"]
    store = session_store()
    for i in range(12):
        await run_graph({"query": f"question {i} " + "words " * 900, "session_id": session}, ctx)
        info = await store.get(session)
        assert info is not None and info.total_token_count <= ctx.max_context_tokens * 0.8
    limit = ctx.max_context_tokens - ctx.reserved_answer_tokens
    assert max(count_message_tokens(_contents(r)) for r in fake_llm.stats().requests) <= limit
    messages = await store.messages(session)
    active = await store.messages(session, active_only=True)
    assert active[0].type is MessageType.COMPRESSION
    assert active[0].content == "SUMMARY OF EARLIER TURNS"
    assert any(m.compressed for m in messages)
    # the next chat prompt starts its history with the summary
    await run_graph({"query": "what did we discuss?", "session_id": session}, ctx)
    chat = _contents(fake_llm.stats().requests[-1])
    assert chat[1].startswith("Summary of the earlier conversation:")


async def test_unknown_session_is_an_error_and_creates_nothing(fake_llm: FakeOpenAIServer) -> None:
    out, _events = await run_graph({"query": "hi", "session_id": "nope"})
    assert out["error"] == "no session 'nope'; see `scholarflow sessions list`"
    assert await session_store().list() == []
    assert fake_llm.stats().chat_calls == 0


async def test_api_key_never_reaches_state_checkpoints_events_or_sessions(
    fake_llm: FakeOpenAIServer, tmp_path: Path
) -> None:
    secret = "sk-secret-do-not-store-7f3a"
    ctx = Context(openai_api_key=secret, openai_api_base=fake_llm.base_url)
    saver = InMemorySaver()
    graph = build_graph(checkpointer=saver)
    config = {"configurable": {"thread_id": "t1"}}
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
    db = (tmp_path / "home" / "scholarflow.db").read_bytes()
    assert secret.encode() not in db
    state = await graph.aget_state(config)
    assert state.values["answer"] and json.dumps(state.values, default=str).find(secret) == -1
