"""The Python API as LangGraph users write scripts: the synchronous `invoke`, `stream` and
`batch`; several event loops one after another (each `asyncio.run`) and a thread with a
loop of its own; a session named without a checkpointer, kept."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.constants import CONFIG_KEY_CHECKPOINTER

from scholarflow import build_graph
from scholarflow.storage.checkpoints import CHECKPOINTS_FILENAME, open_checkpointer, thread_config
from scholarflow.storage.paths import home_path
from tests.conftest import big_paper, paper, small_context, types
from tests.support import FakeOpenAIServer

DIRECT = {"query": "What batch size did they use?", "content": paper("en_sparse_attention.md")}
RECALL = {"query": "What is the attention complexity?", "mode_type": "LITERATURE_QA",
          "content": big_paper()}


def essentials(out: dict[str, Any]) -> tuple[Any, ...]:
    return out["answer"], out["detected_intent"], out["strategy"], out["error"]


def prompt_texts(fake: FakeOpenAIServer) -> list[str]:
    return [str(m["content"]) for m in fake.stats().requests[-1]["messages"]]


async def test_invoke_answers_as_ainvoke(fake_llm: FakeOpenAIServer) -> None:
    graph = build_graph()
    expected = await graph.ainvoke(DIRECT)
    assert expected["answer"] and expected["error"] is None
    calls = fake_llm.stats().chat_calls
    in_a_script = await asyncio.to_thread(graph.invoke, DIRECT)  # a script's main thread
    assert essentials(in_a_script) == essentials(expected)
    # Called from a thread whose loop is running (a notebook cell): it blocks, and works.
    assert essentials(graph.invoke(DIRECT)) == essentials(expected)
    assert fake_llm.stats().chat_calls == 3 * calls  # the same run, each time


async def test_stream_gives_the_custom_events_astream_gives(fake_llm: FakeOpenAIServer) -> None:
    graph = build_graph()
    expected = [e async for e in graph.astream(DIRECT, stream_mode="custom")]
    got = await asyncio.to_thread(lambda: list(graph.stream(DIRECT, stream_mode="custom")))
    assert types(got) == types(expected)
    session = {"session_id": None}  # each run without a session is a new one
    assert {**got[-1], **session} == {**expected[-1], **session}
    assert got[-1]["type"] == "final_answer"
    # Several modes and subgraphs, as LangGraph's own stream gives them.
    parts = await asyncio.to_thread(lambda: list(graph.stream(
        DIRECT, stream_mode=["custom", "values"], subgraphs=True)))
    assert {mode for _ns, mode, _chunk in parts} == {"custom", "values"}


async def test_batch_answers_each_input(fake_llm: FakeOpenAIServer) -> None:
    questions = [f"hello number {i}" for i in range(3)]
    outs = await asyncio.to_thread(build_graph().batch, [{"query": q} for q in questions])
    assert [o["error"] for o in outs] == [None] * 3
    for question, out in zip(questions, outs, strict=True):
        assert question in out["answer"]


async def test_a_stream_left_early_stops_its_run(fake_llm: FakeOpenAIServer) -> None:
    graph = build_graph()

    def first_event() -> dict[str, Any]:
        for event in graph.stream(DIRECT, stream_mode="custom"):
            return dict(event)  # closes the stream: the run is cancelled, not left running
        raise AssertionError("no event")

    assert (await asyncio.to_thread(first_event))["type"] == "thinking_start"
    assert (await asyncio.to_thread(graph.invoke, DIRECT))["answer"]


async def test_two_event_loops_one_after_the_other(fake_llm: FakeOpenAIServer) -> None:
    """A script that asks twice, each with asyncio.run: the model's client, the embeddings
    client and the caches the first loop made must not serve the second."""
    def script() -> list[dict[str, Any]]:
        return [asyncio.run(build_graph().ainvoke(payload, context=small_context()))
                for _ in range(2) for payload in (DIRECT, RECALL)]

    outs = await asyncio.to_thread(script)
    assert [o["error"] for o in outs] == [None] * 4
    assert [o["strategy"] for o in outs] == ["full_content", "chunk_recall"] * 2
    assert all(o["answer"] for o in outs)


async def test_a_thread_with_a_loop_of_its_own(fake_llm: FakeOpenAIServer) -> None:
    graph = build_graph()
    in_thread = asyncio.to_thread(lambda: asyncio.run(graph.ainvoke(DIRECT)))
    here, there = await asyncio.gather(graph.ainvoke(DIRECT), in_thread)
    assert essentials(here) == essentials(there) and here["error"] is None
    assert (await graph.ainvoke(DIRECT))["error"] is None  # and this loop goes on


# --- sessions ------------------------------------------------------------------------------------


def checkpoints_file() -> Path:
    return home_path() / CHECKPOINTS_FILENAME


async def test_a_named_session_is_kept_without_a_checkpointer(fake_llm: FakeOpenAIServer) -> None:
    first = await asyncio.to_thread(build_graph().invoke,
                                    {"query": "My name is Ada.", "session_id": "s1"})
    second = await build_graph().ainvoke({"query": "What is my name?", "session_id": "s1"})
    assert first["session"]["message_count"] == 2
    assert second["session"]["message_count"] == 4
    assert "My name is Ada." in prompt_texts(fake_llm)  # the history reached the model
    # In the command line's store: `scholarflow sessions show s1` shows it.
    async with open_checkpointer() as saver:
        assert await saver.aget_tuple(thread_config("s1")) is not None
        assert await saver.aget_tuple(thread_config("s2")) is None


async def test_a_thread_id_without_a_checkpointer_is_kept_too(fake_llm: FakeOpenAIServer) -> None:
    config: Any = {"configurable": {"thread_id": "t9"}}
    await build_graph().ainvoke({"query": "Remember the word walrus."}, config)
    second = await build_graph().ainvoke({"query": "Which word?"}, config)
    assert second["session"]["session_id"] == "t9"
    assert second["session"]["message_count"] == 4


async def test_no_session_named_stores_nothing(fake_llm: FakeOpenAIServer) -> None:
    out = await build_graph().ainvoke({"query": "hello"})
    assert out["error"] is None and not checkpoints_file().exists()


async def test_a_checkpointer_of_the_callers_is_left_alone(fake_llm: FakeOpenAIServer) -> None:
    """Given one (build_graph's, or as LangGraph server gives `scholarflow.graph:graph` one:
    by copy() or in the config), the thread is the session, and our store is not opened."""
    from scholarflow.graph import graph as served

    config: Any = {"configurable": {"thread_id": "s1"}}
    request = {"query": "hello", "session_id": "s1"}
    saver = InMemorySaver()
    await build_graph(checkpointer=saver).ainvoke(request, config)
    await served.copy(update={"checkpointer": saver}).ainvoke(request, config)
    lent: Any = {"configurable": {"thread_id": "s1", CONFIG_KEY_CHECKPOINTER: saver}}
    out = await served.ainvoke(request, lent)
    assert out["session"]["message_count"] == 6  # all three runs, in the caller's saver
    assert not checkpoints_file().exists()
