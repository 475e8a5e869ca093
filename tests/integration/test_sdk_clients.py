"""LangGraph clients drive the server the way agent-chat-ui does: the thread is the conversation.

One `langgraph dev` for the module (tests/support/langgraph_dev.py), beside the scripted
OpenAI server. The Python `langgraph_sdk` tests and the JavaScript `@langchain/langgraph-sdk`
script (tests/integration/js/clients.mjs, run with Node) drive that same server:

- `messages` input and stream modes values, messages-tuple and custom: the
  messages-tuple events are the answer's tokens only, and they add up to the AI
  message the thread keeps; a second turn sees the first;
- cancel, and multitask_strategy reject, enqueue, interrupt and rollback: the
  next run on the thread never inherits the documents or mode of the run it cut;
- `threads.copy`, a fork from a checkpoint of `threads.get_history`, delete;
- a run the model cannot answer (401) ends in error with the question kept;
- the review_plan interrupt and its resume.

20 runs at once under the server's LLM limit, with `messages` input, are in
tests/integration/test_langgraph_server.py (its server has the low limit).

Slow runs are slow in the scripted model (a rule's latency) and the tests poll
for the state they need; nothing asserts on a duration. Skipped only when the
`langgraph` CLI (or, for the JavaScript test, `node`) is not installed.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

import httpx
import pytest

from tests.conftest import EXAMPLES, INTENT_RULE, SUMMARY_RULE
from tests.support.langgraph_dev import (
    GRAPH_ID,
    LANGGRAPH,
    NO_CLI,
    REPO,
    RUN_TIMEOUT,
    Fake,
    Server,
    fake_stats,
    script,
    start_fake,
    start_server,
)

if TYPE_CHECKING:
    from langgraph_sdk.client import LangGraphClient
    from langgraph_sdk.schema import StreamMode

pytestmark = pytest.mark.skipif(LANGGRAPH is None, reason=NO_CLI)

T = TypeVar("T")

SLOW = 2.0  # the scripted model's delay for a run the test cuts short (cancel, multitask)
POLL = 0.05

# agent-chat-ui's stream modes, plus scholarflow's custom events
STREAM_MODES: list[StreamMode] = ["values", "messages-tuple", "custom"]
ANSWER_NODES = {"answer_generation", "simple_interaction"}
QA_RULE = "You answer a precise question"  # LITERATURE_QA_PROMPT
SUBQ_RULE = "search questions that together retrieve"  # SUB_QUESTION_GENERATION_PROMPT
CITED_RULE = "numbered passages recalled"  # CITED_MATERIAL_PROMPT
INTENT_QA = '{"intent": "LITERATURE_QA", "confidence": 0.9, "reason": "a precise question"}'
ANSWER = "The model attends to a local window plus a few global tokens."
QUESTION = "Which attention pattern does the sparse model use?"
SLOW_REPLY = "A slow answer nobody should wait for."

JS_DIR = REPO / "tests" / "integration" / "js"
JS_SCRIPT = JS_DIR / "clients.mjs"
NODE = shutil.which("node")


# --- the server ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("sdk_clients")


@pytest.fixture(scope="module")
def fake(workdir: Path) -> Iterator[Fake]:
    with start_fake(workdir) as started:
        yield started


@pytest.fixture(scope="module")
def server(fake: Fake, workdir: Path) -> Iterator[Server]:
    env = {
        # Recall embeddings from the scripted server: no local model to load.
        "SCHOLARFLOW_EMBEDDING_MODEL": "fake-embedding",
    }
    with start_server(workdir, fake, env=env, name="sdk_clients") as started:
        yield started


@pytest.fixture(scope="module")
async def client(server: Server) -> AsyncIterator[LangGraphClient]:
    from langgraph_sdk import get_client

    sdk = get_client(url=server.url)
    try:
        yield sdk
    finally:
        await sdk.aclose()


# --- helpers -------------------------------------------------------------------------------------


def _paper(name: str = "en_sparse_attention.md") -> str:
    return (EXAMPLES / name).read_text(encoding="utf-8")


def human(text: str) -> dict[str, Any]:
    """A human message as agent-chat-ui sends it."""
    return {"type": "human", "content": text}


def chat(text: str) -> dict[str, Any]:
    """A chat UI's input: the question as a human message, nothing else."""
    return {"messages": [human(text)]}


def qa_rules() -> list[dict[str, Any]]:
    return [{"match": INTENT_RULE, "reply": INTENT_QA}, {"match": QA_RULE, "reply": ANSWER}]


