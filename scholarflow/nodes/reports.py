"""partial_report: one Send per partial report of a merge round (multi_doc_summary).

When the document summaries do not fit one prompt, answer_generation packs them
into groups that do and writes a round of `report_tasks`; route_after_answer
sends each to partial_report, which has its own retry policy, so a 429 on one
report redoes that report only. The reports come back to answer_generation,
which merges them, or, when they still do not fit, writes the next round
(nodes/answer.py bounds the rounds). A report that fails after its retries is
recorded by partial_report_failed, and answer_generation ends the run in its
error: an answer without that group's documents would not say what it lacks.
"""

from __future__ import annotations

import logging
from typing import Any, Literal

from langgraph.errors import NodeError
from langgraph.runtime import Runtime
from langgraph.types import Command, Send

from scholarflow.context import Context, first_attempt, get_context
from scholarflow.events import node_complete
from scholarflow.llm import calls as llm
from scholarflow.llm.empty_answer import require_text
from scholarflow.nodes.errors import failure_of
from scholarflow.state import PartialReport, ReportFailure, ReportTask, State

logger = logging.getLogger(__name__)
NODE = "partial_report"


def wrap_report(part: int, text: str) -> str:
    """A report as the merge's prompt shows it."""
    return f'<report part="{part}">\n{text}\n</report>'


def route_after_answer(state: State) -> list[Send] | Literal["session_save"]:
    """The round's partial reports, one Send each; else the run is answered (or failed)."""
    tasks = state.get("report_tasks") or []
    if tasks and not state.get("error"):
        return [Send(NODE, task) for task in tasks]
    return "session_save"


async def partial_report(task: ReportTask, runtime: Runtime[Context]) -> dict[str, Any]:
    ctx = get_context(runtime)
    part = task["part"]
    # Hidden (llm.complete): a partial report is not the answer; the merge is.
    result = await llm.complete(ctx, [("system", task["system"]), ("user", task["question"])],
                                node=NODE, max_tokens=task["max_tokens"])
    text = require_text(ctx, result.text, first_attempt=first_attempt(runtime),
                        what=f"partial report {part}")
    node_complete(NODE, round=task["round"], part=part, parts=task["parts"])
    return {"partial_reports": [PartialReport(part=part, text=wrap_report(part, text.strip()))],
            "usage": [result.usage]}


async def partial_report_failed(
    task: ReportTask, error: NodeError
) -> Command[Literal["answer_generation"]]:
    """Record the failure; answer_generation, which the round returns to, reports it."""
    failure = ReportFailure(part=task["part"], **failure_of(NODE, error.error))
    logger.warning("partial report %s failed: %s", task["part"], failure["error"])  # scrubbed
    # A handler has no edges of its own: without the goto, a round whose every report
    # failed would end the run here, never reaching session_save.
    return Command(update={"report_failures": [failure]}, goto="answer_generation")
