"""simple_interaction: chat over the whole active history, optionally with web search."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from scholarflow import llm
from scholarflow.budget import prompt_budget
from scholarflow.context import Context, first_attempt, get_context
from scholarflow.empty_answer import require_text
from scholarflow.events import Thinking, emit, node_complete
from scholarflow.language import answer_language, is_chinese
from scholarflow.nodes.chat_web import WebMaterial, search_for_chat
from scholarflow.nodes.citations import CitationFilter
from scholarflow.nodes.common import history_messages
from scholarflow.prompts import SIMPLE_INTERACTION_PROMPT
from scholarflow.state import State
from scholarflow.tokens import count_message_tokens

NODE = "simple_interaction"


async def simple_interaction(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    ctx = get_context(runtime)
    query = state["question"]
    thinking = Thinking(ctx.show_thinking, NODE)
    web: WebMaterial | None = None
    citations: CitationFilter | None = None
    language = answer_language(query)
    if state.get("web_search"):
        # The results may take what the question and instructions leave, less room for history.
        bare = SIMPLE_INTERACTION_PROMPT.format(extra="", language=language)
        left = prompt_budget(ctx) - count_message_tokens([bare, query])
        web = await search_for_chat(ctx, query, thinking, max_tokens=left * 3 // 4)
        if web.results:
            citations = CitationFilter(range(1, len(web.results) + 1))
    system = SIMPLE_INTERACTION_PROMPT.format(extra=web.prompt if web else "", language=language)
    room = prompt_budget(ctx) - count_message_tokens([system, query])
    prompt = [("system", system), *history_messages(state, "chat", room), ("user", query)]
    if first_attempt(runtime):  # a retry must not close the thinking block again
        thinking.end()
    sent: list[str] = []

    def send(text: str) -> None:
        if citations is not None:  # drop [n] that name no result
            text = citations.feed(text)
        if text:
            sent.append(text)
            emit("answer_chunk", content=text)

    result = await llm.stream(ctx, prompt, node=NODE, on_text=send,
                              on_reasoning=thinking.stream)
    if citations is not None:
        send_raw(sent, citations.flush())
    require_text(ctx, "".join(sent), first_attempt=first_attempt(runtime))
    update: dict[str, Any] = {"usage": [result.usage]}
    if web is not None:
        cited = citations.cited if citations is not None else []
        # After the answer, not before: a retried call would otherwise repeat it.
        send_raw(sent, web.closing_note(cited, is_chinese(query)))
        update["web_sources"] = web.sources(cited)
    if web is None:
        node_complete(NODE)
    else:
        node_complete(NODE, web_results=len(web.results))
    return {**update, "answer": "".join(sent)}


def send_raw(sent: list[str], text: str) -> None:
    """Send text of our own (no citation filter) as part of the answer."""
    if text:
        sent.append(text)
        emit("answer_chunk", content=text)