def slow_rule(marker: str) -> dict[str, Any]:
    """The first call naming `marker` answers after SLOW seconds; the run that made it is cut
    short by the test, and later calls (its history in the next run's prompt) are not slow."""
    return {"match": marker, "reply": SLOW_REPLY, "latency": SLOW, "times": 1}


@dataclass
class Streamed:
    """One run as agent-chat-ui streams it: every (event, data) part, in order."""

    parts: list[tuple[str, Any]] = field(default_factory=list)

    def data(self, event: str) -> list[Any]:
        return [d for e, d in self.parts if e == event]

    @property
    def run_id(self) -> str:
        return str(self.data("metadata")[0]["run_id"])

    @property
    def values(self) -> dict[str, Any]:
        found = self.data("values")
        return cast(dict[str, Any], found[-1]) if found else {}

    @property
    def custom(self) -> list[dict[str, Any]]:
        return cast(list[dict[str, Any]], self.data("custom"))

    def types(self) -> list[str]:
        return [str(e.get("type")) for e in self.custom]

    @property
    def tokens(self) -> list[tuple[str, str, str]]:
        """The messages-tuple events: (node, content, message id) of each chunk."""
        return [(str(meta.get("langgraph_node")), text_of(chunk), str(chunk.get("id")))
                for chunk, meta in self.data("messages")]

    def failures(self) -> list[Any]:
        return self.data("error") + [e for e in self.custom
                                     if e.get("type") in ("node_error", "error")]


async def stream(client: LangGraphClient, thread_id: str, **kwargs: Any) -> Streamed:
    run = Streamed()
    async with asyncio.timeout(RUN_TIMEOUT):
        async for part in client.runs.stream(thread_id, GRAPH_ID, stream_mode=STREAM_MODES,
                                             **kwargs):
            run.parts.append((part.event, part.data))
    return run


async def ask(client: LangGraphClient, thread_id: str, question: str, **kwargs: Any) -> Streamed:
    """One turn from a chat UI: the question as a human message (beside any other `input`);
    it must answer."""
    extra = kwargs.pop("input", {})
    run = await stream(client, thread_id, input={**chat(question), **extra}, **kwargs)
    assert not run.failures(), run.failures()
    return run


async def new_thread(client: LangGraphClient) -> str:
    return str((await client.threads.create())["thread_id"])


def text_of(message: Any) -> str:
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content or "")


async def conversation(client: LangGraphClient, thread_id: str) -> list[tuple[str, str]]:
    """The thread's messages as (type, text)."""
    state = await client.threads.get_state(thread_id)
    values = cast(dict[str, Any], state["values"] or {})
    return [(str(m["type"]), text_of(m)) for m in values.get("messages") or []]


async def until(probe: Callable[[], Awaitable[T | None]], what: str) -> T:
    """Poll `probe` until it returns something; fail naming `what` after RUN_TIMEOUT."""
    try:
        async with asyncio.timeout(RUN_TIMEOUT):
            while True:
                if (found := await probe()) is not None:
                    return found
                await asyncio.sleep(POLL)
    except TimeoutError:
        raise AssertionError(what) from None


async def in_model(fake: Fake, marker: str) -> None:
    """Wait until the scripted model is answering a call that names `marker`."""
    async def probe() -> bool | None:
        stats = await fake_stats(fake)
        asked = any(marker in json.dumps(r["messages"]) for r in stats["requests"])
        return True if asked and stats["in_flight"] > 0 else None

    await until(probe, f"no LLM call naming {marker} in flight")


async def settled(fake: Fake) -> None:
    """Wait until the model has no call left in flight (a cut run's call sleeps on), so the
    next test's statistics count only its own calls."""
    async def probe() -> bool | None:
        return True if (await fake_stats(fake))["in_flight"] <= 0 else None

    await until(probe, "the scripted model still has calls in flight")


async def requests_naming(fake: Fake, text: str) -> list[str]:
    """Every LLM request (all its messages, as JSON) that names `text`."""
    found = [json.dumps(r["messages"], ensure_ascii=False)
             for r in (await fake_stats(fake))["requests"]]
    return [r for r in found if text in r]


async def run_status(client: LangGraphClient, thread_id: str, run_id: str) -> str:
    return str((await client.runs.get(thread_id, run_id))["status"])


async def http_status(call: Awaitable[Any]) -> int | None:
    """The HTTP error status `call` fails with; None when it succeeds."""
    try:
        await call
    except httpx.HTTPStatusError as exc:
        return exc.response.status_code
    return None


