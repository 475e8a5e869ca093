"""review_plan: the run pauses after plan_generation for a person to approve, edit or
comment on the plan, and resumes with Command(resume=...)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from scholarflow import Context, build_graph
from scholarflow.context import ServedContext
from scholarflow.errors import ConfigurationError, InputError
from scholarflow.nodes.plan_review import (
    MAX_FEEDBACK_ROUNDS,
    edited_questions,
    parse_review,
)
from scholarflow.state import SubQuestion
from tests.conftest import big_paper, small_context
from tests.support import FakeOpenAIServer

SUBQ_RULE = "search questions that together retrieve"  # SUB_QUESTION_GENERATION_PROMPT
FEEDBACK_RULE = "A person reviewed the search questions"  # PLAN_FEEDBACK_PROMPT
ANSWER_RULE = "numbered passages recalled"  # CITED_MATERIAL_PROMPT
QUESTION = "What learning rate did they use?"
PLANNED = {"sub_questions": [
    {"question": "learning rate", "translation": "学习率", "doc_id": "big"},
    {"question": "warmup steps", "translation": "预热步数", "doc_id": "big"}]}
REPLANNED = {"sub_questions": [{"question": "optimizer settings", "translation": "优化器设置",
                                "doc_id": "big"}]}
CFG: Any = {"configurable": {"thread_id": "review-1"}}


def _script(server: FakeOpenAIServer) -> None:
    server.configure(rules=[
        {"match": FEEDBACK_RULE, "reply": json.dumps(REPLANNED)},  # before: SUBQ_RULE matches too
        {"match": SUBQ_RULE, "reply": json.dumps(PLANNED)},
        {"match": ANSWER_RULE, "reply": "A learning rate of 3e-4 [1]."},
    ])


def _planner_prompts(server: FakeOpenAIServer) -> list[str]:
    return [str(r["messages"][0]["content"]) for r in server.stats().requests
            if SUBQ_RULE in str(r["messages"][0]["content"])]


def _review() -> Context:
    return dataclasses.replace(small_context(), review_plan=True)


def _request(question: str = QUESTION) -> Any:  # an InputState
    return {"query": question, "document_contents": {"big": big_paper()}}


async def _paused(graph: Any, ctx: Context | None = None) -> dict[str, Any]:
    """Ask QUESTION over the large paper with review_plan: the interrupt's value."""
    out = await graph.ainvoke(_request(), CFG, context=ctx or _review())
    (pause,) = out["__interrupt__"]
    assert (await graph.aget_state(CFG)).next == ("plan_review",)
    return dict(pause.value)


def test_review_plan_is_a_context_field_the_server_shows() -> None:
    assert Context().review_plan is False
    served = {f.name: f for f in dataclasses.fields(ServedContext)}
    assert served["review_plan"].default is False
    assert "approve, edit or comment" in served["review_plan"].metadata["description"]


async def test_without_review_plan_nothing_pauses(fake_llm: FakeOpenAIServer) -> None:
    _script(fake_llm)
    graph = build_graph(checkpointer=InMemorySaver())
    out = await graph.ainvoke(_request(), CFG, context=small_context())
    assert "__interrupt__" not in out
    assert out["strategy"] == "chunk_recall" and out["answer"] == "A learning rate of 3e-4 [1]."
    assert (await graph.aget_state(CFG)).next == ()


@pytest.mark.parametrize("answer", [{"action": "approve"}, True, "approve"])
async def test_the_run_pauses_with_the_plan_and_approval_answers(
    fake_llm: FakeOpenAIServer, answer: Any
) -> None:
    _script(fake_llm)
    graph = build_graph(checkpointer=InMemorySaver())
    value = await _paused(graph)
    assert value["type"] == "review_plan" and value["question"] == QUESTION
    assert value["sub_questions"] == ["learning rate", "warmup steps"]
    assert value["plan"] == [
        {"step": 1, "queries": ["learning rate", "学习率"], "doc_id": "big"},
        {"step": 2, "queries": ["warmup steps", "预热步数"], "doc_id": "big"}]
    assert '"action": "approve"' in value["how_to_resume"]
    assert len(_planner_prompts(fake_llm)) == 1

    out = await graph.ainvoke(Command(resume=answer), CFG, context=_review())
    assert out["answer"] == "A learning rate of 3e-4 [1]." and out["sources"]
    assert "__interrupt__" not in out
    assert len(_planner_prompts(fake_llm)) == 1  # approving plans nothing again


