"""cost_check: a summary of several documents says what it costs before it starts, and past
the context's limits waits for approval (interrupt) or, without a checkpointer, is refused."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from scholarflow import Context, build_graph
from scholarflow.context import ServedContext
from scholarflow.errors import InputError, InvalidContextError
from scholarflow.llm import rates
from scholarflow.nodes.cost_check import (
    CostApprovalRequiredError,
    CostDeclinedError,
    parse_approval,
)
from scholarflow.nodes.summary import summary_call_tokens
from scholarflow.tokens import count_message_tokens, count_tokens
from tests.conftest import SUMMARY_RULE, big_paper, paper, small_context
from tests.support import FakeOpenAIServer

MERGE_RULE = "summarise a set of academic documents"  # MULTI_DOC_SUMMARY_PROMPT
QUESTION = "Summarize these papers"
CFG: Any = {"configurable": {"thread_id": "cost-1"}}


def _docs(n: int) -> dict[str, str]:
    """n small papers of different lengths: each is read whole by its summary call."""
    return {f"p{i}": f"# Paper {i}\n\n" + f"Finding {i} holds for every sample we measured. "
            * (20 + 15 * i) for i in range(n)}


def _script(server: FakeOpenAIServer) -> None:
    server.configure(rules=[
        {"match": SUMMARY_RULE, "reply": "A short summary of one paper."},
        {"match": MERGE_RULE, "reply": "The papers agree."},
    ])


def _limits(documents: int | None = 2, tokens: int | None = None) -> Context:
    return dataclasses.replace(small_context(), approval_documents=documents,
                               approval_tokens=tokens)


def _request(docs: dict[str, str]) -> Any:  # an InputState
    return {"query": QUESTION, "document_contents": docs}


def _sent(server: FakeOpenAIServer, rule: str) -> list[str]:
    return [str(r["messages"][0]["content"]) for r in server.stats().requests
            if rule in str(r["messages"][0]["content"])]


def _thoughts(events: list[dict[str, Any]]) -> list[str]:
    return [e["content"] for e in events
            if e["type"] == "thought_chunk" and e.get("node") == "cost_check"]


async def _paused(graph: Any, docs: dict[str, str], ctx: Context) -> dict[str, Any]:
    out = await graph.ainvoke(_request(docs), CFG, context=ctx)
    (pause,) = out["__interrupt__"]
    assert (await graph.aget_state(CFG)).next == ("cost_check",)
    return dict(pause.value)


@pytest.fixture(autouse=True)
def _no_measured_speed() -> None:
    rates.forget()  # what earlier tests measured must not give these runs a time


def test_the_limits_are_context_fields_the_server_shows() -> None:
    ctx = Context()
    assert (ctx.approval_documents, ctx.approval_tokens) == (20, 300_000)
    served = {f.name: f for f in dataclasses.fields(ServedContext)}
    assert "asks for approval" in served["approval_documents"].metadata["description"]
    assert "null: no limit" in served["approval_tokens"].metadata["description"]


async def test_over_the_limit_the_run_pauses_with_the_estimate_and_approval_runs_it(
    fake_llm: FakeOpenAIServer,
) -> None:
    """Expected: the pause names 3 documents, 3 summary calls and 1 merge call, and the
    prompt tokens of the summary calls that then run; nothing was sent before approval."""
    _script(fake_llm)
    docs = _docs(3)
    graph = build_graph(checkpointer=InMemorySaver())
    value = await _paused(graph, docs, _limits(documents=2))
    assert fake_llm.stats().chat_calls == 0
    assert value["type"] == "approve_cost" and value["question"] == QUESTION
    assert (value["documents"], value["cached"], value["llm_calls"]) == (3, 0, 4)
    assert value["over"] == ["3 documents to summarise over approval_documents=2"]
    assert value["estimate"].startswith("this summary would send 3 documents: 3 summary calls "
                                        "and 1 to merge them")
    assert "time unknown" in value["estimate"] and value["seconds"] is None
    assert '"action": "approve"' in value["how_to_resume"]

    out = await graph.ainvoke(Command(resume={"action": "approve"}), CFG, context=_limits(2))
    assert out["answer"] == "The papers agree." and "__interrupt__" not in out
    summaries = _sent(fake_llm, SUMMARY_RULE)
    assert len(summaries) == 3 and fake_llm.stats().chat_calls == value["llm_calls"]
    # The summary calls' prompts, as sent, are what was estimated (a token or two of
    # tokenizer boundaries per prompt aside).
    sent_tokens = count_message_tokens(summaries)
    assert abs(value["summary_prompt_tokens"] - sent_tokens) <= 2 * len(summaries), (
        value["summary_prompt_tokens"], sent_tokens)
    # The merge is counted with every summary at its bound: never under what it sent.
    (merged,) = _sent(fake_llm, MERGE_RULE)
    assert count_tokens(merged) <= value["merge_prompt_tokens"]
    assert value["prompt_tokens"] == value["summary_prompt_tokens"] + value["merge_prompt_tokens"]


@pytest.mark.parametrize("answer", [True, "approve", {"action": "approve"}])
async def test_each_approving_answer_runs_the_summary(
    fake_llm: FakeOpenAIServer, answer: Any
) -> None:
    """Expected: answered, with one summary per document."""
    _script(fake_llm)
    graph = build_graph(checkpointer=InMemorySaver())
    await _paused(graph, _docs(3), _limits(2))
    out = await graph.ainvoke(Command(resume=answer), CFG, context=_limits(2))
    assert out["answer"] == "The papers agree." and len(_sent(fake_llm, SUMMARY_RULE)) == 3


@pytest.mark.parametrize("answer", [False, "decline", " Cancel ", {"action": "decline"},
                                    {"action": "cancel"}])
async def test_a_decline_ends_the_run_in_one_error_without_sending_a_document(
    fake_llm: FakeOpenAIServer, answer: Any
) -> None:
    """Expected: CostDeclinedError naming the estimate; no model call; the question stays."""
    _script(fake_llm)
    graph = build_graph(checkpointer=InMemorySaver())
    await _paused(graph, _docs(3), _limits(2))
    with pytest.raises(CostDeclinedError) as caught:
        await graph.ainvoke(Command(resume=answer), CFG, context=_limits(2))
    message = str(caught.value)
    assert message.startswith("the summary was not run: its cost was declined (3 documents")
    assert "\n" not in message and fake_llm.stats().chat_calls == 0
    state = await graph.aget_state(CFG)  # failed in session_save, as a failed run does
    assert state.values["error"] == message and not state.values["answer"]
    assert state.values["messages"][-1].content == QUESTION


@pytest.mark.parametrize("answer", ["yes", 1, {"action": "aprove"},
                                    {"action": "approve", "note": "x"}])
async def test_another_answer_is_one_clear_error(fake_llm: FakeOpenAIServer, answer: Any) -> None:
    """Expected: InputError naming the accepted forms; nothing summarised."""
    _script(fake_llm)
    graph = build_graph(checkpointer=InMemorySaver())
    await _paused(graph, _docs(3), _limits(2))
    with pytest.raises(InputError, match=r"^invalid cost approval answer: .*\"action\": "
                                         r"\"approve\"") as caught:
        await graph.ainvoke(Command(resume=answer), CFG, context=_limits(2))
    assert "\n" not in str(caught.value) and fake_llm.stats().chat_calls == 0


async def test_under_the_limits_it_runs_and_says_the_estimate(fake_llm: FakeOpenAIServer) -> None:
    """Expected: no pause; the thinking stream carries the estimate; answered."""
    _script(fake_llm)
    graph = build_graph(checkpointer=InMemorySaver())
    events = [chunk async for chunk in graph.astream(
        _request(_docs(3)), CFG, context=_limits(documents=3), stream_mode="custom")]
    state = await graph.aget_state(CFG)
    assert state.next == () and state.values["answer"] == "The papers agree."
    (line,) = _thoughts(events)
    assert line.startswith("Cost: 3 documents: 3 summary calls and 1 to merge them, ~")
    done = [e for e in events if e["type"] == "node_complete" and e["node"] == "cost_check"]
    assert [(e["documents"], e["llm_calls"], e["approval"]) for e in done] == [
        (3, 4, "not needed")]


async def test_the_default_limits_let_a_few_papers_run_and_stop_a_library(
    fake_llm: FakeOpenAIServer,
) -> None:
    """Expected: 3 example papers run under the defaults; 21 documents pause."""
    _script(fake_llm)
    graph = build_graph(checkpointer=InMemorySaver())
    papers = {n: paper(n) for n in ("en_sparse_attention.md", "en_retrieval_qa.md",
                                    "zh_multidoc_summary.md")}
    out = await graph.ainvoke(_request(papers), CFG, context=Context())
    assert "__interrupt__" not in out and out["answer"] == "The papers agree."
    value = await _paused(graph, _docs(21), Context())
    assert value["over"] == ["21 documents to summarise over approval_documents=20"]


async def test_the_token_limit_counts_a_large_document_as_its_summary_reads_it(
    fake_llm: FakeOpenAIServer,
) -> None:
    """Expected: a paper larger than one prompt costs what its prompt holds, not its whole
    length; past approval_tokens it pauses; the key chunks sent stay within that."""
    _script(fake_llm)
    ctx = _limits(documents=None, tokens=1000)
    docs = {"big": big_paper(), "small": paper("en_retrieval_qa.md")}
    graph = build_graph(checkpointer=InMemorySaver())
    value = await _paused(graph, docs, ctx)
    big_prompt, _ = summary_call_tokens(ctx, "Appendix", count_tokens(docs["big"]))
    assert big_prompt < count_tokens(docs["big"])  # read from its key chunks, not whole
    assert value["over"] == [f"~{value['prompt_tokens']} prompt tokens over approval_tokens=1000"]
    await graph.ainvoke(Command(resume=True), CFG, context=ctx)
    sent = count_message_tokens(_sent(fake_llm, SUMMARY_RULE))
    assert 0.8 * value["summary_prompt_tokens"] <= sent <= value["summary_prompt_tokens"], (
        sent, value["summary_prompt_tokens"])


async def test_cached_summaries_cost_nothing(fake_llm: FakeOpenAIServer) -> None:
    """Expected: asked again, the 3 summaries come from the cache: no pause, one call."""
    _script(fake_llm)
    graph = build_graph(checkpointer=InMemorySaver())
    docs = _docs(3)
    await _paused(graph, docs, _limits(2))
    await graph.ainvoke(Command(resume=True), CFG, context=_limits(2))
    calls = fake_llm.stats().chat_calls
    events = [chunk async for chunk in graph.astream(
        _request(docs), CFG, context=_limits(2), stream_mode="custom")]
    assert (await graph.aget_state(CFG)).next == ()
    (line,) = _thoughts(events)
    assert line.startswith("Cost: 3 documents (3 with a cached summary): 0 summary calls")
    assert fake_llm.stats().chat_calls == calls + 1  # the merge only


async def test_without_a_checkpointer_it_is_refused_with_the_estimate(
    fake_llm: FakeOpenAIServer,
) -> None:
    """Expected: CostApprovalRequiredError, one line naming the estimate and how to approve;
    no model call."""
    _script(fake_llm)
    with pytest.raises(CostApprovalRequiredError) as caught:
        await build_graph().ainvoke(_request(_docs(3)), context=_limits(2))
    message = str(caught.value)
    assert message.startswith("this summary needs approval before it starts (3 documents to "
                              "summarise over approval_documents=2): it would send 3 documents")
    assert "approval_documents and approval_tokens in the context" in message
    assert "--approve-cost" in message and "\n" not in message
    assert fake_llm.stats().chat_calls == 0


async def test_no_limit_runs_whatever_the_count(fake_llm: FakeOpenAIServer) -> None:
    """Expected: with both limits null, 3 documents run without a checkpointer."""
    _script(fake_llm)
    out = await build_graph().ainvoke(_request(_docs(3)), context=_limits(None, None))
    assert out["answer"] == "The papers agree."


async def test_a_negative_limit_is_one_error(fake_llm: FakeOpenAIServer) -> None:
    """Expected: InvalidContextError naming the field; no model call."""
    with pytest.raises(InvalidContextError, match="approval_tokens must be at least 0"):
        await build_graph().ainvoke(_request(_docs(3)), context=_limits(2, -1))
    assert fake_llm.stats().chat_calls == 0


async def test_the_time_comes_from_the_models_measured_speed(
    fake_llm: FakeOpenAIServer, tmp_path: Path,
) -> None:
    """Expected: after calls to the model, the estimate has a time, from the speed measured
    in this process; saved and read in a fresh process, the same speed, said to be saved."""
    long_reply = "The paper measures a finding that holds for every sample it took. " * 5
    fake_llm.configure(rules=[{"match": SUMMARY_RULE, "reply": long_reply},
                              {"match": MERGE_RULE, "reply": long_reply}],
                       prefill_tokens_per_second=20_000, tokens_per_second=400)
    graph = build_graph(checkpointer=InMemorySaver())
    # One call at a time: each is alone in flight, so all three count.
    one_by_one = dataclasses.replace(_limits(None, None), max_concurrent_llm_calls=1)
    await graph.ainvoke(_request(_docs(2)), CFG, context=one_by_one)  # measures
    from scholarflow.llm.model import endpoint_key

    endpoint = endpoint_key(_limits())
    measured = rates.measured_rate(endpoint)
    assert measured is not None and measured.calls == 3
    assert 2_000 < measured.reading < 40_000 and 40 < measured.writing < 800, measured
    value = await _paused(graph, _docs(3), _limits(0))  # p0 and p1 are cached by now
    assert value["cached"] == 2
    expected = (value["prompt_tokens"] / measured.reading
                + value["reply_tokens"] / measured.writing)
    assert value["seconds"] == round(expected)  # every call at the measured speed
    assert "with the calls one after another (it read ~" in value["estimate"]
    assert "in this process" in value["estimate"]

    rates.save_rates(tmp_path)
    rates.forget()  # a new process: nothing measured yet
    saved = rates.saved_rate(endpoint, tmp_path)
    assert saved is not None and "saved on" in saved.source
    assert (round(saved.reading), saved.calls) == (round(measured.reading), measured.calls)
    assert rates.saved_rate("another|model", tmp_path) is None


def test_parse_approval_reads_the_accepted_forms() -> None:
    assert parse_approval(" APPROVE ") is True and parse_approval({"action": "approve"}) is True
    assert parse_approval("cancel") is False and parse_approval(False) is False
    with pytest.raises(InputError, match="none of the accepted forms"):
        parse_approval(0)