# --- chat UI: messages in, answer tokens out -----------------------------------------------------


async def test_a_chat_ui_streams_answer_tokens_and_continues_the_conversation(
    client: LangGraphClient, fake: Fake, server: Server
) -> None:
    await script(fake, rules=qa_rules())
    thread_id = await new_thread(client)

    # Turn 1: a paper; the intent classifier and the answer both call the model.
    first = await ask(client, thread_id, QUESTION, input={"content": _paper()})
    state = await client.threads.get_state(thread_id)
    values = cast(dict[str, Any], state["values"])
    messages = values["messages"]
    assert [m["type"] for m in messages] == ["human", "ai"], messages
    assert text_of(messages[0]) == QUESTION
    ai = messages[-1]
    assert text_of(ai) == ANSWER == values["answer"]

    # messages-tuple: the answer's tokens, nothing of the intent classifier's JSON.
    assert first.tokens, f"no messages-tuple events: {[e for e, _ in first.parts]}"
    nodes = {node for node, _, _ in first.tokens}
    assert nodes <= ANSWER_NODES, f"messages-tuple events from {nodes}: {first.tokens}"
    streamed = "".join(text for _, text, _ in first.tokens)
    assert "intent" not in streamed and "{" not in streamed, streamed
    assert streamed == text_of(ai), (streamed, text_of(ai))
    assert len([t for _, t, _ in first.tokens if t]) > 1, "the answer did not stream by tokens"
    # One message: the chunks carry the id of the AI message the thread keeps, so a chat UI
    # that merges messages by id shows one answer, not the chunks and then a copy.
    assert {i for _, _, i in first.tokens} == {ai["id"]}, (first.tokens, ai["id"])

    # values: what agent-chat-ui renders; custom: scholarflow's own events.
    assert [m["type"] for m in first.values["messages"]] == ["human", "ai"]
    assert first.values["answer"] == ANSWER
    assert (first.values["detected_intent"], first.values["strategy"]) == (
        "LITERATURE_QA", "full_content")
    assert first.types()[-1] == "final_answer", first.types()
    session = first.values["session"]
    assert session["session_id"] == thread_id
    assert session["title"] == QUESTION
    assert session["message_count"] == 2 and session["total_token_count"] > 0

    # Turn 2 on the same thread: chat, with turn 1 as its history.
    follow_up = "Thanks! Who wrote it?"
    second = await ask(client, thread_id, follow_up)
    after = await conversation(client, thread_id)
    assert after[:2] == [("human", QUESTION), ("ai", ANSWER)]
    assert [t for t, _ in after] == ["human", "ai", "human", "ai"]
    assert after[2] == ("human", follow_up)
    assert {node for node, _, _ in second.tokens} == {"simple_interaction"}, second.tokens
    assert "".join(t for _, t, _ in second.tokens) == after[3][1]
    prompts = await requests_naming(fake, follow_up)
    assert len(prompts) == 1 and QUESTION in prompts[0] and ANSWER in prompts[0], prompts
    # Per-run inputs are not inherited: no document, so chat.
    assert (second.values["detected_intent"], second.values["strategy"]) == (
        "SIMPLE_INTERACTION", None)
    stats = second.values["session"]
    assert stats["session_id"] == thread_id and stats["title"] == QUESTION
    assert stats["message_count"] == 4
    assert stats["total_token_count"] > session["total_token_count"]
    assert stats["created_at"] == session["created_at"]
    assert stats["updated_at"] >= session["updated_at"]


# --- cancel and multitask strategies -------------------------------------------------------------


def _slow_paper_run(marker: str) -> dict[str, Any]:
    """A run over a paper with a mode: what a cut run must not hand to the next one.
    Its question names `marker`; its document's text names `doc_marker(marker)`."""
    return {"messages": [human(f"{marker}: which attention pattern?")],
            "document_contents": {f"paper-{marker.lower()}":
                                  f"{_paper()}\n\n{doc_marker(marker)}\n"},
            "mode_type": "LITERATURE_QA"}


def doc_marker(marker: str) -> str:
    return f"Appendix {marker[::-1]}"


