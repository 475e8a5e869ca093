"""Reasoning models: inline <think> blocks and reasoning_content never reach the answer."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator

import pytest

from scholarflow import Context
from scholarflow.llm import reasoning
from scholarflow.llm.model import ReasoningChatOpenAI
from scholarflow.llm.reasoning import ThinkSplitter
from tests.conftest import INTENT_RULE, paper
from tests.support import FakeOpenAIServer
from tests.unit.test_messages_stream import assert_only_the_answer_streams, stream


@pytest.fixture(autouse=True)
def _forget_models() -> Iterator[None]:
    """What llm/reasoning.py learns about a model is process-wide: the scripted server's
    model must not stay a "thinker" for the other modules of this worker."""
    yield
    reasoning._thinkers.clear()
    reasoning._opens_in_prompt.clear()


def _split(pieces: list[str], key: str = "m") -> tuple[str, str]:
    """(answer, thought) of a reply streamed in `pieces`, as llm._StreamCall joins them."""
    splitter = ThinkSplitter(key)
    answer, thought = "", ""
    for part in [*(splitter.feed(p) for p in pieces), splitter.flush()]:
        if part.restart:
            thought, answer = thought + answer, ""
        answer += part.answer
        thought += part.thought
    return answer, thought


def _pieces(text: str, seed: int) -> list[str]:
    """`text` cut at random places, as a stream may cut it (mid-tag included)."""
    rng = random.Random(seed)
    cuts = sorted(rng.sample(range(1, len(text)), min(12, len(text) - 1)))
    return [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]


@pytest.mark.parametrize("seed", range(20))
def test_an_inline_think_block_is_thought_however_the_stream_cuts_it(seed: int) -> None:
    reply = "<think>\nThe user asks about 3e-4; check the table.\n</think>\n\nThey used 3e-4."
    answer, thought = _split(_pieces(reply, seed), key=f"qwen3-{seed}")
    assert answer == "They used 3e-4."
    assert thought.strip() == "The user asks about 3e-4; check the table."


@pytest.mark.parametrize("seed", range(10))
def test_a_close_without_an_open_makes_what_came_before_thought(seed: int) -> None:
    # R1 distills on vLLM: the chat template opened the block in the prompt.
    key = f"r1-distill-{seed}"
    reply = "Okay, the paper says 3e-4.\n</think>\n\n学习率是 3e-4。"
    answer, thought = _split(_pieces(reply, seed), key=key)
    assert answer == "学习率是 3e-4。"
    assert "the paper says" in thought
    # Learned: the next reply of that model starts inside a thought, so nothing leaks.
    splitter = ThinkSplitter(key)
    first = splitter.feed("Still thinking")
    assert first.answer == "" and first.thought == "Still thinking"


def test_text_without_tags_streams_at_once_except_a_possible_tag_start() -> None:
    splitter = ThinkSplitter("plain-model")
    assert splitter.feed("The answer is 42 <").answer == "The answer is 42 "
    assert splitter.feed("b>bold</b>").answer == "<b>bold</b>"
    assert splitter.flush().answer == ""


def test_an_unclosed_thought_is_never_answer() -> None:
    answer, thought = _split(["<think>I am still thinking when max_tokens ran out"],
                             key="cut-model")
    assert answer == "" and thought.startswith("I am still")


def test_a_whole_reply_split_in_one_piece_parses_as_json() -> None:
    reply = '<think>They want the intent.</think>\n{"intent": "LITERATURE_QA"}'
    answer, thought = _split([reply], key="json-model")
    assert json.loads(answer) == {"intent": "LITERATURE_QA"} and thought.startswith("They")


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
async def test_streamed_reasoning_fields_are_kept_apart_from_the_content(
    llm_server: FakeOpenAIServer, field: str
) -> None:
    # DeepSeek's documented shape (api-docs.deepseek.com, reasoning_model): the
    # thought streams in delta.reasoning_content, then the answer in delta.content.
    # Ollama and OpenRouter call the field `reasoning`.
    llm_server.reset()
    llm_server.configure(rules=[{"match": "q", "reasoning": "Let me think. Yes.",
                                 "reasoning_field": field, "reply": "It is 3e-4."}])
    model = ReasoningChatOpenAI(model="deepseek-reasoner", base_url=llm_server.base_url,
                                api_key="sk-test-not-a-real-key")
    thought, text = "", ""
    async for chunk in model.astream("q", max_tokens=50):
        thought += chunk.additional_kwargs.get("reasoning_content", "")
        text += chunk.text
    assert (thought, text) == ("Let me think. Yes.", "It is 3e-4.")
    # A compatible server gets the bound as max_tokens (older servers ignore the
    # max_completion_tokens that ChatOpenAI would send).
    (request,) = llm_server.stats().requests
    assert (request["max_tokens"], request["max_tokens_field"]) == (50, "max_tokens")


async def test_a_thinking_model_thinks_in_thinking_events_only(fake_llm: FakeOpenAIServer) -> None:
    # Qwen3 / R1 on vLLM or Ollama without a reasoning parser: thoughts inline, in the
    # intent JSON's reply and in the streamed answer.
    fake_llm.configure(rules=[
        {"match": INTENT_RULE, "reply": "<think>INTENT-THOUGHT: a review.</think>\n"
                                        '{"intent": "PAPER_REVIEW", "confidence": 0.9}'},
        {"match": "expert, fair referee",
         "reply": "<think>\nANSWER-THOUGHT: weigh the baselines.\n</think>\n\nSolid method."},
    ])
    run = await stream({"query": "Thoughts?", "content": paper("en_retrieval_qa.md")},
                       modes=("messages", "custom"))
    assert (run.state["intent_decided_by"], run.state["detected_intent"]) == (
        "llm", "PAPER_REVIEW")
    streamed = assert_only_the_answer_streams(run, hidden=("THOUGHT", "think>"))
    assert streamed == "Solid method."
    thoughts = "".join(e["content"] for e in run.custom if e["type"] == "thought_chunk")
    assert "INTENT-THOUGHT" in thoughts and "ANSWER-THOUGHT" in thoughts
    answer_events = "".join(e["content"] for e in run.custom if e["type"] == "answer_chunk")
    assert answer_events == "Solid method."
    assert all("THOUGHT" not in str(m.content) for m in run.state["messages"])


async def test_with_show_thinking_off_thoughts_go_nowhere(fake_llm: FakeOpenAIServer) -> None:
    fake_llm.configure(rules=[{"match": "expert, fair referee",
                               "reply": "<think>HIDDEN-THOUGHT</think>Fine paper."}])
    run = await stream({"query": "Review this paper critically.", "mode_type": "PAPER_REVIEW",
                        "content": paper("en_retrieval_qa.md")},
                       Context(show_thinking=False), modes=("messages", "custom"))
    assert assert_only_the_answer_streams(run) == "Fine paper."
    assert "HIDDEN-THOUGHT" not in repr(run.custom)


async def test_deepseek_reasoning_content_becomes_thinking_events(
        fake_llm: FakeOpenAIServer) -> None:
    # The planner's and the answer's thoughts arrive in delta.reasoning_content.
    fake_llm.configure(rules=[
        {"match": "search questions that together retrieve", "reasoning": "PLAN-THOUGHT",
         "reply": '{"sub_questions": [{"question": "learning rate"}]}'},
        {"match": "numbered passages recalled", "reasoning": "ANSWER-THOUGHT about [1]",
         "reply": "They used 3e-4 [1]."},
    ])
    run = await stream({"query": "What learning rate did they use?",
                        "content": paper("en_sparse_attention.md")},
                       Context(direct_content_threshold=0.0), modes=("messages", "custom"))
    assert run.state["strategy"] == "chunk_recall"
    assert assert_only_the_answer_streams(run, hidden=("THOUGHT",)) == "They used 3e-4 [1]."
    thoughts = "".join(e["content"] for e in run.custom if e["type"] == "thought_chunk")
    assert "PLAN-THOUGHT" in thoughts and "ANSWER-THOUGHT" in thoughts
    assert run.state["sub_questions"][0]["question"] == "learning rate"  # the JSON parsed


async def test_a_thinking_model_gets_room_to_think_within_a_short_bound(
        fake_llm: FakeOpenAIServer) -> None:
    from scholarflow.llm import calls as llm
    from scholarflow.llm.budget import answer_reserve

    fake_llm.configure(rules=[{"match": "ping", "reasoning": "hmm", "reply": "pong"}])
    ctx = Context()
    first = await llm.complete(ctx, [("user", "ping")], node="t", max_tokens=100)
    second = await llm.complete(ctx, [("user", "ping")], node="t", max_tokens=100)
    assert (first.text, first.reasoning, second.text) == ("pong", "hmm", "pong")
    bounds = [r["max_tokens"] for r in fake_llm.stats().requests]
    # Once it is known to think, the thought no longer eats the 100 tokens of the reply.
    assert bounds == [100, answer_reserve(ctx)]


async def test_a_reply_cut_off_by_the_server_is_retried_not_kept(
        fake_llm: FakeOpenAIServer) -> None:
    # llama-cpp-python's server drops a running request when a new one comes: the
    # stream just ends, with no finish_reason. Half a summary must not pass as one.
    from scholarflow.errors import CutOffLLMError, RateLimitedLLMError
    from scholarflow.llm import calls as llm

    fake_llm.configure(rules=[{"match": "summarise", "reply": "The paper shows", "cut": True,
                               "times": 1},
                              {"match": "summarise", "reply": "The paper shows a gain."}])
    with pytest.raises(CutOffLLMError, match="broke off before it finished"):
        await llm.complete(Context(), [("user", "summarise it")], node="t")
    again = await llm.complete(Context(), [("user", "summarise it")], node="t")
    assert again.text == "The paper shows a gain."
    # Too many calls at once is what it signals: it backs off (and retries) like a 429.
    assert issubclass(CutOffLLMError, RateLimitedLLMError)
