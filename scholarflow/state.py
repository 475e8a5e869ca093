"""The graph's typed state.

`InputState` is what a caller sends, `OutputState` what it gets back, and
`State` everything the nodes share. Fields that several parallel tasks write
have reducers; every other field is last-write-wins. Send targets get their own
small states (`DocSummaryTask`).
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, Literal, NotRequired

from langchain_core.messages import AnyMessage
from langgraph.channels import EphemeralValue
from langgraph.channels.delta import DeltaChannel
from langgraph.graph.message import _messages_delta_reducer
from pydantic import Field

# typing_extensions' TypedDict: on Python < 3.12 pydantic cannot build a JSON schema from
# typing.TypedDict, and LangGraph server (Studio) then shows no input or output schema.
from typing_extensions import TypedDict

Strategy = Literal["full_content", "multi_doc_summary", "chunk_recall"]
DecidedBy = Literal["override", "rules", "llm", "fallback"]


def _doc(text: str) -> Any:
    """A field description for the JSON schema (LangGraph Studio's input form, API docs)."""
    return Field(description=text)


class DocumentInfo(TypedDict):
    """A document of the request; its text stays in `document_contents`."""

    doc_id: str
    title: str
    tokens: int
    content_hash: str


class DocSummary(TypedDict):
    doc_id: str
    title: str
    summary: str
    tokens: int
    cached: bool


class LLMUsage(TypedDict):
    """One LLM call: which node made it and what it cost."""

    node: str
    model: str
    input_tokens: int
    output_tokens: int
    seconds: float


class Source(TypedDict):
    """A recalled chunk an answer cites as [n]."""

    n: int
    doc_id: str
    title: str
    chunk_id: str
    location: str  # page and/or heading, as the answer's prompt showed it
    page: int | None
    heading: str | None


class WebSource(TypedDict):
    """A web search result a chat answer was given, numbered as the prompt showed it."""

    n: int
    title: str
    url: str
    cited: bool


class SubQuestion(TypedDict):
    question: str
    translation: str | None  # the same question in the other language, searched too
    doc_id: str | None  # aimed at one document, or None for all of the request's


class RecallStep(TypedDict):
    step: int
    kind: Literal["recall"]
    queries: list[str]  # the sub-question and its translation; the best score per chunk wins
    doc_id: str | None


class RecalledChunkState(TypedDict):
    """A recalled chunk as it travels in state (RecalledChunk, flattened)."""

    step: int
    doc_id: str
    chunk_id: str
    score: float
    text: str
    title: str
    location: str
    page: NotRequired[int | None]
    heading: NotRequired[str | None]


class RecallStepTask(TypedDict):
    """The state of one Send to recall_step: the step and where to search."""

    step: RecallStep
    kb: str | None  # the knowledge base of the stored documents; None: there are none
    doc_ids: list[str]  # its documents to search; [] with kb: all of it
    direct_doc_ids: NotRequired[list[str]]  # documents given directly (scratch knowledge base)


def merge_summaries(
    left: dict[str, DocSummary] | None, right: dict[str, DocSummary] | None
) -> dict[str, DocSummary]:
    """Parallel summary tasks each add their document's summary."""
    return {**(left or {}), **(right or {})}


class SessionStats(TypedDict):
    """The session (the thread) and its statistics (seed 004)."""

    session_id: str
    title: str  # the first question, on one line
    total_token_count: int  # active messages only: what the session costs in a prompt
    message_count: int  # every message, compressed originals and summaries included
    created_at: float
    updated_at: float


# The conversation. Its reducer is add_messages' batch form, in a DeltaChannel: each
# checkpoint stores only the messages its step wrote, not the whole list again, so a
# long session's checkpoints grow by the turn, not by the session (bench/checkpoint_growth.py).
Messages = Annotated[list[AnyMessage], DeltaChannel(_messages_delta_reducer),
                     _doc("The conversation: the questions (human) and answers (ai), and "
                          "one system message per compression of older turns.")]


def _run_input(kind: type[Any], text: str) -> Any:
    """A field that belongs to one run: the first node sees it, then it is cleared, so a
    later run on the thread never inherits it, whatever became of this one."""
    return (EphemeralValue(kind), _doc(text))


class InputState(TypedDict):
    """What a caller sends: `messages` (a human message, as chat UIs send it) or `query`."""

    messages: NotRequired[Messages]
    query: NotRequired[Annotated[str, *_run_input(
        str, "The question; else the last human message of `messages`.")]]
    session_id: NotRequired[Annotated[str | None, *_run_input(
        str, "The session: the thread's id by default; without a thread, a new one.")]]
    kb: NotRequired[Annotated[str | None, *_run_input(str, (
        "Knowledge base to read documents from; without doc_ids, all of its documents."))]]
    doc_ids: NotRequired[Annotated[list[str], *_run_input(list, (
        "Documents of the knowledge base (kb, else 'default') the question is about."))]]
    content: NotRequired[Annotated[str | None, *_run_input(
        str, "One document's text, given directly.")]]
    document_contents: NotRequired[Annotated[dict[str, str], *_run_input(
        dict, "Documents given directly, as {doc_id: text}.")]]
    mode_type: NotRequired[Annotated[str | None, *_run_input(str, (
        "An intent that skips recognition: SIMPLE_INTERACTION, LITERATURE_SUMMARY, "
        "REVIEW_GENERATION, PAPER_REVIEW or LITERATURE_QA."))]]
    enable_web_search: NotRequired[Annotated[bool, *_run_input(
        bool, "Chat may search the web (Tavily or Bocha).")]]


class OutputState(TypedDict):
    """What a caller gets back."""

    messages: NotRequired[Messages]
    answer: Annotated[str, _doc("The answer.")]
    session: Annotated[SessionStats, _doc("The session (thread) and its statistics.")]
    detected_intent: Annotated[str | None, _doc("The intent the question was handled as.")]
    intent_confidence: Annotated[float, _doc("Confidence of that intent, 0 to 1.")]
    intent_decided_by: Annotated[
        DecidedBy | None, _doc("Who decided: override (mode_type), rules, llm or fallback.")]
    strategy: Annotated[Strategy | None, _doc("How the documents were read; null for chat.")]
    sources: Annotated[list[Source], _doc("Recalled chunks the answer cites as [n].")]
    web_sources: Annotated[
        list[WebSource], _doc("Web search results a chat answer was given, and which it cited.")]
    error: Annotated[str | None, _doc("Why the run ended without an answer, if it did.")]
    # (A reducer must be the field's last annotation: LangGraph reads only that one.)
    usage: Annotated[list[LLMUsage], _doc(
        "Every LLM call of the run: node, model, tokens, seconds."), operator.add]


class State(InputState, OutputState):
    """Everything the nodes share. Every field but `messages` and `session`
    belongs to the current run: request_init sets each one back at the run's start."""

    # request_init: the run's request, kept for the nodes after it
    question: Annotated[str, _doc("The run's question.")]
    question_id: Annotated[str, _doc("The id of the run's question in `messages`.")]
    knowledge_base: Annotated[str | None, _doc("The run's knowledge base (kb).")]
    selected_doc_ids: Annotated[list[str], _doc("The run's doc_ids.")]
    requested_mode: Annotated[str | None, _doc("The run's mode_type.")]
    web_search: Annotated[bool, _doc("The run's enable_web_search.")]
    documents: Annotated[list[DocumentInfo], _doc("The run's documents, without their text.")]
    document_texts: Annotated[dict[str, str], _doc(
        "Texts the run has in hand: documents given directly, or one read whole.")]
    session_tokens: Annotated[int, _doc("Tokens of the session's active messages.")]
    query_tokens: Annotated[int, _doc("Tokens of the question.")]
    available_tokens: Annotated[int, _doc("Tokens left for documents (DESIGN.md's budget).")]
    use_direct_content: Annotated[bool, _doc("One document fits whole in the budget.")]
    # intent_recognition / strategy_selection
    intent_reason: Annotated[str, _doc("Why that intent: the rule or the model's reason.")]
    # document_summary
    document_summaries: Annotated[dict[str, DocSummary], _doc(
        "One condensed summary per document (multi_doc_summary)."), merge_summaries]
    # chunk_recall
    sub_questions: Annotated[list[SubQuestion], _doc("The question split for recall.")]
    plan: Annotated[list[RecallStep], _doc("The recall steps execution runs.")]
    recalled: Annotated[list[RecalledChunkState], _doc("Chunks the recall steps found."),
                        operator.add]
    completed_steps: Annotated[list[int], _doc("Recall steps that finished."), operator.add]
    execution_rounds: Annotated[int, _doc("Rounds the execution subgraph ran.")]
    answer_id: Annotated[str | None, _doc(
        "The id of the answer's streamed message: the AI message in `messages` keeps it.")]
    # a failed run
    error_kind: Annotated[str | None, _doc(
        "What kind of failure `error` is: input, config or run; its typed error's class.")]


class DocSummaryTask(TypedDict):
    """The state of one Send to summarize_document: one document, nothing else."""

    doc_id: str
    title: str
    content: str
    content_hash: str
    tokens: int
    kb: str | None  # where a large document's chunks are recalled from (None: given directly)