async def _assert_answered_alone(
    client: LangGraphClient, fake: Fake, thread_id: str, run_id: str, question: str,
    marker: str,
) -> None:
    """The run `run_id` answered `question` as chat, with nothing of the `marker` run."""
    state = await client.threads.get_state(thread_id)
    values = cast(dict[str, Any], state["values"])
    assert values["messages"][-1]["type"] == "ai"
    assert values["detected_intent"] == "SIMPLE_INTERACTION", values["detected_intent"]
    assert values["strategy"] is None
    assert not values.get("documents"), values.get("documents")
    assert not values.get("document_texts")
    assert await run_status(client, thread_id, run_id) == "success"
    prompts = await requests_naming(fake, question)
    assert prompts, f"no LLM call for {question!r}"
    # The other run's question may be history; its document is not.
    leaked = [p for p in prompts if doc_marker(marker) in p or "AnchorWindow" in p]
    assert not leaked, f"the run was given the other run's document: {leaked}"


async def test_cancel_then_the_next_run_has_none_of_its_documents(
    client: LangGraphClient, fake: Fake
) -> None:
    marker = "SLOWCANCEL"
    await script(fake, rules=[slow_rule(marker)])
    thread_id = await new_thread(client)
    cut = await client.runs.create(thread_id, GRAPH_ID, input=_slow_paper_run(marker))
    await in_model(fake, marker)
    await client.runs.cancel(thread_id, cut["run_id"], wait=True)
    assert await run_status(client, thread_id, cut["run_id"]) == "interrupted"

    question = "And what is a transformer, in one line?"
    after = await ask(client, thread_id, question)
    await _assert_answered_alone(client, fake, thread_id, after.run_id, question, marker)
    messages = await conversation(client, thread_id)
    # The cancelled run's question stays in the thread, unanswered.
    assert [t for t, _ in messages] == ["human", "human", "ai"], messages
    assert messages[0][1].startswith(marker) and messages[1] == ("human", question)
    await settled(fake)


async def test_multitask_reject_refuses_a_second_run(client: LangGraphClient, fake: Fake) -> None:
    marker = "SLOWREJECT"
    await script(fake, rules=[slow_rule(marker)])
    thread_id = await new_thread(client)
    busy = await client.runs.create(thread_id, GRAPH_ID, input=_slow_paper_run(marker))
    await in_model(fake, marker)
    refused = await http_status(client.runs.create(
        thread_id, GRAPH_ID, input=chat("Are you there?"),
        multitask_strategy="reject"))
    assert refused == 409, refused
    await client.runs.join(thread_id, busy["run_id"])
    assert await run_status(client, thread_id, busy["run_id"]) == "success"
    assert [t for t, _ in await conversation(client, thread_id)] == ["human", "ai"]
    assert (await requests_naming(fake, "Are you there?")) == []


async def test_multitask_enqueue_runs_both_in_order(client: LangGraphClient, fake: Fake) -> None:
    marker = "SLOWENQUEUE"
    await script(fake, rules=[slow_rule(marker)])
    thread_id = await new_thread(client)
    first = await client.runs.create(thread_id, GRAPH_ID, input=_slow_paper_run(marker))
    await in_model(fake, marker)
    question = "What did you just say?"
    queued = await client.runs.create(thread_id, GRAPH_ID,
                                      input=chat(question),
                                      multitask_strategy="enqueue")
    await client.runs.join(thread_id, queued["run_id"])
    assert await run_status(client, thread_id, first["run_id"]) == "success"
    assert await run_status(client, thread_id, queued["run_id"]) == "success"
    messages = await conversation(client, thread_id)
    assert [t for t, _ in messages] == ["human", "ai", "human", "ai"], messages
    assert messages[0][1].startswith(marker) and messages[1][1] == SLOW_REPLY
    assert messages[2][1] == question
    # The queued run ran after the first: it saw the first answer as history, and none of
    # the first run's documents.
    await _assert_answered_alone(client, fake, thread_id, queued["run_id"], question, marker)
    assert all(SLOW_REPLY in p for p in await requests_naming(fake, question))


async def test_multitask_interrupt_cuts_the_run_and_keeps_nothing_of_its_request(
    client: LangGraphClient, fake: Fake
) -> None:
    marker = "SLOWINTERRUPT"
    await script(fake, rules=[slow_rule(marker)])
    thread_id = await new_thread(client)
    cut = await client.runs.create(thread_id, GRAPH_ID, input=_slow_paper_run(marker))
    await in_model(fake, marker)
    question = "Never mind that. Hello?"
    second = await client.runs.create(thread_id, GRAPH_ID,
                                      input=chat(question),
                                      multitask_strategy="interrupt")
    await client.runs.join(thread_id, second["run_id"])
    assert await run_status(client, thread_id, cut["run_id"]) == "interrupted"
    await _assert_answered_alone(client, fake, thread_id, second["run_id"], question, marker)
    messages = await conversation(client, thread_id)
    assert messages[-2] == ("human", question), messages
    assert SLOW_REPLY not in [text for _, text in messages]
    await settled(fake)


