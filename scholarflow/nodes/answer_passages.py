"""The answer from recalled passages: evidence_selection picks them, the answer cites them.

evidence_selection (a node, no model call) keeps the passages the answer prompt holds
(nodes/evidence.py), in the room the window leaves, and measures how much of the
question the best of them holds. A precise question that no passage speaks to is
answered "insufficient information" without a model call, so without a guess. A
question that lists options goes to option_reading first (nodes/option_reading.py)
unless `multiple_choice` is off or the model reasons before it answers (its first
words are its thought, never the answer); answer_generation then writes the option
a reading named, or that the passages do not settle the question.
"""

from __future__ import annotations

from typing import Any, Literal

from langgraph.runtime import Runtime

from scholarflow.context import Context, first_attempt, get_context
from scholarflow.errors import ScholarflowError
from scholarflow.events import Thinking
from scholarflow.intents import Intent
from scholarflow.llm.budget import answer_reserve
from scholarflow.llm.model import endpoint_key
from scholarflow.llm.reasoning import thinks
from scholarflow.nodes.answer_base import DIRECT_PROMPTS, NODE, Answerer
from scholarflow.nodes.attribution import AttributingFilter
from scholarflow.nodes.citations import format_chunks, number_chunks, sources_for
from scholarflow.nodes.common import question_turn
from scholarflow.nodes.evidence import (
    DEFAULT_RULE,
    LIBRARY_RULE,
    SUPPORT_FLOOR,
    is_reference_chunk,
    select_evidence,
    support,
)
from scholarflow.nodes.option_evidence import (
    format_option_evidence,
    option_evidence,
    option_passages,
    question_evidence,
    reserve_tokens,
)
from scholarflow.nodes.option_reading import reading_answer
from scholarflow.nodes.options import Options, insufficient_option, split_options
from scholarflow.nodes.quoting import WordsFirst
from scholarflow.nodes.recall import MAX_LISTED_DOCUMENTS
from scholarflow.prompts import CITED_MATERIAL_PROMPT, UNSUPPORTED_ANSWER_EN, UNSUPPORTED_ANSWER_ZH
from scholarflow.state import RecalledChunkState, Source, State

SELECT_NODE = "evidence_selection"


def _intent(state: State) -> Intent:
    return Intent.parse(state.get("detected_intent") or Intent.LITERATURE_QA)


async def evidence_selection(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """The passages the answer prompt holds, and how much of the question they hold."""
    ctx = get_context(runtime)
    recalled = state.get("recalled") or []
    numbered = number_chunks(recalled)
    if not numbered or all(map(is_reference_chunk, numbered)):  # never evidence
        raise ScholarflowError(
            "recall found nothing relevant in the documents: rephrase the question, "
            "or lower similarity_threshold"
        )
    answerer = Answerer(ctx, state, first_attempt(runtime))
    asked = split_options(state["question"])
    room = answerer.passage_room(DIRECT_PROMPTS[_intent(state)]) - reserve_tokens(asked)
    answerer.require_room(room, "the recalled passages")
    # The documents a step was aimed at each keep their best passage (evidence.py).
    # Passages are scored against the stem: rare option words would outweigh it.
    aimed = {s["doc_id"] for s in state.get("plan") or [] if s["doc_id"]}
    library = len(state.get("documents") or []) > MAX_LISTED_DOCUMENTS
    kept: list[RecalledChunkState] = await select_evidence(
        recalled, room, aimed=aimed, question=asked.stem,
        rule=LIBRARY_RULE if library else DEFAULT_RULE)
    if asked.options:  # the best and those naming an option, best last: nearest the
        kept = option_passages(asked, kept, ctx.option_passages)[::-1]  # question
    elif _intent(state) == Intent.LITERATURE_QA:  # one finding needs few passages
        kept = _capped(kept, ctx.precise_passages, aimed)
    Thinking(ctx.show_thinking, SELECT_NODE).say(
        f"Answering from the {len(kept)} most relevant of {len(numbered)} passages.")
    return {"evidence": kept, "evidence_support": support(asked.stem, kept)}


def _capped(kept: list[RecalledChunkState], limit: int, aimed: set[str]
            ) -> list[RecalledChunkState]:
    """The best `limit` of `kept` (best first), and each aimed document's best passage
    beyond them: a question about each of several papers hears from each of them."""
    head = kept[:limit]
    heard = {c["doc_id"] for c in head}
    for chunk in kept[limit:]:
        if chunk["doc_id"] in aimed and chunk["doc_id"] not in heard:
            head.append(chunk)
            heard.add(chunk["doc_id"])
    return head


def route_after_evidence(state: State, runtime: Runtime[Context]
                         ) -> Literal["option_reading", "answer_generation"]:
    """Multiple choice is read in words first when it can be (module docstring)."""
    ctx = get_context(runtime)
    if (ctx.multiple_choice and _intent(state) == Intent.LITERATURE_QA
            and split_options(state["question"]).options
            and state.get("evidence_support", 0.0) >= SUPPORT_FLOOR
            and not thinks(endpoint_key(ctx))):
        return "option_reading"
    return "answer_generation"


class PassageAnswerer(Answerer):
    """The answer over the passages evidence_selection kept."""

    async def answer(self, state: State) -> tuple[str, list[Source]]:
        intent = _intent(state)
        kept = state.get("evidence") or []
        asked = split_options(self.query)
        held = state.get("evidence_support", 0.0)
        if intent == Intent.LITERATURE_QA and held < SUPPORT_FLOOR:
            return self.unsupported(asked, held), []
        system = self.fill(DIRECT_PROMPTS[intent],
                           CITED_MATERIAL_PROMPT.format(chunks=format_chunks(kept)))
        # Cites uncited claims too (attribution.py), by the index scorer alone: the same
        # answer every time, with no wait for an embedder that may share the LLM's
        # limiter slot this stream holds.
        citations = AttributingFilter(kept, embedder=None)
        if asked.options:
            evidence = option_evidence(asked, kept)
            self.turn = question_turn(self.query, format_option_evidence(evidence))
            if readings := state.get("option_readings") or []:
                text, cites = reading_answer(
                    asked, readings, evidence, question_evidence(asked, kept),
                    chinese=self.language != "English")
                if not cites:  # drawn from no passage: nothing to cite
                    return self.send(text), []
                text = await citations.feed(text) + await citations.flush()
                return self.send(text), sources_for(citations.cited, kept)
        quoting = WordsFirst(citations, kept, asked.stem, chinese=self.language != "English")
        # Never over the reserve the prompt's room was counted with (a small window's).
        bound = (min(self.ctx.precise_answer_tokens, answer_reserve(self.ctx))
                 if intent == Intent.LITERATURE_QA else None)
        answer = await self.stream_answer(system, quoting, bound)
        return answer, sources_for(citations.cited, kept)

    def unsupported(self, asked: Options, held: float) -> str:
        """The answer when no passage speaks to a precise question: it says so, naming the
        question's own "insufficient information" option when it lists one; no model call,
        so no guess (evidence.py SUPPORT_FLOOR)."""
        self.thinking.say(f"No passage holds enough of the question's words (at most "
                          f"{held:.0%}): the documents do not answer it.")
        chinese = self.language != "English"
        text = (UNSUPPORTED_ANSWER_ZH if chinese else UNSUPPORTED_ANSWER_EN).format()
        if option := insufficient_option(asked):
            text = f"{option[0]}) {option[1]}\n\n{text}"
        return self.send(text)


__all__ = ["NODE", "SELECT_NODE", "PassageAnswerer", "evidence_selection",
           "route_after_evidence"]
