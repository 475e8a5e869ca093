"""The session is the thread: its conversation is the state's `messages`.

Each message carries its bookkeeping in `additional_kwargs["scholarflow"]`:
`type` (USER, ASSISTANT or COMPRESSION), `token_count` (what it costs injected),
`created_at`, and `compressed` once a COMPRESSION summary replaced it (it is
then never injected again, but stays in the thread, readable). An answer's
intent, strategy and sources are in its `response_metadata`. Messages a client
sent without that bookkeeping (Studio, agent-chat-ui) count as they come.

History windows and the compression split work on `sessions.models.Message`
views of these messages, so the session rules live in one place
(sessions/history.py, sessions/compression.py).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
)

from scholarflow.sessions.models import Message, MessageType, make_title
from scholarflow.state import SessionStats
from scholarflow.tokens import count_message_tokens

META = "scholarflow"
COMPRESSION_NAME = "compression"


def message_text(message: BaseMessage) -> str:
    """The message's text: a string content, or the text blocks of a list content."""
    return message.text if isinstance(message.text, str) else str(message.text)


def _meta(message: BaseMessage) -> dict[str, Any]:
    found = message.additional_kwargs.get(META)
    return found if isinstance(found, dict) else {}


def message_type(message: BaseMessage) -> MessageType | None:
    """USER, ASSISTANT or COMPRESSION; None for what a conversation does not hold (tools)."""
    if kind := _meta(message).get("type"):
        return MessageType(kind)
    if isinstance(message, HumanMessage):
        return MessageType.USER
    if isinstance(message, AIMessage):
        return MessageType.ASSISTANT
    if isinstance(message, SystemMessage) and message.name == COMPRESSION_NAME:
        return MessageType.COMPRESSION
    return None


def token_count(message: BaseMessage) -> int:
    counted = _meta(message).get("token_count")
    return counted if isinstance(counted, int) else count_message_tokens([message_text(message)])


def is_compressed(message: BaseMessage) -> bool:
    return bool(_meta(message).get("compressed"))


def _stamped(message: BaseMessage, kind: MessageType, **extra: Any) -> dict[str, Any]:
    return {**message.additional_kwargs, META: {
        "type": kind.value, "token_count": token_count(message),
        "created_at": _meta(message).get("created_at", time.time()),
        "compressed": is_compressed(message), **extra}}


def question_message(question: str, *, message_id: str | None = None) -> HumanMessage:
    """The run's question as the thread stores it (a client's id is kept: it replaces)."""
    message = HumanMessage(content=question, id=message_id or str(uuid.uuid4()))
    message.additional_kwargs = _stamped(message, MessageType.USER)
    return message


def answer_message(answer: str, *, message_id: str | None, metadata: dict[str, Any]) -> AIMessage:
    """The run's answer; `message_id` is the streamed message's, so a client that saw the
    tokens gets the same message, not a second one."""
    message = AIMessage(content=answer, id=message_id or str(uuid.uuid4()),
                        response_metadata=metadata)
    message.additional_kwargs = _stamped(message, MessageType.ASSISTANT)
    return message


def compression_message(summary: str) -> SystemMessage:
    message = SystemMessage(content=summary, name=COMPRESSION_NAME, id=str(uuid.uuid4()))
    message.additional_kwargs = _stamped(message, MessageType.COMPRESSION)
    return message


def as_session_messages(messages: Sequence[BaseMessage]) -> list[Message]:
    """The conversation's messages as the session model (position as id), others skipped."""
    views = []
    for position, message in enumerate(messages):
        kind = message_type(message)
        if kind is None:
            continue
        views.append(Message(
            id=position, session_id="", type=kind, content=message_text(message),
            token_count=token_count(message),
            created_at=float(_meta(message).get("created_at") or 0.0),
            compressed=is_compressed(message)))
    return views


def active_tokens(messages: Sequence[BaseMessage]) -> int:
    """What the session costs injected: its messages not compressed, summaries included."""
    return sum(token_count(m) for m in messages
               if message_type(m) is not None and not is_compressed(m))


def session_stats(session_id: str, messages: Sequence[BaseMessage],
                  before: SessionStats | None) -> SessionStats:
    """The session's statistics over `messages`; `before` keeps its creation time."""
    now = time.time()
    first = next((message_text(m) for m in messages if message_type(m) is MessageType.USER), "")
    return SessionStats(
        session_id=session_id,
        title=make_title(first),
        total_token_count=active_tokens(messages),
        message_count=sum(1 for m in messages if message_type(m) is not None),
        created_at=before["created_at"] if before else now,
        updated_at=now,
    )


def compression_update(messages: Sequence[AnyMessage], fold: int,
                       summary: str) -> list[BaseMessage]:
    """The `messages` update that folds the first `fold` active messages into `summary`.

    The originals stay, marked compressed; the summary goes right after them and the
    messages kept are moved after it (removed and added again with their ids), so the
    thread reads in order: what was folded, its summary, then what is still active.
    """
    conversation = [m for m in messages if message_type(m) is not None]
    active = [m for m in conversation if not is_compressed(m)]
    folded, kept = active[:fold], active[fold:]
    update: list[BaseMessage] = []
    for message in folded:
        marked = message.model_copy()
        kind = message_type(message)
        assert kind is not None
        marked.additional_kwargs = _stamped(message, kind, compressed=True)
        update.append(marked)
    update += [RemoveMessage(id=m.id) for m in kept if m.id]
    update.append(compression_message(summary))
    update += list(kept)
    return update