async def test_multitask_rollback_removes_the_rolled_back_question(
    client: LangGraphClient, fake: Fake
) -> None:
    marker = "SLOWROLLBACK"
    await script(fake, rules=[slow_rule(marker)])
    thread_id = await new_thread(client)
    await ask(client, thread_id, "Hello there")
    rolled_back = await client.runs.create(thread_id, GRAPH_ID, input=_slow_paper_run(marker))
    await in_model(fake, marker)
    question = "Let me ask something else: hi?"
    second = await client.runs.create(thread_id, GRAPH_ID,
                                      input=chat(question),
                                      multitask_strategy="rollback")
    await client.runs.join(thread_id, second["run_id"])
    # The rolled-back run is gone, and so is everything it wrote to the thread.
    assert await http_status(client.runs.get(thread_id, rolled_back["run_id"])) == 404
    messages = await conversation(client, thread_id)
    assert [t for t, _ in messages] == ["human", "ai", "human", "ai"], messages
    assert messages[0] == ("human", "Hello there") and messages[2] == ("human", question)
    assert not [text for _, text in messages if marker in text], messages
    await _assert_answered_alone(client, fake, thread_id, second["run_id"], question, marker)
    state = await client.threads.get_state(thread_id)
    assert cast(dict[str, Any], state["values"])["session"]["message_count"] == 4
    await settled(fake)


# --- threads: copy, fork, delete -----------------------------------------------------------------


async def test_a_copied_thread_is_an_independent_conversation(
    client: LangGraphClient, fake: Fake
) -> None:
    await script(fake)
    original = await new_thread(client)
    await ask(client, original, "First question of the original")
    before = await conversation(client, original)
    copied = cast(dict[str, Any], await client.threads.copy(original))
    copy_id = str(copied["thread_id"])
    assert copy_id != original
    assert await conversation(client, copy_id) == before

    on_copy = await ask(client, copy_id, "A question only the copy gets")
    assert await conversation(client, original) == before
    after = await conversation(client, copy_id)
    assert after[:2] == before and after[2] == ("human", "A question only the copy gets")
    assert len(after) == 4
    # The copy is a session of its own: the copy's id, its own statistics.
    assert on_copy.values["session"]["session_id"] == copy_id
    assert on_copy.values["session"]["message_count"] == 4
    kept = cast(dict[str, Any], (await client.threads.get_state(original))["values"])
    assert kept["session"]["session_id"] == original
    assert kept["session"]["message_count"] == 2


async def test_a_fork_from_history_sees_only_the_turns_before_it(
    client: LangGraphClient, fake: Fake
) -> None:
    await script(fake)
    thread_id = await new_thread(client)
    turn1 = await ask(client, thread_id, "Turn one: the first question")
    await ask(client, thread_id, "Turn two: the road not taken")
    history = await client.threads.get_history(thread_id, limit=100)
    end_of_turn1 = next(c for c in history
                        if (c["metadata"] or {}).get("run_id") == turn1.run_id
                        and not c["next"])
    checkpoint = end_of_turn1["checkpoint"]

    # Fork by checkpoint_id ...
    forked = await ask(client, thread_id, "Turn three, forked from turn one",
                       checkpoint_id=checkpoint["checkpoint_id"])
    messages = await conversation(client, thread_id)
    assert [text for _, text in messages][0::2] == [
        "Turn one: the first question", "Turn three, forked from turn one"], messages
    assert len(messages) == 4
    assert forked.values["session"]["message_count"] == 4
    prompts = await requests_naming(fake, "Turn three, forked from turn one")
    assert len(prompts) == 1 and "Turn one" in prompts[0], prompts
    assert "road not taken" not in prompts[0], "the fork sent the abandoned turn to the model"

    # ... and again by checkpoint, from the same point.
    await ask(client, thread_id, "Turn four, forked again",
              checkpoint={"checkpoint_id": checkpoint["checkpoint_id"],
                          "checkpoint_ns": checkpoint.get("checkpoint_ns", "")})
    messages = await conversation(client, thread_id)
    assert [text for _, text in messages][0::2] == [
        "Turn one: the first question", "Turn four, forked again"], messages
    prompts = await requests_naming(fake, "Turn four, forked again")
    assert len(prompts) == 1 and "Turn three" not in prompts[0] and "road not" not in prompts[0]