async def test_an_edit_replaces_the_sub_questions_without_a_model_call(
    fake_llm: FakeOpenAIServer,
) -> None:
    _script(fake_llm)
    graph = build_graph(checkpointer=InMemorySaver())
    await _paused(graph)
    calls = fake_llm.stats().chat_calls
    out = await graph.ainvoke(
        Command(resume={"action": "edit", "sub_questions": ["  learning rate ", "batch size"]}),
        CFG, context=_review())
    assert out["answer"] == "A learning rate of 3e-4 [1]."
    state = (await graph.aget_state(CFG)).values
    # The kept question keeps its translation and document; the new one has neither.
    assert state["sub_questions"] == [
        SubQuestion(question="learning rate", translation="学习率", doc_id="big"),
        SubQuestion(question="batch size", translation=None, doc_id=None)]
    assert [(s["step"], s["queries"]) for s in state["plan"]] == [
        (1, ["learning rate", "学习率"]), (2, ["batch size"])]
    assert sorted(state["completed_steps"]) == [1, 2]
    assert len(_planner_prompts(fake_llm)) == 1
    assert fake_llm.stats().chat_calls == calls + 1  # the answer only


async def test_feedback_plans_again_and_pauses_again(fake_llm: FakeOpenAIServer) -> None:
    _script(fake_llm)
    graph = build_graph(checkpointer=InMemorySaver())
    await _paused(graph)
    # Resumed with a context that does not say review_plan: the new plan is shown anyway.
    out = await graph.ainvoke(
        Command(resume={"action": "feedback", "feedback": "Ask about the optimizer instead."}),
        CFG, context=small_context())
    (pause,) = out["__interrupt__"]
    assert pause.value["sub_questions"] == ["optimizer settings"]
    assert f"{MAX_FEEDBACK_ROUNDS - 1} of {MAX_FEEDBACK_ROUNDS}" in pause.value["how_to_resume"]
    prompts = _planner_prompts(fake_llm)
    assert len(prompts) == 2 and FEEDBACK_RULE not in prompts[0]
    assert "Ask about the optimizer instead." in prompts[1]
    assert "- learning rate\n- warmup steps" in prompts[1]  # the plan commented on
    state = (await graph.aget_state(CFG)).values
    assert state["plan_feedback"] == ["Ask about the optimizer instead."]

    out = await graph.ainvoke(Command(resume=True), CFG, context=small_context())
    assert out["answer"] == "A learning rate of 3e-4 [1]."
    assert len(_planner_prompts(fake_llm)) == 2


async def test_feedback_rounds_are_bounded(fake_llm: FakeOpenAIServer) -> None:
    _script(fake_llm)
    graph = build_graph(checkpointer=InMemorySaver())
    await _paused(graph)
    for n in range(MAX_FEEDBACK_ROUNDS):
        out = await graph.ainvoke(Command(resume={"action": "feedback", "feedback": f"c{n}"}),
                                  CFG, context=_review())
        assert out["__interrupt__"]
    assert "rounds of feedback are used" in out["__interrupt__"][0].value["how_to_resume"]
    assert len(_planner_prompts(fake_llm)) == 1 + MAX_FEEDBACK_ROUNDS
    assert "- c0\n- c1\n- c2" in _planner_prompts(fake_llm)[-1]
    with pytest.raises(InputError, match="sent back 3 times already") as caught:
        await graph.ainvoke(Command(resume={"action": "feedback", "feedback": "more"}),
                            CFG, context=_review())
    assert "\n" not in str(caught.value)
    assert len(_planner_prompts(fake_llm)) == 1 + MAX_FEEDBACK_ROUNDS


