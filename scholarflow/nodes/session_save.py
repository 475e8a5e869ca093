"""session_save: the answer joins the thread, the statistics follow, a long session is
compressed, and a run that could not answer ends in error here.

The question is in the thread since request_init. The last event of every run
comes from here: final_answer, or error with the message of the node that
failed; then a failed run raises that node's typed error, so LangGraph (and
LangGraph server: status "error", an error event) sees a failure, not an answer.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, cast

from langchain_core.messages import BaseMessage
from langgraph.runtime import Runtime

from scholarflow.context import Context, get_context
from scholarflow.errors import ScholarflowError
from scholarflow.events import Thinking, emit, node_complete
from scholarflow.llm import calls as llm
from scholarflow.llm.budget import cap_tokens, prompt_budget, window
from scholarflow.nodes.errors import run_error
from scholarflow.prompts import SESSION_COMPRESSION_PROMPT
from scholarflow.sessions.compression import compression_split
from scholarflow.sessions.conversation import (
    active_tokens,
    answer_message,
    as_session_messages,
    compression_update,
    session_stats,
)
from scholarflow.sessions.models import Message
from scholarflow.state import LLMUsage, State
from scholarflow.tokens import MESSAGE_OVERHEAD_TOKENS, count_tokens

logger = logging.getLogger(__name__)
NODE = "session_save"
COMPRESSION_MAX_WORDS = 400
COMPRESSION_RATIO = 0.8  # compress past 0.8 x max_context_tokens (docs/architecture.md#sessions)
KEEP_FRACTION = 0.3  # the newest 30% stay as they are
_MESSAGE_FRAME_TOKENS = 8  # "assistant: " and the blank line between messages


MIN_SHARE_TOKENS = 32  # less of each message would leave nothing worth summarising


def message_share(ctx: Context, count: int) -> int:
    """Tokens of each of `count` messages that fit one compression prompt."""
    frame = count_tokens(SESSION_COMPRESSION_PROMPT.format(max_words=COMPRESSION_MAX_WORDS,
                                                           conversation=""))
    room = prompt_budget(ctx) - frame - MESSAGE_OVERHEAD_TOKENS
    return room // max(count, 1) - _MESSAGE_FRAME_TOKENS


def fit_conversation(ctx: Context, messages: Sequence[Message]) -> str:
    """The messages as text within the prompt budget, each cut to an equal share if needed.

    The session grew past the window by definition, so its oldest part may not fit one
    prompt; every message keeps its beginning rather than the oldest ones being dropped.
    """
    share = message_share(ctx, len(messages))
    return "\n\n".join(f"{m.type.value}: {cap_tokens(m.content, share)}" for m in messages)


async def compress(ctx: Context, conversation: Sequence[Any],
                   usage: list[LLMUsage]) -> list[BaseMessage] | None:
    """The `messages` update that folds the oldest 70% of the active messages into one
    COMPRESSION summary, when they pass the threshold; None when nothing is to be done."""
    if active_tokens(conversation) <= window(ctx) * COMPRESSION_RATIO:
        return None
    active = [m for m in as_session_messages(conversation) if not m.compressed]
    fold = compression_split(active, KEEP_FRACTION)
    if fold == 0:
        return None
    if message_share(ctx, fold) < MIN_SHARE_TOKENS:
        # A window this small next to reserved_answer_tokens leaves each message a few
        # tokens: the summary would be of nothing. History is still cut to fit each prompt.
        logger.warning("session not compressed: max_context_tokens=%d leaves under %d tokens "
                       "per message to summarise", window(ctx), MIN_SHARE_TOKENS)
        return None
    prompt = SESSION_COMPRESSION_PROMPT.format(
        max_words=COMPRESSION_MAX_WORDS, conversation=fit_conversation(ctx, active[:fold]))
    result = await llm.complete(ctx, [("user", prompt)], node=NODE)
    usage.append(result.usage)
    return compression_update(conversation, fold, result.text.strip())


async def session_save(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    ctx = get_context(runtime)
    session = state.get("session")
    session_id = session["session_id"] if session else None
    if state.get("error"):
        node_complete(NODE, session_id=session_id, compressed=False)
        emit("error", message=state["error"], session_id=session_id)
        raise run_error(state)  # the question is in the thread already (request_init)

    answer = state.get("answer") or ""
    message = answer_message(answer, message_id=state.get("answer_id"), metadata={
        "intent": state.get("detected_intent"), "strategy": state.get("strategy"),
        "sources": state.get("sources") or [], "web_sources": state.get("web_sources") or []})
    conversation = [*(state.get("messages") or []), message]
    usage: list[LLMUsage] = []
    update: list[BaseMessage] = [message]
    folded = None
    try:
        if folded := await compress(ctx, conversation, usage):
            update = folded
            Thinking(ctx.show_thinking, NODE).say(
                "The session grew long: its older messages are now one summary.")
    except ScholarflowError as exc:  # the answer is saved; compression can wait a turn
        logger.warning("session %s not compressed: %s", session_id, exc)
    after = _applied(conversation, update)
    stats = session_stats(session_id or "", after, session)
    node_complete(NODE, session_id=session_id, compressed=folded is not None)
    emit("final_answer", answer=answer, session_id=session_id,
         intent=state.get("detected_intent"), strategy=state.get("strategy"),
         sources=state.get("sources") or [])
    return {"messages": update, "session": stats, "usage": usage}


def _applied(conversation: list[Any], update: list[BaseMessage]) -> list[Any]:
    """The conversation once `update` is applied (for the statistics)."""
    from langgraph.graph.message import _messages_delta_reducer

    return _messages_delta_reducer(conversation[:-1], [cast(list[Any], update)])
