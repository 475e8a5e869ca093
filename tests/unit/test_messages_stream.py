"""`messages` stream mode shows the answer and nothing else, and it adds up to the saved answer.

What Studio's chat view and agent-chat-ui read (`messages-tuple` on the server is
`messages` in process): the question, then the answer's tokens, one message whose
id the thread's AI message keeps. Intent JSON, plans, summaries and partial
reports are internal model calls (tagged `nostream`) and never appear.
"""

from __future__ import annotations

import uuid
from typing import Any, cast

import pytest
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from scholarflow import Context, build_graph
from scholarflow.errors import LLMError
from scholarflow.events import EVENT_TYPES
from tests.conftest import INTENT_RULE, SUMMARY_RULE, paper
from tests.support import FakeOpenAIServer

ANSWER_NODES = {"answer_generation", "simple_interaction"}
CHAT_RULE = "scholarflow, an assistant"  # SIMPLE_INTERACTION_PROMPT
SUBQ_RULE = "search questions that together retrieve"  # SUB_QUESTION_GENERATION_PROMPT
CITED_RULE = "numbered passages recalled"  # CITED_MATERIAL_PROMPT
INTENT_JSON = '{"intent": "PAPER_REVIEW", "confidence": 0.9, "reason": "INTENT-SECRET"}'


class Run:
    """One run streamed in the given modes (subgraphs included), and the thread after it."""

    def __init__(self) -> None:
        self.messages: list[tuple[BaseMessage, dict[str, Any]]] = []
        self.custom: list[dict[str, Any]] = []
        self.values: dict[str, Any] = {}
        self.state: dict[str, Any] = {}

    @property
    def ai_chunks(self) -> list[tuple[BaseMessage, dict[str, Any]]]:
        return [(m, meta) for m, meta in self.messages if isinstance(m, AIMessage | AIMessageChunk)]

    @property
    def final(self) -> AIMessage:
        message = self.state["messages"][-1]
        assert isinstance(message, AIMessage)
        return message


