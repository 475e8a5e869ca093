"""intent_recognition and strategy_selection.

`recognise_intent` and `select_strategy` are plain functions so that
`scholarflow route` decides exactly as the graph does, without running it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from langgraph.runtime import Runtime

from scholarflow.bounded import LoopLimitError, bounded_rounds
from scholarflow.context import Context, get_context
from scholarflow.errors import LLMError
from scholarflow.events import Thinking, node_complete
from scholarflow.intents import Intent
from scholarflow.llm import calls as llm
from scholarflow.llm.budget import cap_tokens, prompt_budget
from scholarflow.nodes.common import history_text
from scholarflow.nodes.intent_examples import ExampleVote, nearest_examples
from scholarflow.nodes.intent_parse import parse_intent_reply
from scholarflow.nodes.intent_rules import (
    RuleVerdict,
    asks_for_no_task,
    classify_by_rules,
    has_subject,
    message_ends,
)
from scholarflow.nodes.options import split_options
from scholarflow.prompts import INTENT_RECOGNITION_PROMPT
from scholarflow.state import DecidedBy, DocumentInfo, LLMUsage, State, Strategy
from scholarflow.tokens import count_message_tokens, count_tokens

logger = logging.getLogger(__name__)

SUMMARY_INTENTS = frozenset({Intent.LITERATURE_SUMMARY, Intent.REVIEW_GENERATION})
# Verdicts that start a task: a summary of each document, a review, a critique.
TASK_INTENTS = SUMMARY_INTENTS | {Intent.PAPER_REVIEW}
# The guard's verdict is the rules' reading against the model's: neither sure nor a guess.
GUARD_CONFIDENCE = 0.6
# The nearest examples agreeing: likely, not certain (a split vote decides nothing).
EXAMPLES_CONFIDENCE = 0.8
# However many retries the context asks for: each is a paid call that failed the same way.
MAX_INTENT_ATTEMPTS = 10
TITLE_TOKENS = 100


@dataclass(frozen=True, slots=True)
class IntentDecision:
    intent: Intent
    confidence: float
    decided_by: DecidedBy
    reason: str
    usage: tuple[LLMUsage, ...] = ()


async def recognise_intent(
    ctx: Context,
    query: str,
    *,
    mode_type: str | None = None,
    documents: list[DocumentInfo] | None = None,
    history: str = "(none)",
) -> IntentDecision:
    """mode_type wins; else unambiguous rules; else the nearest example messages when they
    agree, else the LLM, either overruled to LITERATURE_QA when it calls for a task the
    message does not ask for; else the rules' best guess."""
    if mode_type:
        return IntentDecision(Intent.parse(mode_type), 1.0, "override", "mode_type given")
    if documents and split_options(query).options:
        # A multiple-choice question about documents asks for one precise answer.
        return IntentDecision(Intent.LITERATURE_QA, 0.9, "rules", "a question with options")
    min_terms = ctx.precise_question_min_terms
    verdict = classify_by_rules(query, has_documents=bool(documents), min_terms=min_terms)
    if verdict.unambiguous:
        return IntentDecision(verdict.intent, verdict.confidence, "rules", verdict.reason)
    if (vote := await _unanimous_examples(ctx, query)) is not None:
        said = (f"its {len(vote.nearest)} nearest example messages are all "
                f"{vote.intent.value} ({vote.nearest[0]!r}, ...)")
        if _overruled(ctx, query, verdict, vote.intent):
            return IntentDecision(Intent.LITERATURE_QA, GUARD_CONFIDENCE, "guard",
                                  f"{said}, but the message names no summary, review or "
                                  "critique: a question for recall")
        return IntentDecision(vote.intent, EXAMPLES_CONFIDENCE, "examples", said)
    if not ctx.llm_configured:
        return IntentDecision(
            verdict.intent, verdict.confidence, "fallback", f"no LLM; {verdict.reason}"
        )
    system = _intent_system(ctx, query, documents or [], history)
    usage: list[LLMUsage] = []
    attempts = bounded_rounds(min(ctx.max_intent_recognition_retries, MAX_INTENT_ATTEMPTS),
                              "intent recognition")
    for attempt in _until_exhausted(attempts):
        try:
            result = await llm.complete(
                ctx, [("system", system), ("user", query)], node="intent_recognition"
            )
        except LLMError as exc:
            logger.info("intent LLM failed, rules decide: %s", exc)
            return IntentDecision(
                verdict.intent, verdict.confidence, "fallback",
                f"LLM failed ({exc}); {verdict.reason}", tuple(usage),
            )
        usage.append(result.usage)
        parsed = parse_intent_reply(result.text)
        if parsed is not None and _overruled(ctx, query, verdict, parsed.intent):
            return IntentDecision(
                Intent.LITERATURE_QA, GUARD_CONFIDENCE, "guard",
                f"the model said {parsed.intent.value}, but the message names no summary, "
                "review or critique: a question for recall", tuple(usage),
            )
        if parsed is not None:
            return IntentDecision(
                parsed.intent, parsed.confidence, "llm", parsed.reason, tuple(usage)
            )
        logger.info("attempt %d: no valid intent in %r", attempt, result.text[:200])
    return IntentDecision(
        verdict.intent, verdict.confidence, "fallback",
        f"LLM gave no valid intent; {verdict.reason}", tuple(usage),
    )


