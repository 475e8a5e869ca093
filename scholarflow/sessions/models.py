"""The session data model: messages and a session's statistics.

Plain frozen dataclasses, so every store backend (SQLite now, PostgreSQL
later) returns the same values and nothing outside a store can mutate them.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

TITLE_MAX_CHARS = 60


class MessageType(StrEnum):
    # Upper-case values: they are what the CLI prints and what graph state carries.
    USER = "USER"
    ASSISTANT = "ASSISTANT"
    COMPRESSION = "COMPRESSION"


@dataclass(frozen=True, slots=True)
class Message:
    """One stored message.

    `compressed` marks an original that a COMPRESSION summary replaced; it is
    kept for `scholarflow sessions show` but never injected into prompts.
    `token_count` includes the chat-format overhead of one message, since it
    is what the message costs when it is injected.
    """

    id: int
    session_id: str
    type: MessageType
    content: str
    token_count: int
    created_at: float
    compressed: bool


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """A session and its statistics.

    `total_token_count` counts only the active messages (not compressed, plus
    COMPRESSION summaries): it is what the session costs in a prompt, and
    what compression compares with its threshold. `message_count` counts
    every stored message, compressed originals and summaries included.
    """

    session_id: str
    title: str
    total_token_count: int
    message_count: int
    created_at: float
    updated_at: float


def make_title(first_user_message: str) -> str:
    """The session title: the first user message on one line, at most 60 characters."""
    text = " ".join(first_user_message.split())
    if len(text) <= TITLE_MAX_CHARS:
        return text
    return text[: TITLE_MAX_CHARS - 1].rstrip() + "…"
