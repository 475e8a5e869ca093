"""What every way of answering shares: the prompt's room, the history, the streamed call.

No prompt ever exceeds the model's context minus the reserved answer tokens, and a
question about documents is never answered from none of them: a room under
MIN_MATERIAL_TOKENS is an error naming max_context_tokens. The strategies build on
`Answerer`: whole documents (nodes/answer.py), recalled passages
(nodes/answer_passages.py) and summaries (nodes/answer_summaries.py).
"""

from __future__ import annotations

from scholarflow.context import Context
from scholarflow.errors import ConfigurationError
from scholarflow.events import Thinking, emit
from scholarflow.intents import Intent
from scholarflow.language import answer_language
from scholarflow.llm import calls as llm
from scholarflow.llm.budget import MIN_MATERIAL_TOKENS, answer_reserve, prompt_budget, window_words
from scholarflow.llm.empty_answer import require_text
from scholarflow.nodes.common import history_messages, question_turn
from scholarflow.prompts import (
    CITED_MATERIAL_PROMPT,
    LITERATURE_QA_PROMPT,
    MULTI_DOC_SUMMARY_FINAL_MERGE_PROMPT,
    MULTI_DOC_SUMMARY_PROMPT,
    MULTI_DOC_SUMMARY_SYNTHESIS_PROMPT,
    PAPER_REVIEW_PROMPT,
    REVIEW_GENERATION_FINAL_MERGE_PROMPT,
    REVIEW_GENERATION_PROMPT,
    REVIEW_GENERATION_SYNTHESIS_PROMPT,
    SINGLE_DOC_SUMMARY_PROMPT,
    PromptTemplate,
)
from scholarflow.state import LLMUsage, State
from scholarflow.tokens import MESSAGE_OVERHEAD_TOKENS, count_message_tokens, count_tokens

NODE = "answer_generation"

# The prompt that reads the documents (or passages) for each intent.
DIRECT_PROMPTS: dict[Intent, PromptTemplate] = {
    Intent.LITERATURE_SUMMARY: SINGLE_DOC_SUMMARY_PROMPT,
    Intent.REVIEW_GENERATION: REVIEW_GENERATION_PROMPT,
    Intent.PAPER_REVIEW: PAPER_REVIEW_PROMPT,
    Intent.LITERATURE_QA: LITERATURE_QA_PROMPT,
}
# multi_doc_summary: (one group, each of several groups, the final merge).
SUMMARY_PROMPTS: dict[Intent, tuple[PromptTemplate, PromptTemplate, PromptTemplate]] = {
    Intent.LITERATURE_SUMMARY: (
        MULTI_DOC_SUMMARY_PROMPT,
        MULTI_DOC_SUMMARY_SYNTHESIS_PROMPT,
        MULTI_DOC_SUMMARY_FINAL_MERGE_PROMPT,
    ),
    Intent.REVIEW_GENERATION: (
        REVIEW_GENERATION_PROMPT,
        REVIEW_GENERATION_SYNTHESIS_PROMPT,
        REVIEW_GENERATION_FINAL_MERGE_PROMPT,
    ),
}

# What the longest answer template and the passages' wrapper take, before any material.
TEMPLATE_TOKENS = max(
    count_tokens(t.format(**dict.fromkeys(t.variables, "999")))
    for t in [*DIRECT_PROMPTS.values(), *(t for ts in SUMMARY_PROMPTS.values() for t in ts)]
) + count_tokens(CITED_MATERIAL_PROMPT.format(chunks=""))


def fill(template: PromptTemplate, language: str, material: str, **extra: str) -> str:
    """`template` with its one material variable (documents, summaries, passages)."""
    (var,) = template.variables - {"language", "group", "groups"}
    return template.format(language=language, **{var: material}, **extra)


class Answerer:
    """One answer_generation run: its context, question, history and usage."""

    def __init__(self, ctx: Context, state: State, first_attempt: bool) -> None:
        self.ctx = ctx
        self.first_attempt = first_attempt
        self.query = state["question"]
        self.language = answer_language(self.query)
        self.turn = question_turn(self.query)  # the prompt's last user message
        # History may take at most half the prompt (the documents matter more), and
        # never the minimum room the material needs.
        history_room = min(
            prompt_budget(ctx) // 2,
            prompt_budget(ctx) - count_message_tokens([self.turn]) - TEMPLATE_TOKENS
            - 2 * MESSAGE_OVERHEAD_TOKENS - MIN_MATERIAL_TOKENS,
        )
        self.history = history_messages(state, "answer", max(history_room, 0))
        self.thinking = Thinking(ctx.show_thinking, NODE)
        self.usage: list[LLMUsage] = []
        self.message_id: str | None = None  # the streamed answer's (llm.LLMResult)

    def fill(self, template: PromptTemplate, material: str, **extra: str) -> str:
        return fill(template, self.language, material, **extra)

    def room(self, template: PromptTemplate, history: bool, **extra: str) -> int:
        """Tokens left for the material in `template` once everything else is counted."""
        turns = [self.fill(template, "", **extra), self.turn,
                 *(c for _, c in self.history if history)]
        return prompt_budget(self.ctx) - count_message_tokens(turns) - MESSAGE_OVERHEAD_TOKENS

    def passage_room(self, template: PromptTemplate) -> int:
        """Tokens the recalled passages may take in `template`'s prompt."""
        return self.room(template, True) - count_tokens(CITED_MATERIAL_PROMPT.format(chunks=""))

    def require_room(self, room: int, what: str) -> None:
        """A question about documents is never answered from none of them."""
        if room < MIN_MATERIAL_TOKENS:
            raise ConfigurationError(
                f"{window_words(self.ctx)} leaves {max(room, 0)} "
                f"tokens for {what} once the question and reserved_answer_tokens="
                f"{answer_reserve(self.ctx)} are counted: raise max_context_tokens, "
                "lower reserved_answer_tokens, or shorten the question"
            )

    async def stream_answer(self, system: str, citations: llm.TextFilter | None = None,
                            max_tokens: int | None = None) -> str:
        """Stream the answer; with `citations`, [n] naming no recalled chunk are dropped.

        The filter runs inside llm.stream, before the text goes out: the custom
        answer_chunk events and the `messages` stream carry the filtered text, so both
        add up to the answer saved, and nothing changes it after streaming.
        `max_tokens`: the answer's bound, when shorter than the reserve.
        """
        if self.first_attempt:  # a retry must not close the thinking block again
            self.thinking.end()
        prompt = [("system", system), *self.history, ("user", self.turn)]
        result = await llm.stream(
            self.ctx, prompt, node=NODE, visible=True, text_filter=citations,
            max_tokens=max_tokens,
            on_text=lambda text: emit("answer_chunk", content=text),
            on_reasoning=self.thinking.stream)
        self.usage.append(result.usage)
        # A retry (empty answer, or a failure before any text) streams under a new id;
        # the last one is the answer's.
        self.message_id = result.message_id
        return require_text(self.ctx, result.text, first_attempt=self.first_attempt)

    def send(self, text: str) -> str:
        """An answer written here, not by the model, sent as a streamed one would be."""
        if self.first_attempt:
            self.thinking.end()
        emit("answer_chunk", content=text)
        return text
