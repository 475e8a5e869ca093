"""The session's message model: the thread's messages as docs/architecture.md#sessions sees them.

The conversation itself is the thread's `messages` (scholarflow/sessions/conversation.py);
history windows and the compression split work on these plain frozen views,
so the session rules do not depend on LangChain's message classes.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

TITLE_MAX_CHARS = 60
MAX_SESSION_ID_CHARS = 200


class MessageType(StrEnum):
    # Upper-case values: they are what the CLI prints and what graph state carries.
    USER = "USER"
    ASSISTANT = "ASSISTANT"
    COMPRESSION = "COMPRESSION"


@dataclass(frozen=True, slots=True)
class Message:
    """One message of the conversation.

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


def check_session_id(session_id: str) -> str:
    """The id when it can name a session (a thread); else ValueError. The same rule for the
    CLI, the graph's input and every checkpointer."""
    if not isinstance(session_id, str) or not session_id.strip():
        raise ValueError("a session id must be a non-empty string")
    if len(session_id) > MAX_SESSION_ID_CHARS:
        raise ValueError(f"a session id has at most {MAX_SESSION_ID_CHARS} characters")
    if "\x00" in session_id:
        raise ValueError("a session id cannot contain a NUL character")
    return session_id


def make_title(first_user_message: str) -> str:
    """The session title: the first user message on one line, at most 60 characters."""
    text = " ".join(first_user_message.split())
    if len(text) <= TITLE_MAX_CHARS:
        return text
    return text[: TITLE_MAX_CHARS - 1].rstrip() + "…"
