"""Small helpers the nodes share: history as chat messages, documents as prompt text, the
question as the answer prompt's last turn."""

from __future__ import annotations

from langchain_core.messages import AnyMessage

from scholarflow.language import is_chinese
from scholarflow.nodes.options import split_options
from scholarflow.prompts import (
    ANSWER_IN_CHINESE,
    ANSWER_IN_ENGLISH,
    OPTION_EVIDENCE,
    OPTIONS_REMINDER,
)
from scholarflow.sessions.conversation import as_session_messages
from scholarflow.sessions.history import Stage, history_for, to_chat_messages
from scholarflow.state import State
from scholarflow.tokens import count_message_tokens


def history_messages(
    state: State, stage: Stage, max_tokens: int | None = None
) -> list[tuple[str, str]]:
    """The stage's window of the session history as (role, content) pairs.

    With `max_tokens`, the compression summary (it stands for everything
    older) is kept if it fits, then the newest messages that still fit.
    """
    earlier = as_session_messages(messages_before_question(state))
    messages = to_chat_messages(history_for(earlier, stage))
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


def messages_before_question(state: State) -> list[AnyMessage]:
    """The thread's messages before the run's question: the history it may inject."""
    messages = list(state.get("messages") or [])
    question_id = state.get("question_id")
    for position, message in enumerate(messages):
        if question_id and message.id == question_id:
            return messages[:position]
    return messages


def format_document(title: str, doc_id: str, text: str) -> str:
    """One document, delimited so the model can tell documents and instructions apart."""
    return f'<document id="{doc_id}" title="{_attr(title)}">\n{text}\n</document>'


def _attr(value: str) -> str:
    return value.replace('"', "'").replace("\n", " ")


def question_turn(question: str, option_evidence: str = "") -> str:
    """The question as the answer prompt's last user turn: with a reminder of its language,
    and for a question listing options, where the passages name each (`option_evidence`).

    Only the prompt carries these; the thread keeps the question as asked.
    """
    reminder = (ANSWER_IN_CHINESE if is_chinese(question) else ANSWER_IN_ENGLISH).format()
    if split_options(question).options:
        reminder = f"{OPTIONS_REMINDER.format()}\n{reminder}"
        if option_evidence:
            reminder = f"{OPTION_EVIDENCE.format(options=option_evidence)}\n\n{reminder}"
    return f"{question}\n\n{reminder}"
