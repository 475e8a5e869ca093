"""multi_doc_summary's answer: the summaries packed into groups that each fit a prompt.

One group gives the answer directly; several give one partial report each, written in
parallel (one Send each to partial_report, nodes/reports.py, which comes back to
answer_generation), and merged. Every merge round has fewer texts than the one before,
within a bounded number of rounds.
"""

from __future__ import annotations

import math

from scholarflow.bounded import require_progress, require_round
from scholarflow.errors import InternalError, ScholarflowError
from scholarflow.intents import Intent
from scholarflow.llm.budget import answer_reserve
from scholarflow.nodes.answer_base import SUMMARY_PROMPTS, Answerer
from scholarflow.nodes.common import format_document
from scholarflow.nodes.packing import pack_groups
from scholarflow.nodes.reports import wrap_report
from scholarflow.prompts import PromptTemplate
from scholarflow.state import ReportTask, State
from scholarflow.tokens import count_tokens
from scholarflow.tokens import truncate_to_tokens as truncate

_JOIN_TOKENS = 2  # the blank line between two texts of one prompt
MIN_REPORT_TOKENS = 256  # a partial report's bound never goes under a few paragraphs
_REPORT_WRAPPER_TOKENS = count_tokens(wrap_report(999, "")) + _JOIN_TOKENS


class SummaryAnswerer(Answerer):
    """The answer over the run's document summaries, or the next round's reports."""

    async def answer(self, state: State, intent: Intent) -> str | list[ReportTask]:
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