async def _unanimous_examples(ctx: Context, query: str) -> ExampleVote | None:
    """The nearest examples' intent when they agree on one and the message has words of
    its own; a message without ("Thoughts?", "And the second one?") is read with the
    conversation, by the model."""
    if ctx.intent_example_neighbours < 1 or not has_subject(query):
        return None
    # A pasted text is embedded by its ends, as the rules read it: the request is there.
    vote = await nearest_examples(message_ends(query), ctx.intent_example_neighbours)
    return vote if vote is not None and vote.unanimous else None


def _overruled(ctx: Context, query: str, verdict: RuleVerdict, intent: Intent) -> bool:
    """A summary, review or critique (the model's or the examples') of a message that asks
    for none is not taken: it would send every document through the model (or write a
    referee report) for a question that recall answers, whatever the reader's bias."""
    return (intent in TASK_INTENTS and ctx.intent_task_guard
            and asks_for_no_task(query, verdict))


def _until_exhausted(rounds: Iterator[int]) -> Iterator[int]:
    """The rounds, ending quietly at the bound: running out of retries means the rules decide."""
    try:
        yield from rounds
    except LoopLimitError:
        return


def _intent_system(ctx: Context, query: str, documents: list[DocumentInfo], history: str) -> str:
    """The intent prompt within the prompt budget: titles and history are cut to fit."""
    room = (prompt_budget(ctx) - count_message_tokens([query])
            - count_message_tokens([INTENT_RECOGNITION_PROMPT.format(document_list="",
                                                                     history="")]))
    listing = cap_tokens(_document_list(documents), max(room // 2, 0))
    room -= count_tokens(listing)
    return INTENT_RECOGNITION_PROMPT.format(
        document_list=listing, history=cap_tokens(history, room, keep_end=True) or "(none)"
    )


def _document_list(documents: list[DocumentInfo]) -> str:
    if not documents:
        return "(none)"
    # A title is a line, not a document: a pathological one is cut.
    shown = [f"- {cap_tokens(d['title'], TITLE_TOKENS)} ({d['tokens']} tokens)"
             for d in documents[:20]]
    if len(documents) > 20:
        shown.append(f"- … and {len(documents) - 20} more")
    return "\n".join(shown)


def select_strategy(intent: Intent, *, use_direct_content: bool, document_count: int) -> Strategy:
    """Seed 004's rule, verbatim."""
    if use_direct_content:
        return "full_content"
    if document_count > 1 and intent in SUMMARY_INTENTS:
        return "multi_doc_summary"
    return "chunk_recall"


async def intent_recognition(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    ctx = get_context(runtime)
    decision = await recognise_intent(
        ctx,
        state["question"],
        mode_type=state.get("requested_mode"),
        documents=state.get("documents"),
        history=history_text(state, "intent", prompt_budget(ctx) // 2),
    )
    Thinking(ctx.show_thinking, "intent_recognition").say(
        f"Intent: {decision.intent.value} (confidence {decision.confidence:.2f}, "
        f"decided by {decision.decided_by}: {decision.reason})."
    )
    node_complete(
        "intent_recognition", intent=decision.intent.value, decided_by=decision.decided_by
    )
    return {
        "detected_intent": decision.intent.value,
        "intent_confidence": decision.confidence,
        "intent_decided_by": decision.decided_by,
        "intent_reason": decision.reason,
        "usage": list(decision.usage),
    }


def route_after_intent(state: State) -> Literal["simple_interaction", "strategy_selection"]:
    if state.get("detected_intent") == Intent.SIMPLE_INTERACTION:
        return "simple_interaction"
    return "strategy_selection"


async def strategy_selection(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    ctx = get_context(runtime)
    intent = Intent.parse(state.get("detected_intent") or Intent.LITERATURE_QA)
    documents = state.get("documents") or []
    strategy = select_strategy(
        intent,
        use_direct_content=bool(state.get("use_direct_content")),
        document_count=len(documents),
    )
    why = {
        "full_content": "one document that fits the context: read it whole",
        "multi_doc_summary": f"{len(documents)} documents to summarise: one summary each",
        "chunk_recall": (f"{len(documents)} documents: recall the relevant passages of each"
                         if len(documents) > 1 else
                         "too much text to read whole: recall the relevant passages"),
    }[strategy]
    Thinking(ctx.show_thinking, "strategy_selection").say(f"Strategy: {strategy} ({why}).")
    node_complete("strategy_selection", strategy=strategy)
    return {"strategy": strategy}


def route_after_strategy(
    state: State,
) -> Literal["answer_generation", "cost_check", "sub_question_generation"]:
    strategy = state.get("strategy")
    if strategy == "full_content":
        return "answer_generation"
    if strategy == "multi_doc_summary":  # its cost grows with the documents: estimated first
        return "cost_check"
    return "sub_question_generation"
