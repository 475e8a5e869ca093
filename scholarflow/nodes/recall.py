"""The chunk_recall branch: sub_question_generation -> plan_generation -> execution.

Sub-questions are retrieval-oriented and may aim at one document; each
becomes one recall step. Searches use the question's stem: options listed
in it are answer candidates, not search terms (nodes/options.py). With a
few documents, every document no sub-question aims at gets the question
itself aimed at it, so none is crowded out by another's chunks
(docs/architecture.md#intents-and-strategies). With more (a library), the
planner is shown what a first search found instead of titles
(nodes/candidates.py), and recall searches the stem over the library and
inside each of the best candidate papers, besides the sub-questions; a
question that lists options is searched that way without a planner call.
The execution subgraph runs consecutive recall steps in parallel (one Send
each) and stops after total_steps x 2 rounds even if a step keeps failing.
A step that failed for a reason another try cannot change (bad input, a
setting, an unreachable service) is not tried again; when no step succeeds
the run fails with the first step's reason.
"""

from __future__ import annotations

import json
import logging
import operator
import re
from collections.abc import Sequence
from typing import Annotated, Any, Literal, NotRequired

from langgraph.errors import NodeError
from langgraph.runtime import Runtime
from langgraph.types import Command, Send
from pydantic import Field
from typing_extensions import TypedDict  # pydantic needs it on Python < 3.12 (Studio schemas)

from scholarflow.context import Context, get_context
from scholarflow.errors import (
    ConfigurationError,
    FatalLLMError,
    InputError,
    LLMError,
    NotSupportedError,
    ScholarflowError,
)
from scholarflow.events import Thinking, node_complete
from scholarflow.intents import Intent
from scholarflow.language import is_chinese
from scholarflow.llm import calls as llm
from scholarflow.llm.budget import cap_tokens, prompt_budget
from scholarflow.nodes.candidates import candidate_documents, candidate_listing, first_search
from scholarflow.nodes.common import history_text
from scholarflow.nodes.errors import user_message
from scholarflow.nodes.intent import SUMMARY_INTENTS, TITLE_TOKENS
from scholarflow.nodes.intent_form import is_precise_question
from scholarflow.nodes.options import Options, insufficient_option, split_options
from scholarflow.nodes.recall_scope import DIRECT_KB, prepare_recall, recall_scope, retriever_for
from scholarflow.prompts import (
    KEY_CHUNK_QUERIES,
    PLAN_FEEDBACK_PROMPT,
    SUB_QUESTION_GENERATION_PROMPT,
)
from scholarflow.retrieval.access import recall_params
from scholarflow.retrieval.kb import RecalledChunk, best_per_chunk
from scholarflow.state import (
    DocumentInfo,
    RecalledChunkState,
    RecallStep,
    RecallStepTask,
    State,
    SubQuestion,
)
from scholarflow.tokens import count_message_tokens, count_tokens

logger = logging.getLogger(__name__)
MAX_SUB_QUESTIONS = 6
# Up to this many documents the planner is shown their titles and each gets a step of
# its own (a step is a search and a query embedding); over more, a library, it is shown
# what a first search found (nodes/candidates.py).
MAX_LISTED_DOCUMENTS = 10
# Over a library, the best candidate papers of the first search each get the stem
# searched inside them: the library-wide search finds the paper, a search within it
# ranks that paper's passages against each other.
AIMED_CANDIDATES = 2
# The planner's reply: MAX_SUB_QUESTIONS questions and their translations fit in ~400
# tokens. Unbounded (the answer's reserve), a small local model can ramble for minutes
# on a slow machine before the answer can start.
PLANNER_MAX_TOKENS = 512
_JSON_OBJECT = re.compile(r"\{.*\}", re.S)
# Failures that come out the same however often a step is tried.
PERMANENT_ERRORS = (InputError, ConfigurationError, NotSupportedError, FatalLLMError)


class RecallFailedError(ScholarflowError):
    """Every recall step failed: the message says why the first one did."""


def parse_sub_questions(text: str, documents: list[DocumentInfo]) -> list[SubQuestion]:
    """The sub-questions of the LLM's JSON; [] when it gave none that can be used."""
    match = _JSON_OBJECT.search(text)
    if not match:
        return []
    try:
        data = json.loads(match.group(0))
    except json.JSONDecodeError:
        return []
    items = data.get("sub_questions") if isinstance(data, dict) else None
    known = {d["doc_id"] for d in documents}
    result: list[SubQuestion] = []
    for item in items if isinstance(items, list) else []:
        question = str(item.get("question", "")).strip() if isinstance(item, dict) else ""
        if not question:
            continue
        doc_id = item.get("doc_id")
        translation = str(item.get("translation") or "").strip()
        if translation and is_chinese(translation) == is_chinese(question):
            translation = ""  # "translated" into the same language (small models do)
        result.append(SubQuestion(question=question, translation=translation or None,
                                  doc_id=doc_id if doc_id in known else None))
    return result[:MAX_SUB_QUESTIONS]