async def test_a_deleted_thread_is_gone(client: LangGraphClient, fake: Fake) -> None:
    await script(fake)
    thread_id = await new_thread(client)
    await ask(client, thread_id, "Something to delete")
    await client.threads.delete(thread_id)
    assert await http_status(client.threads.get(thread_id)) == 404
    assert await http_status(client.threads.get_state(thread_id)) == 404


# --- failures ------------------------------------------------------------------------------------


async def test_a_run_the_model_refuses_ends_in_error_and_keeps_the_question(
    client: LangGraphClient, fake: Fake
) -> None:
    await script(fake, rules=[{"match": ".", "status": 401}])
    thread_id = await new_thread(client)
    question = "Is anybody listening?"
    run = await stream(client, thread_id, input=chat(question))

    assert run.data("error"), f"no error event: {[e for e, _ in run.parts]}"
    assert await run_status(client, thread_id, run.run_id) == "error"
    assert {"node_error", "error"} & set(run.types()), run.types()
    assert "final_answer" not in run.types()
    messages = await conversation(client, thread_id)
    assert messages == [("human", question)], messages
    assert (await fake_stats(fake))["chat_calls"] >= 1


# --- human in the loop ---------------------------------------------------------------------------


async def test_review_plan_pauses_after_planning_and_resumes_on_approval(
    client: LangGraphClient, fake: Fake
) -> None:
    # Under six words: attribution (nodes/attribution.py) keeps the model's [1] as it is.
    answer = "Both use 3e-4 [1]."
    await script(fake, rules=[
        {"match": SUBQ_RULE, "reply": '{"sub_questions": ['
         '{"question": "learning rate of the sparse model", "doc_id": "sparse"}, '
         '{"question": "learning rate of the retrieval model", "doc_id": "rag"}]}'},
        {"match": CITED_RULE, "reply": answer},
    ])
    thread_id = await new_thread(client)
    question = "Which learning rate does each paper use?"
    paused = await stream(
        client, thread_id, context={"review_plan": True},
        input={"messages": [human(question)], "mode_type": "LITERATURE_QA",
               "document_contents": {"sparse": _paper(),
                                     "rag": _paper("en_retrieval_qa.md")}})

    assert not paused.failures(), paused.failures()
    done = [e.get("node") for e in paused.custom if e.get("type") == "node_complete"]
    assert {"sub_question_generation", "plan_generation"} <= set(done), done
    assert "execution" not in done and "final_answer" not in paused.types(), done
    thread = await client.threads.get(thread_id)
    assert thread["status"] == "interrupted", thread["status"]
    state = cast(dict[str, Any], await client.threads.get_state(thread_id))
    interrupts = state.get("interrupts") or [
        i for task in state.get("tasks") or [] for i in task.get("interrupts") or []]
    assert len(interrupts) == 1, state
    shown = interrupts[0]["value"]
    assert shown["type"] == "review_plan", shown
    assert shown["question"] == question
    assert shown["sub_questions"] == [
        "learning rate of the sparse model", "learning rate of the retrieval model"], shown
    assert len(shown["plan"]) == 2 and shown["how_to_resume"], shown
    # The stream itself showed the pause, as agent-chat-ui reads it.
    assert "__interrupt__" in paused.values, sorted(paused.values)
    assert (await fake_stats(fake))["requests"] and not await requests_naming(fake, CITED_RULE)

    resumed = await stream(client, thread_id, command={"resume": {"action": "approve"}},
                           context={"review_plan": True})
    assert not resumed.failures(), resumed.failures()
    assert resumed.types()[-1] == "final_answer", resumed.types()
    assert resumed.values["answer"] == answer
    assert resumed.values["strategy"] == "chunk_recall"
    assert {n for n, _, _ in resumed.tokens} == {"answer_generation"}, resumed.tokens
    assert (await client.threads.get(thread_id))["status"] == "idle"
    assert await conversation(client, thread_id) == [("human", question), ("ai", answer)]


