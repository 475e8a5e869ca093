"""cost_check: a summary of several documents says what it will cost before it starts,
and past the context's limits waits for a person to approve it.

multi_doc_summary is the one strategy whose model calls grow with the documents:
one summary call per document, then merge rounds. chunk_recall's do not (a
bounded plan, searches that call no model, an answer within one prompt), nor
does full_content's (one document), so route_after_strategy sends only
multi_doc_summary through here. The estimate (nodes/cost_estimate.py: documents,
calls, tokens, and a time from the model's measured speed) is a thinking line.
When the documents the model would summarise pass `approval_documents`, or the
estimated prompt tokens pass `approval_tokens`, the run pauses in `interrupt()`
with the estimate (`approval_request`), and is resumed with `Command(resume=...)`:

- `True`, `"approve"` or `{"action": "approve"}`: the summary runs;
- `False`, `"decline"`, `"cancel"` or `{"action": "decline"}` (or `"cancel"`): the
  run ends in CostDeclinedError, no document having been sent to the model.

A run without a checkpointer cannot pause, so past the limits it is refused
(CostApprovalRequiredError) with the estimate and how to approve it: the limits
in the context, or the command line's --approve-cost. LangGraph runs a resumed
node again from its start; nothing here calls a model.
"""

from __future__ import annotations

import asyncio
from typing import Any

from langgraph.config import get_config

# Public, though kept for langgraph-api's sake: the key of the saver a task runs with.
from langgraph.constants import CONFIG_KEY_CHECKPOINTER
from langgraph.runtime import Runtime
from langgraph.types import interrupt

from scholarflow.context import Context, get_context
from scholarflow.errors import InputError, ScholarflowError
from scholarflow.events import Thinking, node_complete
from scholarflow.intents import Intent
from scholarflow.llm import rates
from scholarflow.llm.model import endpoint_key
from scholarflow.nodes.cost_estimate import CostEstimate, estimate_summary
from scholarflow.nodes.summary import cached_summaries
from scholarflow.scrub import one_line
from scholarflow.state import State
from scholarflow.storage.paths import home_path

NODE = "cost_check"
APPROVAL_TYPE = "approve_cost"  # the interrupt value's "type": what a client shows and answers
LIMITS = ("approval_documents", "approval_tokens")
CLI_FLAG = "--approve-cost"
ACCEPTED = ('resume with true, "approve" or {"action": "approve"} to run it; false, "decline" '
            'or {"action": "decline"} to end the run without it')


class CostApprovalRequiredError(InputError):
    """A request past the approval limits, in a run that cannot pause to ask."""


class CostDeclinedError(ScholarflowError):
    """The person declined the estimated cost: the run ends without an answer."""


def over_limits(ctx: Context, estimate: CostEstimate) -> list[str]:
    """The limits the estimate passes, in words ("82 documents to summarise over
    approval_documents=20")."""
    over = []
    if ctx.approval_documents is not None and estimate.summary_calls > ctx.approval_documents:
        over.append(f"{estimate.summary_calls} documents to summarise over "
                    f"approval_documents={ctx.approval_documents}")
    if ctx.approval_tokens is not None and estimate.prompt_tokens > ctx.approval_tokens:
        over.append(f"~{estimate.prompt_tokens} prompt tokens over "
                    f"approval_tokens={ctx.approval_tokens}")
    return over


def how_to_approve() -> str:
    return (f"raise {' and '.join(LIMITS)} in the context (null: no limit), or on the command "
            f"line run it with {CLI_FLAG}")


def approval_request(state: State, estimate: CostEstimate, over: list[str]) -> dict[str, Any]:
    """The interrupt's value: the estimate, in figures and in words, and how to answer."""
    return {
        "type": APPROVAL_TYPE,
        "question": state["question"],
        "documents": estimate.documents,
        "cached": estimate.cached,
        "llm_calls": estimate.calls,
        "prompt_tokens": estimate.prompt_tokens,
        "summary_prompt_tokens": estimate.summary_prompt_tokens,
        "merge_prompt_tokens": estimate.merge_prompt_tokens,
        "reply_tokens": estimate.reply_tokens,
        "seconds": None if estimate.seconds is None else round(estimate.seconds),
        "estimate": f"this summary would send {estimate.words()}",
        "over": over,
        "how_to_resume": 'Resume with {"action": "approve"} (or true) to run it, or '
                         '{"action": "decline"} (or false) to end the run without it.',
    }


def parse_approval(value: object) -> bool:
    """The resume value: True to run, False to decline; InputError naming the forms else."""
    if isinstance(value, dict) and set(value) == {"action"}:
        value = value["action"]
    if isinstance(value, str):
        value = value.strip().lower()
    if value is True or value == "approve":
        return True
    if value is False or value in ("decline", "cancel"):
        return False
    raise InputError(f"invalid cost approval answer: {one_line(repr(value), limit=80)} is none "
                     f"of the accepted forms; {ACCEPTED}")


def _resumable() -> bool:
    """Whether the run can pause and be resumed: only with a checkpointer."""
    return get_config().get("configurable", {}).get(CONFIG_KEY_CHECKPOINTER) is not None


async def _rate(ctx: Context) -> rates.Rate | None:
    """The model's speed measured in this process, else as an earlier one saved it."""
    endpoint = endpoint_key(ctx)
    measured = rates.measured_rate(endpoint)
    if measured is not None:
        return measured
    return await asyncio.to_thread(rates.saved_rate, endpoint, home_path())


async def cost_check(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    ctx = get_context(runtime)
    documents = state.get("documents") or []
    cached = await cached_summaries(ctx, documents)
    estimate = estimate_summary(
        ctx, documents, cached, question=state["question"],
        intent=Intent.parse(state.get("detected_intent") or Intent.LITERATURE_SUMMARY),
        rate=await _rate(ctx))
    thinking = Thinking(ctx.show_thinking, NODE)
    thinking.say(f"Cost: {estimate.words()}.")
    over = over_limits(ctx, estimate)
    if over and not _resumable():
        raise CostApprovalRequiredError(
            f"this summary needs approval before it starts ({'; '.join(over)}): it would send "
            f"{estimate.words()}; to run it, {how_to_approve()}, or run the graph with a "
            "checkpointer and a thread_id to be asked")
    if over:
        # Pauses the run; on resume it returns the person's answer.
        if not parse_approval(interrupt(approval_request(state, estimate, over))):
            raise CostDeclinedError(
                f"the summary was not run: its cost was declined ({estimate.words()}); no "
                "document was sent to the model")
        thinking.say("The cost was approved.")
    node_complete(NODE, documents=estimate.documents, cached=estimate.cached,
                  llm_calls=estimate.calls, prompt_tokens=estimate.prompt_tokens,
                  seconds=None if estimate.seconds is None else round(estimate.seconds),
                  approval="asked" if over else "not needed")
    return {}
