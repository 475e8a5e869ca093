"""What a summary of several documents will cost, counted before anything is sent.

multi_doc_summary calls the model once for each document without a cached
summary (summarize_document: a document larger than one prompt is read from its
key chunks, up to what the prompt holds; `summary_call_tokens` counts that call),
then merges the summaries: answer_generation packs them into as few prompts as
fit (nodes/packing.py), one partial report each, round after round, until one
prompt holds them all and the answer is written. The estimate follows the same
packing, with each new summary and report at its length bound and the session's
history left out. Cached summaries cost no call.

Tokens are counted as scholarflow counts them (tokens.py); the model's own
tokenizer may count a few percent differently. The time comes from the
endpoint's measured speed (llm/rates.py), calls one after another: with several
in flight a server that serves them together is done sooner. With no
measurement the time is unknown, and the estimate says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scholarflow.context import Context
from scholarflow.intents import Intent
from scholarflow.llm.budget import answer_reserve, prompt_budget
from scholarflow.llm.rates import Rate
from scholarflow.nodes.answer_base import SUMMARY_PROMPTS
from scholarflow.nodes.answer_summaries import MIN_REPORT_TOKENS
from scholarflow.nodes.common import format_document
from scholarflow.nodes.packing import pack_groups
from scholarflow.nodes.reports import wrap_report
from scholarflow.nodes.summary import summary_call_tokens
from scholarflow.prompts.base import PromptTemplate
from scholarflow.state import DocSummary, DocumentInfo
from scholarflow.tokens import MESSAGE_OVERHEAD_TOKENS, count_tokens

_JOIN_TOKENS = 2  # the blank line between two texts of one prompt
_REPORT_WRAPPER_TOKENS = count_tokens(wrap_report(99, "")) + _JOIN_TOKENS
# The reminder of the answer's language appended to the question (question_turn).
_QUESTION_TURN_TOKENS = 40


@dataclass(frozen=True, slots=True)
class CostEstimate:
    """The model calls and tokens a summary of the run's documents takes."""

    documents: int  # the run's documents
    cached: int  # of them, with a summary in the cache: no call
    summary_calls: int  # one per document the model summarises
    merge_calls: int  # partial reports and the answer
    summary_prompt_tokens: int  # of the summary calls: the documents as they are sent
    merge_prompt_tokens: int  # of the merge calls: the summaries, each at its bound
    reply_tokens: int  # at most: each reply at its bound
    seconds: float | None  # one call after another at the measured speed; None: unknown
    rate: Rate | None  # the speed it comes from
    parallel: int  # calls that may be in flight at once

    @property
    def calls(self) -> int:
        return self.summary_calls + self.merge_calls

    @property
    def prompt_tokens(self) -> int:
        return self.summary_prompt_tokens + self.merge_prompt_tokens

    def words(self) -> str:
        """The estimate as one line for a person."""
        cached = f" ({self.cached} with a cached summary)" if self.cached else ""
        return (f"{counted(self.documents, 'document')}{cached}: "
                f"{counted(self.summary_calls, 'summary call')} and {self.merge_calls} to "
                f"merge them, ~{tokens_words(self.prompt_tokens)} "
                f"prompt tokens and up to {tokens_words(self.reply_tokens)} reply tokens, "
                f"{self.time_words()}")

    def time_words(self) -> str:
        if self.seconds is None or self.rate is None:
            return "time unknown (no call to this model has been measured yet)"
        together = (f"; up to {self.parallel} run at once, sooner where the server serves "
                    "several together" if self.parallel > 1 else "")
        return (f"~{duration_words(self.seconds)} with the calls one after another "
                f"({self.rate.words()}){together}")


def counted(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def tokens_words(n: int) -> str:
    """1234 -> "1.2k", 1_700_000 -> "1.7M"."""
    if n >= 1_000_000:
        return f"{n / 1_000_000:.1f}M"
    return f"{n / 1000:.1f}k" if n >= 1000 else str(n)


def duration_words(seconds: float) -> str:
    minutes = math.ceil(seconds / 60)
    if minutes < 2:
        return f"{max(1, round(seconds))} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min" if hours else f"{minutes} min"


def estimate_summary(
    ctx: Context, documents: list[DocumentInfo], cached: dict[str, DocSummary], *,
    question: str, intent: Intent, rate: Rate | None,
) -> CostEstimate:
    """The cost of summarising `documents` (those in `cached` need no call) and merging
    the summaries into the answer to `question`."""
    summary_prompt = reply = 0
    seconds = 0.0
    items: list[int] = []  # each summary as the merge's prompt holds it
    for doc in documents:
        wrapper = count_tokens(format_document(doc["title"], doc["doc_id"], ""))
        if (hit := cached.get(doc["doc_id"])) is not None:
            items.append(wrapper + hit["tokens"] + _JOIN_TOKENS)
            continue
        asked, bound = summary_call_tokens(ctx, doc["title"], doc["tokens"])
        summary_prompt, reply = summary_prompt + asked, reply + bound
        seconds += rate.seconds(asked, bound) if rate else 0.0
        items.append(wrapper + bound + _JOIN_TOKENS)
    merges = _merge_calls(ctx, items, question, SUMMARY_PROMPTS.get(
        intent, SUMMARY_PROMPTS[Intent.LITERATURE_SUMMARY]))
    merge_prompt = 0
    for asked, bound in merges:
        merge_prompt, reply = merge_prompt + asked, reply + bound
        seconds += rate.seconds(asked, bound) if rate else 0.0
    return CostEstimate(
        documents=len(documents), cached=sum(d["doc_id"] in cached for d in documents),
        summary_calls=sum(d["doc_id"] not in cached for d in documents),
        merge_calls=len(merges), summary_prompt_tokens=summary_prompt,
        merge_prompt_tokens=merge_prompt, reply_tokens=reply,
        seconds=seconds if rate else None, rate=rate, parallel=ctx.max_concurrent_llm_calls)


def _merge_calls(ctx: Context, items: list[int], question: str,
                 prompts: tuple[PromptTemplate, PromptTemplate, PromptTemplate]
                 ) -> list[tuple[int, int]]:
    """(prompt, reply bound) of each call that merges summaries of `items` tokens."""
    one, synthesis, merge = (_overhead(t) for t in prompts)
    fixed = count_tokens(question) + _QUESTION_TURN_TOKENS + 2 * MESSAGE_OVERHEAD_TOKENS
    budget = prompt_budget(ctx) - fixed
    reserve = answer_reserve(ctx)
    calls: list[tuple[int, int]] = []
    final = one
    rounds = math.ceil(math.log2(max(len(items), 2))) + 2  # answer_generation's bound
    for _ in range(rounds):
        room = budget - final
        if len(items) <= 2 or len(pack_groups(items, max(room, 1))) == 1:
            break
        room = max(budget - synthesis, 1)
        if len(pack_groups(items, room)) >= len(items):  # none share: each cut to half
            items = [min(i, room // 2) for i in items]
        groups = pack_groups(items, room)
        bound = max(MIN_REPORT_TOKENS, min(reserve, room // len(groups) - _REPORT_WRAPPER_TOKENS))
        calls += [(fixed + synthesis + sum(items[i] for i in g), bound) for g in groups]
        items = [bound + _REPORT_WRAPPER_TOKENS] * len(groups)
        final = merge
    material = min(sum(items), max(budget - final, 0))
    return [*calls, (fixed + final + material, reserve)]


def _overhead(template: PromptTemplate) -> int:
    """The template's tokens without its material."""
    return count_tokens(template.format(**dict.fromkeys(template.variables, "99")))
