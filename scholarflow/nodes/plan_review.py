"""plan_review: a person approves, edits or comments on the recall plan (`review_plan`).

With `review_plan` in the context, route_after_plan sends the chunk_recall
branch here after plan_generation, and the run pauses in `interrupt()` showing
the plan (`review_request`). The run is resumed with `Command(resume=...)`:

- `True`, `"approve"` or `{"action": "approve"}`: the plan runs as it is;
- `{"action": "edit", "sub_questions": [str, ...]}`: those questions are
  searched instead, one recall step each, with no model call;
- `{"action": "feedback", "feedback": str}`: sub_question_generation plans
  again with the comment, and the new plan pauses here again.

LangGraph runs a resumed node again from its start, so nothing in this node
calls a model: the new plan that feedback asks for is made by
sub_question_generation, a node of its own, and the comments travel there in
`plan_feedback` (reset by request_init's fresh_run, so they belong to one run).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any, Literal

from langgraph.config import get_config

# Public, though kept for langgraph-api's sake: the key of the saver a task runs with.
from langgraph.constants import CONFIG_KEY_CHECKPOINTER
from langgraph.runtime import Runtime
from langgraph.types import Command, interrupt

from scholarflow.context import Context, get_context
from scholarflow.errors import ConfigurationError, InputError
from scholarflow.events import Thinking, node_complete
from scholarflow.nodes.recall import MAX_LISTED_DOCUMENTS, MAX_SUB_QUESTIONS, build_plan
from scholarflow.retrieval.index.tokenize import has_words
from scholarflow.scrub import one_line
from scholarflow.state import State, SubQuestion

NODE = "plan_review"
REVIEW_TYPE = "review_plan"  # the interrupt value's "type": what a client shows and answers
# Each round is one more planner call: three comments on one question, then the person
# approves or writes the questions themselves (an edit needs no model).
MAX_FEEDBACK_ROUNDS = 3
# As many steps as the planner itself can make: its questions plus one per listed document.
MAX_EDITED_QUESTIONS = MAX_SUB_QUESTIONS + MAX_LISTED_DOCUMENTS
MAX_TEXT_CHARS = 2_000  # of one edited question or one comment: a search, not a document
ACCEPTED = ('resume with true, "approve" or {"action": "approve"} to run the plan; '
            '{"action": "edit", "sub_questions": ["...", ...]} to search those questions '
            'instead; or {"action": "feedback", "feedback": "..."} to have it planned again')


@dataclass(frozen=True, slots=True)
class Review:
    """A person's answer to the review, checked."""

    action: Literal["approve", "edit", "feedback"]
    sub_questions: list[str] = field(default_factory=list)
    feedback: str = ""


def route_after_plan(
    state: State, runtime: Runtime[Context]
) -> Literal["plan_review", "execution"]:
    """Review when the context asks for it, and again after feedback in this run: a
    resumed run has the resuming client's context, which may not say review_plan, and
    the person who commented expects to see the new plan."""
    if get_context(runtime).review_plan or state.get("plan_feedback"):
        return "plan_review"
    return "execution"


def feedback_left(state: State) -> int:
    return max(MAX_FEEDBACK_ROUNDS - len(state.get("plan_feedback") or []), 0)


def review_request(state: State) -> dict[str, Any]:
    """The interrupt's value: the question, its sub-questions, the steps, and how to answer."""
    left = feedback_left(state)
    how = ('Resume with {"action": "approve"} (or true) to run this plan; '
           '{"action": "edit", "sub_questions": ["...", ...]} to search your own questions '
           "instead; ")
    how += (f'{{"action": "feedback", "feedback": "..."}} to have it planned again '
            f"({left} of {MAX_FEEDBACK_ROUNDS} rounds left)." if left else
            f"the {MAX_FEEDBACK_ROUNDS} rounds of feedback are used: approve or edit.")
    return {
        "type": REVIEW_TYPE,
        "question": state["question"],
        "sub_questions": [q["question"] for q in state.get("sub_questions") or []],
        "plan": [{"step": s["step"], "queries": list(s["queries"]), "doc_id": s["doc_id"]}
                 for s in state.get("plan") or []],
        "how_to_resume": how,
    }


def _invalid(why: str) -> InputError:
    return InputError(f"invalid plan review answer: {why}; {ACCEPTED}")


def _text(value: object, what: str) -> str:
    """`value` as a non-empty string of at most MAX_TEXT_CHARS, else InputError."""
    if not isinstance(value, str) or not value.strip():
        raise _invalid(f"{what} must be a non-empty string, not {one_line(repr(value), limit=60)}")
    if len(value) > MAX_TEXT_CHARS:
        raise _invalid(f"{what} has {len(value)} characters, more than {MAX_TEXT_CHARS}")
    return value.strip()


