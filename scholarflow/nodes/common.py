"""Small helpers the nodes share: history as chat messages, documents as prompt text."""

from __future__ import annotations

from collections.abc import Sequence

from scholarflow.sessions.history import Stage, history_for, to_chat_messages
from scholarflow.sessions.models import Message, MessageType
from scholarflow.state import HistoryMessage, State
from scholarflow.tokens import count_message_tokens

# Without ids or timestamps in state, history_for only needs type, content and order.
_PLACEHOLDER_SESSION = ""


def history_messages(
    state: State, stage: Stage, max_tokens: int | None = None
) -> list[tuple[str, str]]:
    """The stage's window of the session history as (role, content) pairs.

    With `max_tokens`, the compression summary (it stands for everything
    older) is kept if it fits, then the newest messages that still fit.
    """
    messages = to_chat_messages(history_for(_as_messages(state.get("history") or []), stage))
    if max_tokens is None:
        return messages
    left = max_tokens
    summary = messages[:1] if messages and messages[0][0] == "system" else []
    rest = messages[len(summary):]
    if summary and (cost := count_message_tokens([summary[0][1]])) <= left:
        left -= cost
    else:
        summary = []
    kept: list[tuple[str, str]] = []
    for role, content in reversed(rest):
        cost = count_message_tokens([content])
        if cost > left:
            break
        kept.append((role, content))
        left -= cost
    return summary + kept[::-1]


def history_text(state: State, stage: Stage, max_tokens: int | None = None) -> str:
    """The stage's history as plain text for a classification or planning prompt; with
    `max_tokens`, its newest messages within that many tokens."""
    limit = None if max_tokens is None else max(max_tokens, 0)
    lines = [f"{role}: {content}" for role, content in history_messages(state, stage, limit)]
    return "\n".join(lines) if lines else "(none)"


def _as_messages(history: Sequence[HistoryMessage]) -> list[Message]:
    return [
        Message(
            id=i,
            session_id=_PLACEHOLDER_SESSION,
            type=MessageType(h["type"]),
            content=h["content"],
            token_count=0,
            created_at=float(i),
            compressed=False,
        )
        for i, h in enumerate(history)
    ]


def format_document(title: str, doc_id: str, text: str) -> str:
    """One document, delimited so the model can tell documents and instructions apart."""
    return f'<document id="{doc_id}" title="{_attr(title)}">\n{text}\n</document>'


def _attr(value: str) -> str:
    return value.replace('"', "'").replace("\n", " ")
