"""answer_generation: the intent's prompt over what the strategy gathered, streamed.

No prompt ever exceeds the model's context minus the reserved answer tokens:
the document of full_content was admitted against that budget, and summaries
are packed into groups that each fit it, reported on in parallel (one Send
each to partial_report, nodes/reports.py, which comes back here), and merged.
A question about documents is never answered from none of them: the best
passage is cut to the room left rather than dropped, and a room under
MIN_MATERIAL_TOKENS is an error naming max_context_tokens. Every merge round
has fewer texts than the one before, within a bounded number of rounds.
"""

from __future__ import annotations

import math
from typing import Any

from langgraph.runtime import Runtime
from langgraph.types import Overwrite

from scholarflow.bounded import require_progress, require_round
from scholarflow.context import Context, first_attempt, get_context
from scholarflow.errors import ConfigurationError, InternalError, ScholarflowError
from scholarflow.events import Thinking, emit, node_complete
from scholarflow.intents import Intent
from scholarflow.language import answer_language
from scholarflow.llm import calls as llm
from scholarflow.llm.budget import MIN_MATERIAL_TOKENS, answer_reserve, prompt_budget, window_words
from scholarflow.llm.empty_answer import require_text
from scholarflow.llm.model import endpoint_key
from scholarflow.llm.reasoning import thinks
from scholarflow.nodes.attribution import AttributingFilter
from scholarflow.nodes.citations import (
    format_chunks,
    number_chunks,
    sources_for,
)
from scholarflow.nodes.common import format_document, history_messages, question_turn
from scholarflow.nodes.errors import reported_failure
from scholarflow.nodes.evidence import (
    DEFAULT_RULE,
    LIBRARY_RULE,
    SUPPORT_FLOOR,
    is_reference_chunk,
    select_evidence,
    support,
)
from scholarflow.nodes.option_evidence import (
    OptionEvidence,
    format_option_evidence,
    option_evidence,
    option_passages,
    question_evidence,
    reserve_tokens,
)
from scholarflow.nodes.option_excerpt import excerpt
from scholarflow.nodes.option_pick import picked_text, read_pick
from scholarflow.nodes.options import Options, insufficient_option, split_options
from scholarflow.nodes.packing import pack_groups
from scholarflow.nodes.recall import MAX_LISTED_DOCUMENTS
from scholarflow.nodes.reports import wrap_report
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
    UNSUPPORTED_ANSWER_EN,
    UNSUPPORTED_ANSWER_ZH,
    PromptTemplate,
)
from scholarflow.state import LLMUsage, RecalledChunkState, ReportTask, Source, State
from scholarflow.tokens import MESSAGE_OVERHEAD_TOKENS, count_message_tokens, count_tokens
from scholarflow.tokens import truncate_to_tokens as truncate

NODE = "answer_generation"

# The prompt that reads the documents (or summaries) for each intent.
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
_TEMPLATE_TOKENS = max(
    count_tokens(t.format(**dict.fromkeys(t.variables, "999")))
    for t in [*DIRECT_PROMPTS.values(), *(t for ts in SUMMARY_PROMPTS.values() for t in ts)]
) + count_tokens(CITED_MATERIAL_PROMPT.format(chunks=""))
_JOIN_TOKENS = 2  # the blank line between two texts of one prompt
MIN_REPORT_TOKENS = 256  # a partial report's bound never goes under a few paragraphs
_REPORT_WRAPPER_TOKENS = count_tokens(wrap_report(999, "")) + _JOIN_TOKENS