def parse_review(value: object, *, feedback_left: int) -> Review:
    """The resume value as a Review; InputError (one line naming the accepted forms) else."""
    if value is True or (isinstance(value, str) and value.strip().lower() == "approve"):
        return Review("approve")
    if not isinstance(value, dict) or value.get("action") not in ("approve", "edit", "feedback"):
        raise _invalid(f"{one_line(repr(value), limit=80)} is none of the accepted forms")
    action = value["action"]
    wanted = {"approve": {"action"}, "edit": {"action", "sub_questions"},
              "feedback": {"action", "feedback"}}[action]
    if set(value) != wanted:  # a misspelt key would otherwise be dropped unnoticed
        raise _invalid(f'{{"action": "{action}"}} takes the keys {sorted(wanted)}, '
                       f"not {one_line(repr(sorted(map(str, value))), limit=80)}")
    if action == "approve":
        return Review("approve")
    if action == "feedback":
        if feedback_left <= 0:
            raise InputError(f"invalid plan review answer: the plan was sent back "
                             f"{MAX_FEEDBACK_ROUNDS} times already, the most one question gets: "
                             'approve it ({"action": "approve"}) or write its questions '
                             '({"action": "edit", "sub_questions": ["...", ...]})')
        return Review("feedback", feedback=_text(value["feedback"], "feedback"))
    questions = value["sub_questions"]
    if not isinstance(questions, list) or not 1 <= len(questions) <= MAX_EDITED_QUESTIONS:
        count = (f"{len(questions)} items" if isinstance(questions, list)
                 else f"a {type(questions).__name__}")
        raise _invalid(f"sub_questions must be a list of 1 to {MAX_EDITED_QUESTIONS} questions, "
                       f"not {count}")
    texts = [_text(q, f"sub_questions[{i}]") for i, q in enumerate(questions)]
    if blank := [i for i, t in enumerate(texts) if not has_words(t)]:
        raise _invalid(f"sub_questions[{blank[0]}] has no words to search for")
    return Review("edit", sub_questions=texts)


def edited_questions(planned: list[SubQuestion], texts: list[str]) -> list[SubQuestion]:
    """The person's questions as sub-questions. One the plan had keeps its translation and
    document (the n-th copy of a text takes the n-th planned one, so a question aimed at
    each document stays so); a new one has neither and searches all of the run's
    documents, since translating or aiming it would take a model call."""
    pool: dict[str, deque[SubQuestion]] = {}
    for q in planned:
        pool.setdefault(q["question"], deque()).append(q)
    return [pool[t].popleft() if pool.get(t) else
            SubQuestion(question=t, translation=None, doc_id=None) for t in texts]


def _check_resumable() -> None:
    """A run without a checkpointer can pause but never resume: say so instead."""
    if get_config().get("configurable", {}).get(CONFIG_KEY_CHECKPOINTER) is None:
        raise ConfigurationError(
            "review_plan needs a checkpointer to pause and resume the run: build the graph "
            "with build_graph(checkpointer=InMemorySaver()) and run it with a thread_id, or "
            "leave review_plan off")


async def plan_review(
    state: State, runtime: Runtime[Context]
) -> Command[Literal["execution", "sub_question_generation"]]:
    _check_resumable()
    left = feedback_left(state)
    # Pauses the run; on resume it returns the person's answer (nothing above calls a model).
    review = parse_review(interrupt(review_request(state)), feedback_left=left)
    thinking = Thinking(get_context(runtime).show_thinking, NODE)
    if review.action == "feedback":
        thinking.say(f"Planning again with the reviewer's comment: {one_line(review.feedback)}")
        node_complete(NODE, action="feedback", feedback_left=left - 1)
        return Command(goto="sub_question_generation", update={
            "plan_feedback": [*(state.get("plan_feedback") or []), review.feedback]})
    if review.action == "approve":
        thinking.say("The reviewer approved the plan.")
        node_complete(NODE, action="approve", steps=len(state.get("plan") or []))
        return Command(goto="execution")
    questions = edited_questions(state.get("sub_questions") or [], review.sub_questions)
    plan = build_plan(questions)
    thinking.say("Searching the reviewer's questions: "
                 + "; ".join(q["question"] for q in questions))
    node_complete(NODE, action="edit", steps=len(plan))
    return Command(goto="execution", update={"sub_questions": questions, "plan": plan})
