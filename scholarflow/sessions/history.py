"""Which part of a session's history each stage of the graph sees (docs/architecture.md#sessions).

| stage     | history                          |
|-----------|----------------------------------|
| intent    | the last 2 rounds                |
| planning  | the last 2 rounds                |
| answer    | the last 3 rounds                |
| execution | none: recall needs no history    |
| chat      | every active message             |

The latest COMPRESSION summary comes first in every stage but execution,
and compressed originals never appear. Windows count rounds, not messages,
so an unanswered question or an orphaned reply cannot push a whole exchange
out of the window.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal, get_args

from scholarflow.sessions.models import Message, MessageType

Stage = Literal["intent", "planning", "answer", "execution", "chat"]

# Rounds each stage sees; None means all of them.
ROUNDS_BY_STAGE: Mapping[Stage, int | None] = {
    "intent": 2,
    "planning": 2,
    "answer": 3,
    "execution": 0,
    "chat": None,
}

SUMMARY_PREFIX = "Summary of the earlier conversation:\n"

_ROLES: Mapping[MessageType, str] = {
    MessageType.USER: "user",
    MessageType.ASSISTANT: "assistant",
    MessageType.COMPRESSION: "system",
}


def split_rounds(messages: Sequence[Message]) -> list[list[Message]]:
    """Group conversation messages into rounds: a USER message and what follows it.

    A USER message without a reply is a round of its own; replies before the
    first USER message (their question was compressed away) form one round.
    """
    rounds: list[list[Message]] = []
    for message in messages:
        if message.type == MessageType.USER or not rounds:
            rounds.append([message])
        else:
            rounds[-1].append(message)
    return rounds


def last_rounds(messages: Sequence[Message], rounds: int) -> list[Message]:
    """The messages of the last `rounds` rounds, in order."""
    if rounds <= 0:
        return []
    return [m for r in split_rounds(messages)[-rounds:] for m in r]


def history_for(messages: Sequence[Message], stage: Stage) -> list[Message]:
    """The history `stage` injects, from a session's messages in conversation order."""
    if stage not in ROUNDS_BY_STAGE:
        raise ValueError(f"unknown stage {stage!r}; expected one of {', '.join(get_args(Stage))}")
    rounds = ROUNDS_BY_STAGE[stage]
    if rounds == 0:
        return []
    active = [m for m in messages if not m.compressed]
    summaries = [m for m in active if m.type == MessageType.COMPRESSION]
    conversation = [m for m in active if m.type != MessageType.COMPRESSION]
    # Ids are positions in the thread, so the highest is the newest summary; since each
    # compression folds the previous summary in, at most one is active anyway.
    head = [max(summaries, key=lambda m: m.id)] if summaries else []
    if rounds is None:
        return head + conversation
    return head + last_rounds(conversation, rounds)


def to_chat_messages(history: Sequence[Message]) -> list[tuple[str, str]]:
    """(role, content) pairs for a chat prompt; a summary becomes a system message."""
    pairs: list[tuple[str, str]] = []
    for message in history:
        content = message.content
        if message.type == MessageType.COMPRESSION:
            content = SUMMARY_PREFIX + content
        pairs.append((_ROLES[message.type], content))
    return pairs