async def stream(payload: dict[str, Any], context: Context | None = None,
                 modes: tuple[str, ...] = ("messages",), subgraphs: bool = True) -> Run:
    graph = build_graph(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": str(uuid.uuid4())}}
    run = Run()
    stream_mode: Any = list(modes)
    async for part in graph.astream(cast(Any, payload), config, context=context,
                                    stream_mode=stream_mode, subgraphs=subgraphs):
        ns, mode, chunk = cast(tuple[tuple[str, ...], str, Any],
                               part if subgraphs else ((), *part))
        if mode == "messages":
            run.messages.append(chunk)
        elif mode == "custom":
            run.custom.append(chunk)
        elif mode == "values" and not ns:
            run.values = chunk
    run.state = dict((await graph.aget_state(config)).values)
    return run


def assert_only_the_answer_streams(run: Run, *, hidden: tuple[str, ...] = ()) -> str:
    """The stream holds the question and the answer's chunks, which add up to the answer."""
    assert run.state.get("error") is None, run.state.get("error")
    for message, meta in run.messages:
        if isinstance(message, HumanMessage):
            assert meta["langgraph_node"] == "request_init"
        else:
            assert isinstance(message, AIMessageChunk), message
            assert meta["langgraph_node"] in ANSWER_NODES, (meta["langgraph_node"], message)
    streamed_text = "".join(m.text for m, _ in run.ai_chunks)
    for text in hidden:
        assert text not in streamed_text
    final = run.final
    assert final.text == run.state["answer"] == streamed_text
    assert {m.id for m, _ in run.ai_chunks} == {final.id} == {run.state["answer_id"]}
    return streamed_text


async def test_chat_streams_only_the_reply(fake_llm: FakeOpenAIServer) -> None:
    fake_llm.configure(rules=[{"match": CHAT_RULE, "reply": "Hello! I can help you today."}])
    run = await stream({"messages": [{"type": "human", "content": "hi there"}]})
    assert assert_only_the_answer_streams(run) == "Hello! I can help you today."
    assert len(run.ai_chunks) > 1  # token by token, not one message at the end
    meta = run.final.response_metadata
    assert (meta["intent"], meta["strategy"], meta["sources"]) == ("SIMPLE_INTERACTION", None, [])
    assert [type(m) for m in run.state["messages"]] == [HumanMessage, AIMessage]


async def test_chat_web_note_streams_as_part_of_the_answer(
    fake_llm: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("TAVILY_API_KEY", "BOCHA_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    fake_llm.configure(rules=[{"match": CHAT_RULE, "reply": "From what I know: nothing new."}])
    run = await stream({"query": "What is new in sparse attention?", "enable_web_search": True})
    streamed = assert_only_the_answer_streams(run)
    # The note after the answer (why search was not used) is in the stream too.
    assert streamed.startswith("From what I know: nothing new.")
    assert len(streamed) > len("From what I know: nothing new.")


async def test_full_content_hides_the_intent_json(fake_llm: FakeOpenAIServer) -> None:
    fake_llm.configure(rules=[
        {"match": INTENT_RULE, "reply": INTENT_JSON},
        {"match": "expert, fair referee", "reply": "A fair review: solid method, thin baselines."},
    ])
    run = await stream({"query": "Thoughts?", "content": paper("en_retrieval_qa.md")})
    assert (run.state["intent_decided_by"], run.state["strategy"]) == ("llm", "full_content")
    streamed = assert_only_the_answer_streams(run, hidden=("INTENT-SECRET", '"intent"'))
    assert streamed == "A fair review: solid method, thin baselines."
    meta = run.final.response_metadata
    assert (meta["intent"], meta["strategy"]) == ("PAPER_REVIEW", "full_content")


async def test_chunk_recall_streams_the_filtered_answer(fake_llm: FakeOpenAIServer) -> None:
    fake_llm.configure(rules=[
        {"match": SUBQ_RULE, "reply": '{"sub_questions": ['
         '{"question": "PLAN-SECRET learning rate", "translation": "学习率", "doc_id": "anchor"},'
         '{"question": "PLAN-SECRET learning rate", "doc_id": "rag"}]}'},
        {"match": CITED_RULE, "reply": "AnchorWindow used 3e-4 [1]; SectionRAG 2e-5 [2] [17]."},
    ])
    run = await stream({"query": "Which learning rate does each paper use?",
                        "document_contents": {"anchor": paper("en_sparse_attention.md"),
                                              "rag": paper("en_retrieval_qa.md")}})
    assert run.state["strategy"] == "chunk_recall"
    streamed = assert_only_the_answer_streams(run, hidden=("PLAN-SECRET", "sub_questions"))
    # [17] names no recalled chunk: dropped before it streamed, not after.
    assert streamed == "AnchorWindow used 3e-4 [1]; SectionRAG 2e-5 [2]."
    meta = run.final.response_metadata
    assert (meta["intent"], meta["strategy"]) == ("LITERATURE_QA", "chunk_recall")
    assert [s["n"] for s in meta["sources"]] == [1, 2] == [s["n"] for s in run.state["sources"]]


async def test_multi_doc_summary_hides_summaries_and_partial_reports(
    fake_llm: FakeOpenAIServer,
) -> None:
    fake_llm.configure(rules=[
        {"match": SUMMARY_RULE, "reply": "SUMMARY-SECRET " + " ".join(
            f"finding{i}" for i in range(400))},
        {"match": "You are writing part", "reply": "REPORT-SECRET partial report."},
        {"match": "intermediate reports", "reply": "The merged review of thirty papers."},
    ])
    ctx = Context(max_context_tokens=12_000, reserved_answer_tokens=2_000,
                  system_tokens_estimate=500, approval_documents=None)
    docs = {f"d{i}": f"# Paper {i}\n\n" + "text " * 200 for i in range(30)}
    run = await stream({"query": "Summarize these papers", "document_contents": docs}, ctx)
    assert run.state["strategy"] == "multi_doc_summary"
    assert any("You are writing part" in str(r["messages"]) for r in fake_llm.stats().requests)
    streamed = assert_only_the_answer_streams(run, hidden=("SUMMARY-SECRET", "REPORT-SECRET"))
    assert streamed == "The merged review of thirty papers."
    meta = run.final.response_metadata
    assert (meta["intent"], meta["strategy"]) == ("LITERATURE_SUMMARY", "multi_doc_summary")


async def test_messages_custom_and_values_together_agree(fake_llm: FakeOpenAIServer) -> None:
    fake_llm.configure(rules=[
        {"match": SUMMARY_RULE + ".*AnchorWindow", "reply": "S1-SECRET anchors cut memory."},
        {"match": SUMMARY_RULE, "reply": "S2-SECRET other findings."},
        {"match": "summarise a set of academic documents", "reply": "Both papers agree."},
    ])
    docs = {"a": paper("en_sparse_attention.md"), "b": paper("en_retrieval_qa.md")}
    run = await stream({"query": "Summarize these papers", "document_contents": docs},
                       modes=("messages", "custom", "values"), subgraphs=False)
    streamed = assert_only_the_answer_streams(run, hidden=("S1-SECRET", "S2-SECRET"))
    answer_chunks = "".join(e["content"] for e in run.custom if e["type"] == "answer_chunk")
    assert streamed == answer_chunks == run.values["answer"] == "Both papers agree."
    assert run.values["messages"][-1].id == run.final.id
    # The custom events are what they were: the 13 types, final_answer last.
    assert {e["type"] for e in run.custom} <= set(EVENT_TYPES)
    assert run.custom[-1]["type"] == "final_answer"
    assert run.custom[-1]["answer"] == streamed


@pytest.mark.parametrize("fault", [
    {"fail_first_n": 1, "fail_status": 500},  # the call fails before any text
    {"rules": [{"match": CHAT_RULE, "reply": "   ", "times": 1},  # an empty answer
               {"match": CHAT_RULE, "reply": "Second try worked."}]},
])
async def test_a_retried_answer_streams_one_message(
    fake_llm: FakeOpenAIServer, fault: dict[str, Any],
) -> None:
    fake_llm.configure(**fault)
    run = await stream({"query": "hello"})
    assert fake_llm.stats().chat_calls == 2
    # The failed attempt showed nothing, not even a blank message: one id, the answer's.
    streamed = assert_only_the_answer_streams(run)
    assert streamed == run.final.text and streamed.strip()


async def test_an_answer_that_stays_empty_streams_nothing(fake_llm: FakeOpenAIServer) -> None:
    fake_llm.configure(rules=[{"match": CHAT_RULE, "reply": " \n "}])
    graph = build_graph(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": str(uuid.uuid4())}}
    shown: list[BaseMessage] = []
    with pytest.raises(LLMError, match="returned an empty answer"):
        async for part in graph.astream({"query": "hello"}, config, stream_mode="messages"):
            shown.append(cast(tuple[BaseMessage, Any], part)[0])
    assert fake_llm.stats().chat_calls == 2  # one retry, then the error
    assert [type(m) for m in shown] == [HumanMessage]  # no blank answer bubble
