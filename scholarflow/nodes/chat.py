"""simple_interaction: chat over the whole active history, optionally with web search."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from scholarflow.context import Context, first_attempt, get_context
from scholarflow.events import Thinking, emit, node_complete
from scholarflow.language import answer_language, is_chinese
from scholarflow.llm import calls as llm
from scholarflow.llm.budget import prompt_budget
from scholarflow.llm.empty_answer import require_text
from scholarflow.nodes.chat_web import WebMaterial, search_for_chat
from scholarflow.nodes.citations import CitationFilter
from scholarflow.nodes.common import history_messages, question_turn
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
    turn = question_turn(query)
    if state.get("web_search"):
        # The results may take what the question and instructions leave, less room for history.
        bare = SIMPLE_INTERACTION_PROMPT.format(extra="", language=language)
        left = prompt_budget(ctx) - count_message_tokens([bare, turn])
        web = await search_for_chat(ctx, query, thinking, max_tokens=left * 3 // 4)
        if web.results:
            citations = CitationFilter(range(1, len(web.results) + 1))
    system = SIMPLE_INTERACTION_PROMPT.format(extra=web.prompt if web else "", language=language)
    room = prompt_budget(ctx) - count_message_tokens([system, turn])
    prompt = [("system", system), *history_messages(state, "chat", room), ("user", turn)]
    if first_attempt(runtime):  # a retry must not close the thinking block again
        thinking.end()
    # The citation filter and the web note run inside llm.stream, before the text goes
    # out: the answer_chunk events and the `messages` stream both carry exactly the
    # answer saved. The note comes after the answer, not before: a retried call would
    # otherwise repeat it.
    finish = _WebAnswer(web, citations, is_chinese(query)) if web is not None else None
    result = await llm.stream(ctx, prompt, node=NODE, visible=True, text_filter=finish,
                              on_text=lambda text: emit("answer_chunk", content=text),
                              on_reasoning=thinking.stream)
    answer = require_text(ctx, result.text, first_attempt=first_attempt(runtime))
    update: dict[str, Any] = {"usage": [result.usage]}
    if web is None:
        node_complete(NODE)
    else:
        update["web_sources"] = web.sources(citations.cited if citations is not None else [])
        node_complete(NODE, web_results=len(web.results))
    return {**update, "answer": answer, "answer_id": result.message_id}


class _WebAnswer:
    """The text filter of a chat with web search (llm.TextFilter): drops [n] that name
    no result, and ends the answer with the web note (the URLs it cited, or why search
    was not used)."""

    def __init__(self, web: WebMaterial, citations: CitationFilter | None,
                 chinese: bool) -> None:
        self.web, self.citations, self.chinese = web, citations, chinese
        self.answered = False

    def feed(self, text: str) -> str:
        out = self.citations.feed(text) if self.citations is not None else text
        self.answered = self.answered or bool(out.strip())
        return out

    def flush(self) -> str:
        rest = self.citations.flush() if self.citations is not None else ""
        if not (self.answered or rest.strip()):
            return rest  # no answer: a note alone would hide that it is empty
        cited = self.citations.cited if self.citations is not None else []
        return rest + self.web.closing_note(cited, self.chinese)