async def test_a_summary_past_the_cost_limit_waits_for_approval(
    client: LangGraphClient, fake: Fake
) -> None:
    """Expected: paused in cost_check with the estimate, no summary sent; approved, it
    answers; declined on another thread, the run ends in error with the message."""
    await script(fake, rules=[
        {"match": SUMMARY_RULE, "reply": "One paper's summary."},
        {"match": "summarise a set of academic documents", "reply": "Both papers agree."},
    ])
    question = "Summarize these papers"
    request = {"messages": [human(question)], "mode_type": "LITERATURE_SUMMARY",
               "document_contents": {"sparse": _paper(), "rag": _paper("en_retrieval_qa.md")}}
    limits = {"approval_documents": 1}
    thread_id, declined_id = await new_thread(client), await new_thread(client)
    paused = await stream(client, thread_id, input=request, context=limits)
    assert not paused.failures(), paused.failures()
    assert (await client.threads.get(thread_id))["status"] == "interrupted"
    state = cast(dict[str, Any], await client.threads.get_state(thread_id))
    (shown,) = [i["value"] for task in state.get("tasks") or []
                for i in task.get("interrupts") or []]
    assert (shown["type"], shown["documents"], shown["llm_calls"]) == ("approve_cost", 2, 3)
    assert shown["estimate"].startswith("this summary would send 2 documents"), shown
    assert not await requests_naming(fake, SUMMARY_RULE)

    resumed = await stream(client, thread_id, command={"resume": {"action": "approve"}},
                           context=limits)
    assert not resumed.failures(), resumed.failures()
    assert resumed.values["answer"] == "Both papers agree."
    assert len(await requests_naming(fake, SUMMARY_RULE)) == 2

    # Other ids: the summaries cached by the approved run would cost nothing.
    request["document_contents"] = {"sparse-2": _paper(), "rag-2": _paper("en_retrieval_qa.md")}
    await stream(client, declined_id, input=request, context=limits)
    declined = await stream(client, declined_id, command={"resume": "decline"}, context=limits)
    errors = [e for e in declined.custom if e.get("type") == "error"]
    assert [e["message"].split(" (")[0] for e in errors] == [
        "the summary was not run: its cost was declined"], declined.custom
    assert await run_status(client, declined_id, declined.run_id) == "error"
    assert len(await requests_naming(fake, SUMMARY_RULE)) == 2  # nothing more was sent


# --- load ----------------------------------------------------------------------------------------


# --- JavaScript: @langchain/langgraph-sdk with Node ----------------------------------------------


def _run_node(server: Server, fake: Fake, config: Path) -> dict[str, Any]:
    assert NODE is not None
    if not (JS_DIR / "node_modules" / "@langchain" / "langgraph-sdk").is_dir():
        pytest.fail("tests/integration/js has no node_modules: run scripts/setup.sh "
                    "(or `npm ci --prefix tests/integration/js`)")
    proc = subprocess.run(
        [NODE, str(JS_SCRIPT), server.url, fake.admin, str(config)],
        capture_output=True, text=True, encoding="utf-8", cwd=REPO, timeout=5 * RUN_TIMEOUT,
        check=False, stdin=subprocess.DEVNULL)
    shown = f"node clients.mjs -> {proc.returncode}\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    assert proc.returncode == 0, f"{shown}\n{server.log_tail()}"
    return cast(dict[str, Any], json.loads(proc.stdout))


