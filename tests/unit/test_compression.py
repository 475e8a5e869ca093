"""Context compression (docs/architecture.md): thresholds, the 70/30 split, folding, failures.

session_save folds the thread's `messages` (conversation.compression_update);
compression_split says where to cut.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import BaseMessage
from langgraph.graph.message import _messages_delta_reducer

from scholarflow import Context
from scholarflow.errors import ScholarflowError
from scholarflow.nodes.session_save import compress
from scholarflow.sessions import Message, MessageType, compression_split
from scholarflow.sessions.conversation import (
    active_tokens,
    answer_message,
    is_compressed,
    message_text,
    message_type,
    question_message,
)
from scholarflow.state import LLMUsage
from tests.support import FakeOpenAIServer

U, A, C = MessageType.USER, MessageType.ASSISTANT, MessageType.COMPRESSION
SUMMARY_RULE = "Summarise the conversation below"


def conversation(rounds: int, start: int = 0) -> list[BaseMessage]:
    out: list[BaseMessage] = []
    for i in range(start, start + rounds):
        out.append(question_message(f"question {i}: " + "words " * 20))
        out.append(answer_message(f"answer {i}: " + "more words " * 40, message_id=None,
                                  metadata={}))
    return out


def applied(messages: list[BaseMessage], update: list[BaseMessage]) -> list[Any]:
    return list(_messages_delta_reducer(messages, [update]))  # as the thread applies it


def ctx_for(messages: list[BaseMessage], factor: float = 1.0) -> Context:
    """A context whose threshold (0.8 x max_context_tokens) is `factor` x 0.8 x the tokens,
    with room enough in one prompt for what is folded."""
    return Context(max_context_tokens=int(active_tokens(messages) * factor),
                   reserved_answer_tokens=100, system_tokens_estimate=100)


def texts(messages: list[Any]) -> list[tuple[MessageType | None, str, bool]]:
    return [(message_type(m), message_text(m)[:11], is_compressed(m)) for m in messages]


async def test_below_threshold_does_nothing(fake_llm: FakeOpenAIServer) -> None:
    messages = conversation(10)
    usage: list[LLMUsage] = []
    # 0.8 x (1.25 x total) is the total: not above it.
    assert await compress(ctx_for(messages, 1.25), messages, usage) is None
    assert usage == [] and fake_llm.stats().chat_calls == 0


async def test_above_threshold_folds_the_oldest_70_percent(fake_llm: FakeOpenAIServer) -> None:
    fake_llm.configure(rules=[{"match": SUMMARY_RULE, "reply": "SUMMARY"}])
    messages = conversation(10)  # 20 messages: 14 folded, 6 kept
    usage: list[LLMUsage] = []
    update = await compress(ctx_for(messages), messages, usage)
    assert update is not None and len(usage) == 1
    prompt = str(fake_llm.stats().requests[-1]["messages"])
    assert "question 6:" in prompt and "question 7:" not in prompt  # only what is folded
    after = applied(messages, update)
    assert [m.id for m in after[:14]] == [m.id for m in messages[:14]]
    assert [is_compressed(m) for m in after] == [True] * 14 + [False] * 7
    assert (message_type(after[14]), message_text(after[14])) == (C, "SUMMARY")
    assert [m.id for m in after[15:]] == [m.id for m in messages[14:]]  # kept, in order
    assert active_tokens(after) < active_tokens(messages)


async def test_second_compression_folds_the_first_summary(fake_llm: FakeOpenAIServer) -> None:
    fake_llm.configure(rules=[{"match": SUMMARY_RULE, "reply": "FIRST", "times": 1},
                              {"match": SUMMARY_RULE, "reply": "SECOND"}])
    first = conversation(10)
    first = applied(first, await compress(ctx_for(first), first, []) or [])
    messages = first + conversation(6, start=10)
    update = await compress(ctx_for(messages), messages, [])
    assert update is not None
    assert "FIRST" in str(fake_llm.stats().requests[-1]["messages"])  # summarised again
    after = applied(messages, update)
    active = [m for m in after if not is_compressed(m)]
    assert [message_text(m) for m in active if message_type(m) is C] == ["SECOND"]
    assert message_type(active[0]) is C and message_type(active[1]) is U  # a round boundary
    assert sum(message_type(m) is C for m in after) == 2  # the first stays, compressed


async def test_a_failed_summary_leaves_the_messages_alone(fake_llm: FakeOpenAIServer) -> None:
    fake_llm.configure(fail_first_n=10, fail_status=401)
    messages = conversation(5)
    before = texts(messages)
    with pytest.raises(ScholarflowError):  # session_save logs it; the answer is saved
        await compress(ctx_for(messages), messages, [])
    assert texts(messages) == before


async def test_a_window_too_small_to_summarise_in_is_left_alone(fake_llm: FakeOpenAIServer
                                                                ) -> None:
    """Each folded message would get a few tokens of the prompt: nothing to summarise."""
    messages = conversation(5)
    assert await compress(ctx_for(messages, 0.5), messages, []) is None
    assert fake_llm.stats().chat_calls == 0


async def test_a_single_round_is_split_rather_than_left_alone(fake_llm: FakeOpenAIServer
                                                              ) -> None:
    messages = [question_message("a very long question " * 50),
                answer_message("a very long answer " * 50, message_id=None, metadata={})]
    update = await compress(ctx_for(messages, 0.5), messages, [])
    assert update is not None
    assert [(t, c) for t, _, c in texts(applied(messages, update))] == [
        (U, True), (C, False), (A, False)]
    alone = messages[:1]
    assert await compress(ctx_for(alone, 0.5), alone, []) is None  # nothing to keep


def _msgs(types: str) -> list[Message]:
    kinds = {"U": U, "A": A, "C": C}
    return [Message(i, "s", kinds[t], t, 1, float(i), False) for i, t in enumerate(types)]


@pytest.mark.parametrize(
    ("types", "expected"),
    [
        ("UA" * 10, 14),  # exactly 70%, on a round boundary
        ("UA" * 5, 6),  # 7 would cut round 4 in half: keep it whole (4 kept)
        ("C" + "UA" * 5, 7),  # 8 cuts a round: back to 7, the summary folds in
        ("UAUAUAU", 4),  # a trailing unanswered question is a round
        ("UAA" * 3, 6),  # a round with two replies
        ("UA", 1),  # a single round is split: the only way to compress
        ("AUA", 1),  # a reply whose question is gone is a round of its own
        ("CU", 0),  # re-summarising the summary alone gains nothing
        ("U", 0),
        ("", 0),
    ],
)
def test_compression_split(types: str, expected: int) -> None:
    assert compression_split(_msgs(types)) == expected


def test_compression_split_keeps_at_least_one() -> None:
    assert compression_split(_msgs("UUU"), keep_fraction=0.01) == 2
