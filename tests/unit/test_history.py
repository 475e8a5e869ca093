"""History windows per stage (docs/architecture.md#sessions)."""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.graph.message import _messages_delta_reducer

from scholarflow.sessions import (
    SUMMARY_PREFIX,
    Message,
    MessageType,
    Stage,
    history_for,
    split_rounds,
    to_chat_messages,
)
from scholarflow.sessions.conversation import (
    answer_message,
    as_session_messages,
    compression_update,
    question_message,
)

U, A, C = MessageType.USER, MessageType.ASSISTANT, MessageType.COMPRESSION


def msg(id: int, type: MessageType, content: str = "", compressed: bool = False) -> Message:
    return Message(
        id=id,
        session_id="s",
        type=type,
        content=content or f"{type.value.lower()} {id}",
        token_count=1,
        created_at=float(id),
        compressed=compressed,
    )


def rounds(n: int, start: int = 1) -> list[Message]:
    out = []
    for i in range(n):
        out += [msg(start + 2 * i, U), msg(start + 2 * i + 1, A)]
    return out


def ids(messages: list[Message]) -> list[int]:
    return [m.id for m in messages]


# 5 rounds: ids 1..10.
CONVERSATION = rounds(5)


@pytest.mark.parametrize(
    ("stage", "expected"),
    [
        ("intent", [7, 8, 9, 10]),
        ("planning", [7, 8, 9, 10]),
        ("answer", [5, 6, 7, 8, 9, 10]),
        ("execution", []),
        ("chat", list(range(1, 11))),
    ],
)
def test_windows_without_summary(stage: Stage, expected: list[int]) -> None:
    assert ids(history_for(CONVERSATION, stage)) == expected


# Rounds 1-2 (ids 1-4) were compressed into summary 11; rounds 3-5 stay.
COMPRESSED = [
    *[msg(i, m.type, compressed=True) for i, m in enumerate(rounds(2), start=1)],
    msg(11, C, "they talked about transformers"),
    *rounds(3, start=5),
]


@pytest.mark.parametrize(
    ("stage", "expected"),
    [
        ("intent", [11, 7, 8, 9, 10]),
        ("planning", [11, 7, 8, 9, 10]),
        ("answer", [11, 5, 6, 7, 8, 9, 10]),
        ("execution", []),
        ("chat", [11, 5, 6, 7, 8, 9, 10]),
    ],
)
def test_windows_with_summary(stage: Stage, expected: list[int]) -> None:
    history = history_for(COMPRESSED, stage)
    assert ids(history) == expected
    assert not any(m.compressed for m in history)


def test_summary_comes_first_even_when_it_is_not_first_in_the_input() -> None:
    messages = [*rounds(1), msg(20, C)]
    assert ids(history_for(messages, "intent")) == [20, 1, 2]


def test_only_the_latest_summary_is_injected() -> None:
    messages = [msg(20, C, "old"), msg(21, C, "new"), *rounds(1)]
    assert ids(history_for(messages, "chat")) == [21, 1, 2]


def test_compressed_summary_is_not_injected() -> None:
    messages = [msg(20, C, compressed=True), msg(21, C), *rounds(1, start=30)]
    assert ids(history_for(messages, "answer")) == [21, 30, 31]


def test_a_trailing_question_without_reply_is_a_round() -> None:
    messages = [*rounds(3), msg(7, U)]
    assert ids(history_for(messages, "intent")) == [5, 6, 7]
    assert ids(history_for(messages, "answer")) == [3, 4, 5, 6, 7]


def test_rounds_are_counted_not_messages() -> None:
    # A question answered twice is one round of three messages.
    messages = [*rounds(2), msg(5, U), msg(6, A), msg(7, A)]
    assert ids(history_for(messages, "intent")) == [3, 4, 5, 6, 7]


def test_a_reply_whose_question_was_compressed_is_its_own_round() -> None:
    messages = [msg(9, C), msg(2, A), *rounds(2, start=3)]
    assert [ids(r) for r in split_rounds(messages[1:])] == [[2], [3, 4], [5, 6]]
    assert ids(history_for(messages, "answer")) == [9, 2, 3, 4, 5, 6]
    assert ids(history_for(messages, "intent")) == [9, 3, 4, 5, 6]


def test_short_histories_are_returned_whole() -> None:
    assert ids(history_for(rounds(1), "answer")) == [1, 2]
    assert history_for([], "chat") == []
    assert ids(history_for([msg(1, C)], "intent")) == [1]


def test_execution_never_sees_history_or_summary() -> None:
    assert history_for(COMPRESSED, "execution") == []


def test_unknown_stage_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown stage"):
        history_for(CONVERSATION, "recall")  # type: ignore[arg-type]


def test_to_chat_messages() -> None:
    history = history_for(COMPRESSED, "intent")
    pairs = to_chat_messages(history)
    assert pairs[0] == ("system", SUMMARY_PREFIX + "they talked about transformers")
    assert SUMMARY_PREFIX == "Summary of the earlier conversation:\n"
    assert pairs[1:] == [
        ("user", "user 7"), ("assistant", "assistant 8"),
        ("user", "user 9"), ("assistant", "assistant 10"),
    ]
    assert to_chat_messages([]) == []


def test_with_the_threads_messages() -> None:
    """The windows over a thread's real messages, as session_save folds them."""
    thread: list[Any] = []
    for i in range(4):
        thread += [question_message(f"q{i}"),
                   answer_message(f"a{i}", message_id=None, metadata={})]
    folded = list(_messages_delta_reducer(thread, [compression_update(thread, 4, "q0, q1")]))
    everything = as_session_messages(folded)  # compressed originals included on purpose
    summary = next(m for m in everything if m.type is C)
    assert ids(history_for(everything, "intent")) == [summary.id, *ids(everything[-4:])]
    assert [m.content for m in history_for(everything, "intent")] == ["q0, q1", "q2", "a2",
                                                                       "q3", "a3"]
    assert [r for r, _ in to_chat_messages(history_for(everything, "chat"))] == [
        "system", "user", "assistant", "user", "assistant",
    ]
