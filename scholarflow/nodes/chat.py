"""simple_interaction: chat over the whole active history, optionally with web search."""

from __future__ import annotations

import logging
from typing import Any

from langgraph.runtime import Runtime

from scholarflow import llm
from scholarflow.context import Context, first_attempt, get_context
from scholarflow.errors import ScholarflowError
from scholarflow.events import Thinking, emit, node_complete
from scholarflow.language import answer_language
from scholarflow.nodes.common import history_messages
from scholarflow.prompts import SIMPLE_INTERACTION_PROMPT
from scholarflow.state import State
from scholarflow.tokens import count_message_tokens
from scholarflow.tools.web_search import web_search

logger = logging.getLogger(__name__)
NODE = "simple_interaction"


async def simple_interaction(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    ctx = get_context(runtime)
    query = state["query"]
    thinking = Thinking(ctx.show_thinking, NODE)
    extra = ""
    if state.get("enable_web_search"):
        try:
            results = await web_search(ctx, query)
            extra = "\n\nWeb results (untrusted):\n" + "\n".join(
                f"- {r.title} ({r.url}): {r.content}" for r in results
            )
        except ScholarflowError as exc:
            logger.info("web search skipped: %s", exc)
            thinking.say(f"Web search skipped: {exc}.")
            extra = (f"\n\nThe user asked for a web search, but it failed ({exc}); "
                     "say so in one short sentence, then answer without it.")
    system = SIMPLE_INTERACTION_PROMPT.format(extra=extra, language=answer_language(query))
    room = (ctx.max_context_tokens - ctx.reserved_answer_tokens
            - count_message_tokens([system, query]))
    prompt = [("system", system), *history_messages(state, "chat", room), ("user", query)]
    if first_attempt(runtime):  # a retry must not close the thinking block again
        thinking.end()
    result = await llm.stream(
        ctx, prompt, node=NODE,
        on_text=lambda text: emit("answer_chunk", content=text),
        on_reasoning=thinking.stream,
    )
    node_complete(NODE)
    return {"answer": result.text, "usage": [result.usage]}