async def sub_question_generation(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    ctx = get_context(runtime)
    # Fail fast, before any LLM call, when there is nothing to recall from.
    await prepare_recall(state)
    documents = state.get("documents") or []
    query = state["question"]
    asked = split_options(query)
    stem = asked.stem
    thinking = Thinking(ctx.show_thinking, "sub_question_generation")
    candidates: list[str] = []
    listing = None
    if len(documents) > MAX_LISTED_DOCUMENTS:  # a library: search first, then plan
        hits = await first_search(state, stem, ctx)
        candidates = candidate_documents(hits)
        listing = candidate_listing(hits, stem)
        thinking.say(f"A first search found {len(candidates)} candidate document(s).")
    usage = []
    questions: list[SubQuestion] = []
    # A precise question over a library (options listed, or a question about one finding):
    # the stem is the search, over the library and inside the candidate papers
    # (recall_questions), unless a person asked for another plan: a planner would add a
    # model call, and its sub-questions would search for what these searches find.
    precise = asked.options or (
        state.get("detected_intent") == Intent.LITERATURE_QA.value
        and is_precise_question(stem, ctx.precise_question_min_terms))
    if listing is not None and precise and not state.get("plan_feedback"):
        planned_by = "question"
    else:
        system = _planner_system(ctx, state, documents, listing)
        try:
            result = await llm.complete(ctx, [("system", system), ("user", query)],
                                        node="sub_question_generation",
                                        max_tokens=PLANNER_MAX_TOKENS)
            usage.append(result.usage)
            questions = parse_sub_questions(result.text, documents)
        except LLMError as exc:
            logger.info("sub-questions failed, falling back: %s", exc)
        planned_by = "llm" if questions else "fallback"
    if questions:
        thinking.say("Sub-questions: " + "; ".join(q["question"] for q in questions))
    questions, note = recall_questions(questions, stem, documents, state.get("detected_intent"),
                                       candidates=candidates, options=asked)
    if note:
        thinking.say(note)
    node_complete("sub_question_generation", count=len(questions), planned_by=planned_by)
    return {"sub_questions": questions, "usage": usage}


def _planner_system(ctx: Context, state: State, documents: list[DocumentInfo],
                    listing: str | None = None) -> str:
    """The planner's prompt within the prompt budget: the documents (their titles, or
    `listing`, the candidates a first search found), then history, cut to fit."""
    if listing is None:
        listing = "\n".join(f"- id {d['doc_id']}: {cap_tokens(d['title'], TITLE_TOKENS)}"
                            for d in documents[:MAX_LISTED_DOCUMENTS])
    empty = SUB_QUESTION_GENERATION_PROMPT.format(
        max_questions=str(MAX_SUB_QUESTIONS), document_list="", history="")
    room = prompt_budget(ctx) - count_message_tokens([empty, state["question"]])
    review = _feedback_section(state, max(room // 4, 0))
    room -= count_tokens(review)
    listing = cap_tokens(listing, max(room // 2, 0))
    room -= count_tokens(listing)
    return SUB_QUESTION_GENERATION_PROMPT.format(
        max_questions=str(MAX_SUB_QUESTIONS), document_list=listing or "(the whole knowledge base)",
        history=history_text(state, "planning", room),
    ) + review


def _feedback_section(state: State, room: int) -> str:
    """The person's comments on the last plan, with that plan's questions, within `room`
    tokens (review_plan); "" when there are none. sub_questions still holds that plan."""
    feedback = state.get("plan_feedback") or []
    if not feedback:
        return ""
    share = (room - count_tokens(PLAN_FEEDBACK_PROMPT.format(previous_questions="",
                                                             feedback=""))) // 2
    previous = "\n".join(f"- {q['question']}" for q in state.get("sub_questions") or [])
    return PLAN_FEEDBACK_PROMPT.format(  # cut, the latest comment is the one kept
        previous_questions=cap_tokens(previous, share) or "(none)",
        feedback=cap_tokens("\n".join(f"- {f}" for f in feedback), share, keep_end=True))


def recall_questions(
    planned: list[SubQuestion], query: str, documents: list[DocumentInfo], intent: str | None,
    *, candidates: Sequence[str] = (), options: Options | None = None,
) -> tuple[list[SubQuestion], str | None]:
    """What recall searches: the planner's sub-questions, then what they leave out,
    with a note of what was added for the thinking stream (None when nothing was).

    Several documents: each one no sub-question aims at gets the question
    itself aimed at it (an untargeted question lets one document's chunks
    crowd out the others'). One document and nothing planned: a summary
    searches the probes `key_chunks_text` uses for a paper's key parts (its
    question, "summarize this paper", finds little); anything else searches
    the question itself. A library (more than MAX_LISTED_DOCUMENTS): the question
    over all of it, and inside each of its AIMED_CANDIDATES best `candidates` (a first
    search's documents, best first) with its `options` too: inside one paper they
    cannot drown the question, and the passage naming the right one is the answer's;
    then what was planned.
    """
    if len(documents) > MAX_LISTED_DOCUMENTS:
        known = {d["doc_id"] for d in documents}
        skip = insufficient_option(options) if options else None  # no candidate answer
        listed = [o for o in (options.options if options else ()) if not skip or o != skip[1]]
        inside = " ".join([query, *listed])
        own = [SubQuestion(question=query, translation=None, doc_id=None)] + [
            SubQuestion(question=inside, translation=None, doc_id=d)
            for d in candidates[:AIMED_CANDIDATES] if d in known]
        seen = {(q["question"].casefold(), q["doc_id"]) for q in own}
        extra = [q for q in planned if (q["question"].casefold(), q["doc_id"]) not in seen]
        return [*own, *extra], ("Searching with the question itself, over everything and "
                                f"inside the {len(own) - 1} best candidate document(s).")
    if 1 < len(documents) <= MAX_LISTED_DOCUMENTS:
        aimed = {q["doc_id"] for q in planned}
        added = [SubQuestion(question=query, translation=None, doc_id=d["doc_id"])
                 for d in documents if d["doc_id"] not in aimed]
        note = (f"Searching {len(added)} document(s) no sub-question covers with the "
                "question itself.")
        return [*planned, *added], note if added else None
    if planned:
        return list(planned), None
    if len(documents) == 1 and intent in SUMMARY_INTENTS:
        return ([SubQuestion(question=probe, translation=None, doc_id=documents[0]["doc_id"])
                 for probe in KEY_CHUNK_QUERIES],
                "Searching for the document's key parts: " + "; ".join(KEY_CHUNK_QUERIES))
    return ([SubQuestion(question=query, translation=None, doc_id=None)],
            "Searching with the question itself.")


def build_plan(questions: list[SubQuestion]) -> list[RecallStep]:
    """One recall step per sub-question (plan_review rebuilds an edited plan with it too)."""
    return [
        RecallStep(step=i, kind="recall", doc_id=q["doc_id"],
                   queries=[q["question"], *([q["translation"]] if q["translation"] else [])])
        for i, q in enumerate(questions, 1)
    ]


async def plan_generation(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    plan = build_plan(state.get("sub_questions") or [])
    node_complete("plan_generation", steps=len(plan))
    return {"plan": plan}


class ExecutionInput(TypedDict):
    """What execution reads from the parent: the plan and where to search."""

    plan: Annotated[list[RecallStep], Field(description="The recall steps to run.")]
    knowledge_base: NotRequired[Annotated[str | None, Field(
        description="The run's knowledge base (kb).")]]
    selected_doc_ids: NotRequired[Annotated[list[str], Field(
        description="The run's doc_ids; empty with a knowledge base: all of it.")]]
    documents: Annotated[list[DocumentInfo], Field(
        description="The run's documents, without their text.")]
    document_texts: NotRequired[Annotated[dict[str, str], Field(
        description="Texts in hand, {doc_id: text}: which documents were given directly.")]]


class ExecutionOutput(TypedDict):
    """What execution gives back to the parent."""

    # Not in ExecutionInput, so they start empty and the parent receives only what is new.
    # (A reducer must be the field's last annotation: LangGraph reads only that one.)
    recalled: Annotated[list[RecalledChunkState], Field(
        description="Chunks the recall steps found."), operator.add]
    completed_steps: Annotated[list[int], Field(
        description="Recall steps that finished."), operator.add]


class StepFailure(TypedDict):
    """A recall step that failed."""

    step: Annotated[int, Field(description="The step's number in the plan.")]
    message: Annotated[str, Field(description="Why it failed, for the person.")]
    permanent: Annotated[bool, Field(
        description="Retrying cannot help: the step is not sent again.")]


class ExecutionState(ExecutionInput, ExecutionOutput):
    """The subgraph's state: the plan, what it found, and its rounds."""

    execution_rounds: Annotated[int, Field(description="Rounds run so far.")]
    failures: Annotated[list[StepFailure], Field(
        description="Recall steps that failed, one entry per failure."), operator.add]


def dispatch_steps(state: ExecutionState) -> list[Send] | str:
    """The consecutive recall steps not done yet, each its own Send; else finish."""
    done = set(state.get("completed_steps") or [])
    done |= {f["step"] for f in state.get("failures") or [] if f["permanent"]}
    plan = state.get("plan") or []
    if state.get("execution_rounds", 0) > 2 * len(plan):  # docs/architecture.md#recall
        return "finish_execution"
    pending = [s for s in plan if s["step"] not in done]
    batch = []
    for step in pending:  # a run of consecutive recall steps goes out together
        if step["kind"] != "recall":
            break
        batch.append(step)
    if not batch:
        return "finish_execution"
    kb, doc_ids, direct = recall_scope(state.get("knowledge_base"),
                                       state.get("selected_doc_ids") or [],
                                       state.get("documents") or [],
                                       state.get("document_texts") or {})
    return [Send("recall_step", RecallStepTask(step=s, kb=kb, doc_ids=doc_ids,
                                               direct_doc_ids=direct))
            for s in batch]


async def recall_step(task: RecallStepTask, runtime: Runtime[Context]) -> dict[str, Any]:
    ctx = get_context(runtime)
    step = task["step"]
    params = recall_params(ctx, step["queries"])
    hits: list[RecalledChunk] = []
    for kb, doc_ids in _searches(task):
        retriever = await retriever_for(kb, step["doc_id"], ctx)
        for query in step["queries"]:  # a chunk in the other language is found by the translation
            hits += await retriever.search(query, doc_ids=doc_ids, params=params)
    found = best_per_chunk(hits, params.top_n)
    node_complete("recall_step", step=step["step"], chunks=len(found))
    return {
        "recalled": [RecalledChunkState(step=step["step"], doc_id=c.doc_id,
                                        chunk_id=c.chunk_id, score=c.score, text=c.text,
                                        title=c.title, location=c.location, page=c.page,
                                        heading=c.heading) for c in found],
        "completed_steps": [step["step"]],
    }


def _searches(task: RecallStepTask) -> list[tuple[str, list[str] | None]]:
    """(knowledge base, its documents or None for all) a step searches; merged by score."""
    direct = task.get("direct_doc_ids") or []
    if doc_id := task["step"]["doc_id"]:  # aimed at one document: where that one is
        return [(task["kb"] if task["kb"] and doc_id not in direct else DIRECT_KB, [doc_id])]
    searches: list[tuple[str, list[str] | None]] = []
    if task["kb"]:
        searches.append((task["kb"], task["doc_ids"] or None))
    if direct:
        searches.append((DIRECT_KB, direct))
    return searches


async def recall_step_failed(
    task: RecallStepTask, error: NodeError
) -> Command[Literal["next_round"]]:
    """Record why a step failed; unless that is permanent, the next round tries it again."""
    failure = StepFailure(step=task["step"]["step"],
                          message=user_message("recall_step", error.error),
                          permanent=isinstance(error.error, PERMANENT_ERRORS))
    logger.warning("recall step %s failed: %s", failure["step"], failure["message"])  # scrubbed
    # A handler has no edges of its own: without the goto, a round where every step
    # failed would end the subgraph there, never reaching finish_execution.
    return Command(update={"failures": [failure]}, goto="next_round")


async def next_round(state: ExecutionState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Count a round of recall steps, so a failing step cannot loop forever."""
    return {"execution_rounds": state.get("execution_rounds", 0) + 1}


async def finish_execution(state: ExecutionState, runtime: Runtime[Context]) -> dict[str, Any]:
    ctx = get_context(runtime)
    plan = state.get("plan") or []
    done = set(state.get("completed_steps") or [])
    recalled = state.get("recalled") or []
    failed = [s["step"] for s in plan if s["step"] not in done]
    Thinking(ctx.show_thinking, "execution").say(
        f"Recalled {len(recalled)} passages in {len(done)} of {len(plan)} steps"
        + (f"; steps {failed} failed." if failed else ".")
    )
    failures = sorted(state.get("failures") or [], key=lambda f: f["step"])
    if failed and failures and not recalled:
        # Not "found nothing": some searches did not run, and the person should learn why.
        what = ("recall failed" if not done else
                f"recall found nothing in {len(done)} step(s) and {len(failed)} failed")
        raise RecallFailedError(f"{what}: {failures[0]['message']}")
    node_complete("execution", steps=len(plan), failed=len(failed), chunks=len(recalled))
    return {}