class _Answerer:
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
            prompt_budget(ctx) - count_message_tokens([self.turn]) - _TEMPLATE_TOKENS
            - 2 * MESSAGE_OVERHEAD_TOKENS - MIN_MATERIAL_TOKENS,
        )
        self.history = history_messages(state, "answer", max(history_room, 0))
        self.thinking = Thinking(ctx.show_thinking, NODE)
        self.usage: list[LLMUsage] = []
        self.message_id: str | None = None  # the streamed answer's (llm.LLMResult)

    def fill(self, template: PromptTemplate, material: str, **extra: str) -> str:
        """The template with its one material variable (documents, summaries or reports)."""
        (var,) = template.variables - {"language", "group", "groups"}
        return template.format(language=self.language, **{var: material}, **extra)

    def room(self, template: PromptTemplate, history: bool, **extra: str) -> int:
        """Tokens left for the material in `template` once everything else is counted."""
        turns = [self.fill(template, "", **extra), self.turn,
                 *(c for _, c in self.history if history)]
        return prompt_budget(self.ctx) - count_message_tokens(turns) - MESSAGE_OVERHEAD_TOKENS

    def require_room(self, room: int, what: str) -> None:
        """A question about documents is never answered from none of them."""
        if room < MIN_MATERIAL_TOKENS:
            raise ConfigurationError(
                f"{window_words(self.ctx)} leaves {max(room, 0)} "
                f"tokens for {what} once the question and reserved_answer_tokens="
                f"{answer_reserve(self.ctx)} are counted: raise max_context_tokens, "
                "lower reserved_answer_tokens, or shorten the question"
            )

    async def stream_answer(self, system: str,
                            citations: llm.TextFilter | None = None) -> str:
        """Stream the answer; with `citations`, [n] naming no recalled chunk are dropped.

        The filter runs inside llm.stream, before the text goes out: the custom
        answer_chunk events and the `messages` stream carry the filtered text, so both
        add up to the answer saved, and nothing changes it after streaming.
        """
        if self.first_attempt:  # a retry must not close the thinking block again
            self.thinking.end()
        prompt = [("system", system), *self.history, ("user", self.turn)]
        result = await llm.stream(
            self.ctx, prompt, node=NODE, visible=True, text_filter=citations,
            on_text=lambda text: emit("answer_chunk", content=text),
            on_reasoning=self.thinking.stream)
        self.usage.append(result.usage)
        # A retry (empty answer, or a failure before any text) streams under a new id;
        # the last one is the answer's.
        self.message_id = result.message_id
        return require_text(self.ctx, result.text, first_attempt=self.first_attempt)

    def passage_room(self, template: PromptTemplate) -> int:
        """Tokens the recalled passages may take in `template`'s prompt."""
        return self.room(template, True) - count_tokens(CITED_MATERIAL_PROMPT.format(chunks=""))

    async def from_chunks(self, state: State, intent: Intent) -> tuple[str, list[Source]]:
        recalled = state.get("recalled") or []
        numbered = number_chunks(recalled)
        if not numbered or all(map(is_reference_chunk, numbered)):  # never evidence
            raise ScholarflowError(
                "recall found nothing relevant in the documents: rephrase the question, "
                "or lower similarity_threshold"
            )
        template = DIRECT_PROMPTS[intent]
        asked = split_options(self.query)
        room = self.passage_room(template) - reserve_tokens(asked)
        self.require_room(room, "the recalled passages")
        # The documents a step was aimed at each keep their best passage (evidence.py).
        # Passages are scored against the stem: rare option words ("G140A", "K221A")
        # outweighed it and cut recalled key passages (LitQA2 dev: 35 -> 37 of 39 kept).
        aimed = {s["doc_id"] for s in state.get("plan") or [] if s["doc_id"]}
        library = len(state.get("documents") or []) > MAX_LISTED_DOCUMENTS
        kept: list[RecalledChunkState] = await select_evidence(
            recalled, room, aimed=aimed, question=asked.stem,
            rule=LIBRARY_RULE if library else DEFAULT_RULE)
        if asked.options:  # the best and those naming an option, best last: nearest the
            kept = option_passages(asked, kept)[::-1]  # question, where a small model reads
        held = support(asked.stem, kept)
        if intent == Intent.LITERATURE_QA and held < SUPPORT_FLOOR:
            return self.unsupported(asked, held), []
        if self.first_attempt:  # a retry after the model failed: the reader has seen it
            self.thinking.say(f"Answering from the {len(kept)} most relevant of "
                              f"{len(numbered)} passages.")
        system = self.fill(template, CITED_MATERIAL_PROMPT.format(chunks=format_chunks(kept)))
        # Cites uncited claims too (attribution.py), by the index scorer alone: as good as
        # with the embedder on the eval set (F1 0.85 vs 0.84), and the same answer every
        # time (vectors arriving mid-answer changed scores), with no wait for an embedder
        # that may share the LLM's limiter slot this stream holds.
        citations = AttributingFilter(kept, embedder=None)
        if asked.options:
            evidence = option_evidence(asked, kept)
            self.turn = question_turn(self.query, format_option_evidence(evidence))
            # A reasoning model's first token is its thought, never the letter.
            if intent == Intent.LITERATURE_QA and not thinks(endpoint_key(self.ctx)):
                cut, numbers = excerpt(asked, kept)  # numbered as in the whole prompt
                short = self.fill(template, CITED_MATERIAL_PROMPT.format(
                    chunks=format_chunks(cut, numbers)))
                picked = await self.pick((system, short, cut), asked, evidence, kept,
                                         citations)
                if picked is not None:
                    return picked
        answer = await self.stream_answer(system, citations)
        return answer, sources_for(citations.cited, kept)

    async def pick(self, systems: tuple[str, str, list[RecalledChunkState]], asked: Options,
                   evidence: list[OptionEvidence], kept: list[RecalledChunkState],
                   citations: AttributingFilter) -> tuple[str, list[Source]] | None:
        """The answer of hidden calls (option_pick.py) with `systems`: the system message
        with the passages, with their sentences nearest the stem, and those (excerpt());
        None when the server gives no letters' probabilities: the model writes it."""
        system, short, cut = systems
        chosen, usage = await read_pick(
            self.ctx, [("system", system), *self.history], self.query, asked, evidence, kept,
            node=NODE, excerpt_head=[("system", short), *self.history], excerpt_passages=cut)
        self.usage.extend(usage)
        if chosen is None:
            return None
        if chosen.free:
            self.thinking.say(f"The model's answer from the passages, asked without the "
                              f"options: {chosen.describe()}.")
        else:
            self.thinking.say("The model's choice among the options: "
                              f"{chosen.describe()}."
                              + (f" With their order reversed: {chosen.runner_up}."
                                 if chosen.runner_up else ""))
        text = picked_text(chosen, asked, evidence, chinese=self.language != "English",
                           otherwise=question_evidence(asked, kept))
        if chosen.abstained:  # drawn from no passage: nothing to cite
            return self.send(text), []
        text = await citations.feed(text) + await citations.flush()
        return self.send(text), sources_for(citations.cited, kept)

    def send(self, text: str) -> str:
        """An answer written here, not by the model, sent as a streamed one would be."""
        if self.first_attempt:
            self.thinking.end()
        emit("answer_chunk", content=text)
        return text

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

    async def full_content(self, state: State, intent: Intent) -> str:
        template = DIRECT_PROMPTS[intent]
        docs = state.get("documents") or []
        contents = state.get("document_texts") or {}
        wrappers = [format_document(d["title"], d["doc_id"], "") for d in docs]
        room = self.room(template, True) - count_message_tokens(wrappers)
        share = room // max(len(docs), 1)
        self.require_room(share, "each document")
        parts = []
        for doc in docs:
            text = contents[doc["doc_id"]]
            if doc["tokens"] > share:  # admitted against a looser budget; never overflow
                text = truncate(text, share)
                self.thinking.say(f"Shortened {doc['title']!r} to {share} tokens to fit.")
            parts.append(format_document(doc["title"], doc["doc_id"], text))
        return await self.stream_answer(self.fill(template, "\n\n".join(parts)))

    async def from_summaries(self, state: State, intent: Intent) -> str | list[ReportTask]:
        """The answer; or, while the texts do not fit one prompt, the next round's reports."""
        summaries = state.get("document_summaries") or {}
        ordered = [summaries[d["doc_id"]] for d in state.get("documents") or []
                   if d["doc_id"] in summaries]
        if not ordered:
            raise ScholarflowError("no document could be summarised; see the errors above")
        one, synthesis, merge = SUMMARY_PROMPTS[intent]
        done = state.get("report_round") or 0
        if done:  # back from a round of partial_report: merge its reports
            items, final = _reports(state), merge
        else:
            items = [format_document(s["title"], s["doc_id"], s["summary"]) for s in ordered]
            final = one
        # Each round at least halves the texts (report_tasks), so log2(n) + 2 rounds suffice.
        limit = math.ceil(math.log2(len(ordered))) + 2
        require_round(done + 1, limit, "merging the partial reports", fix=_MERGE_FIX)
        room = self.room(final, True)
        self.require_room(room, "the document summaries")
        if len(items) <= 2:  # a pair over the room: shortening both loses what a report would
            items = _fit_pairs(items, room)
        if len(_groups(items, room)) == 1:
            material = "\n\n".join(items)
            if len(items) == 1:  # one text over the room: its beginning
                material = truncate(material, room - _JOIN_TOKENS)
            return await self.stream_answer(self.fill(final, material))
        return self.report_tasks(synthesis, items, done + 1)

    def report_tasks(self, template: PromptTemplate, items: list[str],
                     round_: int) -> list[ReportTask]:
        """One partial report per group of texts that fits a prompt: fewer texts than before."""
        room = self.room(template, False, group="999", groups="999")
        self.require_room(room, "a group of summaries")
        items = _fit_pairs(items, room)
        groups = _groups(items, room)
        require_progress(len(items), len(groups), "grouping the summaries", fix=_MERGE_FIX)
        self.thinking.say(
            f"{len(items)} texts are too long for one prompt: writing {len(groups)} "
            "partial reports in parallel, then merging them."
        )
        # Bounded so that the reports together fit the merge's prompt (the room, less a
        # wrapper each), and never longer than an answer; a few paragraphs at least.
        bound = max(MIN_REPORT_TOKENS, min(answer_reserve(self.ctx),
                                           room // len(groups) - _REPORT_WRAPPER_TOKENS))
        return [
            ReportTask(round=round_, part=n, parts=len(groups), question=self.query,
                       max_tokens=bound,
                       system=self.fill(template, "\n\n".join(truncate(items[i], room)
                                                              for i in group),
                                        group=str(n), groups=str(len(groups))))
            for n, group in enumerate(groups, 1)
        ]


def _reports(state: State) -> list[str]:
    """The round's partial reports in order: every one the round asked for, once."""
    reports = sorted(state.get("partial_reports") or [], key=lambda r: r["part"])
    asked = [t["part"] for t in state.get("report_tasks") or []]
    if [r["part"] for r in reports] != asked:
        raise InternalError(f"the partial reports {[r['part'] for r in reports]} came back "
                            f"for the parts {asked}; report this as a bug")
    return [r["text"] for r in reports]


def _groups(items: list[str], room: int) -> list[list[int]]:
    return pack_groups([count_tokens(i) + _JOIN_TOKENS for i in items], room)


def _fit_pairs(items: list[str], room: int) -> list[str]:
    """`items`, or when no two share a prompt, each cut to half of it so pairs do.

    Without this, texts that each fill a prompt give one report each, as long as
    they were, and the merge never shrinks.
    """
    if len(items) < 2 or len(_groups(items, room)) < len(items):
        return items
    half = room // 2 - _JOIN_TOKENS - 2  # 2: a cut text may re-count a token longer
    return [truncate(i, half) for i in items]


_MERGE_FIX = "raise max_context_tokens, or ask about fewer documents at once"


async def answer_generation(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    ctx = get_context(runtime)
    intent = Intent.parse(state.get("detected_intent") or Intent.LITERATURE_QA)
    strategy = state.get("strategy")
    if failures := sorted(state.get("report_failures") or [], key=lambda f: f["part"]):
        # A partial report failed after its retries: the run ends in the first one's error
        # (nodes/reports.py), reported as this node's, whose work it was.
        return {**reported_failure(NODE, failures[0]), "report_tasks": []}
    answerer = _Answerer(ctx, state, first_attempt(runtime))
    sources: list[Source] = []
    if strategy == "multi_doc_summary":
        answer = await answerer.from_summaries(state, intent)
        if isinstance(answer, list):  # route_after_answer sends each to partial_report
            return {"report_round": (state.get("report_round") or 0) + 1,
                    "report_tasks": answer, "partial_reports": Overwrite([]),
                    "report_failures": Overwrite([])}
    elif strategy == "full_content":
        answer = await answerer.full_content(state, intent)
    else:
        answer, sources = await answerer.from_chunks(state, intent)
    node_complete(NODE, intent=intent.value, strategy=strategy, sources=len(sources))
    return {"answer": answer, "answer_id": answerer.message_id, "sources": sources,
            "usage": answerer.usage, "report_tasks": []}