@pytest.mark.skipif(NODE is None, reason="node is not installed (the JavaScript SDK runs on it)")
async def test_the_javascript_sdk_drives_the_same_server(
    server: Server, fake: Fake, tmp_path: Path
) -> None:
    nonce = uuid.uuid4().hex[:8]
    config = {
        "graph": GRAPH_ID,
        "paper": _paper(),
        "second_paper": _paper("en_retrieval_qa.md"),
        "question": QUESTION,
        "cancel_marker": f"SLOWJSCANCEL{nonce}",
        "cancel_doc_marker": doc_marker(f"SLOWJSCANCEL{nonce}"),
        "next_question": f"After the cancel: hello from JavaScript {nonce}",
        "multitask_marker": f"SLOWJSMULTI{nonce}",
        "multitask_doc_marker": doc_marker(f"SLOWJSMULTI{nonce}"),
        "rejected_question": f"Refused from JavaScript {nonce}",
        "queued_question": f"Queued from JavaScript {nonce}",
        "copy_question": f"Only the copy hears this {nonce}",
        "review_question": "Which learning rate does each paper use?",
    }
    answer = "Both use 3e-4 [1]."
    await script(fake, rules=[
        slow_rule(config["cancel_marker"]),
        slow_rule(config["multitask_marker"]),
        {"match": INTENT_RULE, "reply": INTENT_QA},
        {"match": SUBQ_RULE, "reply": '{"sub_questions": ['
         '{"question": "learning rate of the sparse model", "doc_id": "sparse"}, '
         '{"question": "learning rate of the retrieval model", "doc_id": "rag"}]}'},
        # Before QA_RULE: the answer over recalled passages is a LITERATURE_QA prompt too.
        {"match": CITED_RULE, "reply": answer},
        {"match": QA_RULE, "reply": ANSWER},
    ])
    path = tmp_path / "js_config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    out = await asyncio.to_thread(_run_node, server, fake, path)
    failed = {name: part["error"] for name, part in out.items() if "error" in part}
    problems: list[str] = [f"{name} threw: {error}" for name, error in failed.items()]

    def check(name: str, ok: bool, shown: Any) -> None:
        if not ok:
            problems.append(f"{name}: {json.dumps(shown, ensure_ascii=False)[:1500]}")

    # messages input, streamMode ["values", "messages-tuple", "custom"]
    if "stream" not in failed:
        chat = out["stream"]
        ai = chat["state_messages"][-1]
        check("stream errors", not chat["errors"], chat["errors"])
        check("stream modes", {"values", "messages", "custom"} <= set(chat["events"]),
              chat["events"])
        check("thread messages", [m["type"] for m in chat["state_messages"]] == ["human", "ai"]
              and ai["content"] == ANSWER == chat["values"]["answer"], chat["state_messages"])
        check("messages-tuple nodes", set(chat["token_nodes"]) <= ANSWER_NODES,
              chat["token_nodes"])
        check("messages-tuple tokens add up to the answer", "".join(chat["tokens"]) == ANSWER,
              chat["tokens"])
        check("messages-tuple ids are the AI message's", chat["token_ids"] == [ai["id"]],
              [chat["token_ids"], ai["id"]])
        check("custom events", chat["custom_types"][-1:] == ["final_answer"],
              chat["custom_types"])
        check("session", (chat["values"]["session"] or {}).get("session_id")
              == chat["thread_id"], chat["values"])

    # cancel: the cancelled run is interrupted; the next run has none of its documents
    if "cancel" not in failed:
        cancel = out["cancel"]
        check("cancelled run", cancel["cancelled_status"] == "interrupted", cancel)
        check("run after the cancel", cancel["next_status"] == "success"
              and not cancel["next_errors"], cancel)
        check("run after the cancel is chat", (cancel["next_values"]["detected_intent"],
              cancel["next_values"]["strategy"]) == ("SIMPLE_INTERACTION", None), cancel)
        check("run after the cancel has no documents", not cancel["next_documents"], cancel)
        prompts = await requests_naming(fake, config["next_question"])
        leaked = [p for p in prompts if config["cancel_doc_marker"] in p]
        check("run after the cancel was given the cancelled run's document",
              bool(prompts) and not leaked, leaked or "no LLM call")

    # multitask: reject refuses with 409; enqueue runs after the busy run
    if "multitask" not in failed:
        multi = out["multitask"]
        check("reject", multi["reject_status"] == 409, multi)
        check("enqueue statuses", multi["statuses"] == ["success", "success"], multi)
        check("enqueue order", multi["message_types"] == ["human", "ai", "human", "ai"]
              and multi["messages"][1:3] == [SLOW_REPLY, config["queued_question"]], multi)
        check("rejected run never ran",
              not await requests_naming(fake, config["rejected_question"]), multi)

    # threads.copy: the copy goes on alone
    if "copy" not in failed:
        copied = out["copy"]
        check("copy", copied["copy_id"] != copied["original_id"] and not copied["errors"]
              and (copied["original_count"], copied["copy_count"]) == (2, 4), copied)
        check("copy's session", (copied["copy_session"] or {}).get("session_id")
              == copied["copy_id"], copied)

    # interrupt (review_plan) and resume
    if "review" not in failed:
        review = out["review"]
        shown = review["interrupt"]
        check("review_plan pause", review["thread_status"] == "interrupted"
              and not review["paused_errors"] and review["streamed_interrupt"], review)
        check("review_plan interrupt value", isinstance(shown, dict)
              and shown.get("type") == "review_plan" and len(shown.get("plan") or []) == 2
              and shown.get("question") == config["review_question"], shown)
        check("resume", review["resumed_answer"] == answer and not review["resumed_errors"]
              and review["resumed_strategy"] == "chunk_recall"
              and review["final_status"] == "idle"
              and review["message_types"] == ["human", "ai"], review)

    assert not problems, "\n".join(problems)
