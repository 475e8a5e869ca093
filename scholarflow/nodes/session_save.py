"""session_save: store the turn, update the statistics, compress a long session.

The user's message is stored even when the answer failed, so nothing the
person typed is lost. The last event of every run comes from here:
final_answer, or error with the message of the node that failed.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from langgraph.runtime import Runtime

from scholarflow import llm
from scholarflow.budget import cap_tokens, prompt_budget
from scholarflow.context import Context, get_context
from scholarflow.errors import ScholarflowError
from scholarflow.events import Thinking, emit, node_complete
from scholarflow.nodes.request import request_inputs_cleared
from scholarflow.prompts import SESSION_COMPRESSION_PROMPT
from scholarflow.sessions.compression import maybe_compress
from scholarflow.sessions.models import Message, MessageType
from scholarflow.sessions.registry import session_store
from scholarflow.state import LLMUsage, State
from scholarflow.tokens import MESSAGE_OVERHEAD_TOKENS, count_tokens

logger = logging.getLogger(__name__)
NODE = "session_save"
COMPRESSION_MAX_WORDS = 400
_MESSAGE_FRAME_TOKENS = 8  # "assistant: " and the blank line between messages


def fit_conversation(ctx: Context, messages: Sequence[Message]) -> str:
    """The messages as text within the prompt budget, each cut to an equal share if needed.

    The session grew past the window by definition, so its oldest part may not fit one
    prompt; every message keeps its beginning rather than the oldest ones being dropped.
    """
    frame = count_tokens(SESSION_COMPRESSION_PROMPT.format(max_words=COMPRESSION_MAX_WORDS,
                                                           conversation=""))
    room = prompt_budget(ctx) - frame - MESSAGE_OVERHEAD_TOKENS
    share = room // max(len(messages), 1) - _MESSAGE_FRAME_TOKENS
    return "\n\n".join(f"{m.type.value}: {cap_tokens(m.content, share)}" for m in messages)


async def session_save(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    ctx = get_context(runtime)
    session_id = state.get("session_id")
    answer = state.get("answer") or ""
    error = state.get("error")
    usage: list[LLMUsage] = []
    compressed: Message | None = None
    if session_id:
        store = session_store()
        await store.add_message(session_id, MessageType.USER, state["query"])
        if answer and not error:
            await store.add_message(session_id, MessageType.ASSISTANT, answer)

        async def summarize(messages: Sequence[Message]) -> str:
            prompt = SESSION_COMPRESSION_PROMPT.format(
                max_words=COMPRESSION_MAX_WORDS, conversation=fit_conversation(ctx, messages)
            )
            result = await llm.complete(ctx, [("user", prompt)], node=NODE)
            usage.append(result.usage)
            return result.text.strip()

        try:
            # A failed run only saves the question: no model call after a refusal or a
            # failure (the next run that succeeds compresses).
            compressed = None if error else await maybe_compress(
                store, session_id, max_context_tokens=ctx.max_context_tokens, summarize=summarize
            )
        except ScholarflowError as exc:  # the turn is saved; compression can wait a turn
            logger.warning("session %s not compressed: %s", session_id, exc)
        if compressed is not None:
            Thinking(ctx.show_thinking, NODE).say(
                "The session grew long: its older messages are now one summary."
            )
    node_complete(NODE, session_id=session_id, compressed=compressed is not None)
    if error:
        emit("error", message=error, session_id=session_id)
    else:
        emit("final_answer", answer=answer, session_id=session_id,
             intent=state.get("detected_intent"), strategy=state.get("strategy"),
             sources=state.get("sources") or [])
    # The run is over: a later run on this thread states its own documents and mode.
    return {"usage": usage, **request_inputs_cleared()}