@pytest.mark.parametrize("answer", [
    "yes", False, 1, {"action": "aprove"}, {"action": "edit"},
    {"action": "edit", "sub_questions": []}, {"action": "edit", "sub_questions": "lr"},
    {"action": "edit", "sub_questions": ["lr", "??"]},
    {"action": "feedback", "feedback": "  "}, {"action": "feedback", "comment": "x"},
])
async def test_a_bad_resume_value_is_one_clear_error(
    fake_llm: FakeOpenAIServer, answer: Any
) -> None:
    _script(fake_llm)
    graph = build_graph(checkpointer=InMemorySaver())
    await _paused(graph)
    with pytest.raises(InputError) as caught:
        await graph.ainvoke(Command(resume=answer), CFG, context=_review())
    message = str(caught.value)
    assert message.startswith("invalid plan review answer: ") and "\n" not in message
    assert '{"action": "approve"}' in message and '"sub_questions"' in message
    state = (await graph.aget_state(CFG)).values
    assert state["messages"][-1].content == QUESTION  # the question stays in the thread


def test_parse_review_reads_the_accepted_forms() -> None:
    assert parse_review(" Approve ", feedback_left=0).action == "approve"
    edit = parse_review({"action": "edit", "sub_questions": ["a", "学习率"]}, feedback_left=0)
    assert (edit.action, edit.sub_questions) == ("edit", ["a", "学习率"])
    feedback = parse_review({"action": "feedback", "feedback": " more "}, feedback_left=1)
    assert (feedback.action, feedback.feedback) == ("feedback", "more")
    with pytest.raises(InputError, match="more than 2000"):
        parse_review({"action": "feedback", "feedback": "x" * 2001}, feedback_left=1)


def test_an_edit_keeps_each_copy_of_a_question_aimed_at_its_document() -> None:
    planned = [SubQuestion(question="Q?", translation=None, doc_id="a"),
               SubQuestion(question="lr", translation="学习率", doc_id=None),
               SubQuestion(question="Q?", translation=None, doc_id="b")]
    assert [(q["question"], q["doc_id"]) for q in
            edited_questions(planned, ["Q?", "Q?", "Q?", "new"])] == [
        ("Q?", "a"), ("Q?", "b"), ("Q?", None), ("new", None)]


async def test_a_new_question_while_paused_starts_a_fresh_run(
    fake_llm: FakeOpenAIServer,
) -> None:
    _script(fake_llm)
    graph = build_graph(checkpointer=InMemorySaver())
    await _paused(graph)
    out = await graph.ainvoke(Command(resume={"action": "feedback", "feedback": "shorter"}),
                              CFG, context=_review())
    assert out["__interrupt__"]
    # Another question on the paused thread, without review_plan: it is not paused by the
    # last run's feedback, and plans from scratch.
    out = await graph.ainvoke(_request("Which batch size did they use?"), CFG,
                              context=small_context())
    assert "__interrupt__" not in out and out["answer"] == "A learning rate of 3e-4 [1]."
    state = await graph.aget_state(CFG)
    assert state.next == () and state.values["plan_feedback"] == []
    assert state.values["question"] == "Which batch size did they use?"
    assert [q["question"] for q in state.values["sub_questions"]] == [
        "learning rate", "warmup steps"]
    assert FEEDBACK_RULE not in _planner_prompts(fake_llm)[-1]
    humans = [m.content for m in state.values["messages"] if m.type == "human"]
    assert humans == [QUESTION, "Which batch size did they use?"]


async def test_review_plan_without_a_checkpointer_is_a_clear_error(
    fake_llm: FakeOpenAIServer,
) -> None:
    _script(fake_llm)
    with pytest.raises(ConfigurationError, match="review_plan needs a checkpointer"):
        await build_graph().ainvoke(_request(), context=_review())
