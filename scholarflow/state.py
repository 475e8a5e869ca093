"""The graph's typed state.

`InputState` is what a caller sends, `OutputState` what it gets back, and
`State` everything the nodes share. Fields that several parallel tasks write
have reducers; every other field is last-write-wins. Send targets get their own
small states (`DocSummaryTask`).
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, Literal, NotRequired

from pydantic import Field

# typing_extensions' TypedDict: on Python < 3.12 pydantic cannot build a JSON schema from
# typing.TypedDict, and LangGraph server (Studio) then shows no input or output schema.
from typing_extensions import TypedDict

Strategy = Literal["full_content", "multi_doc_summary", "chunk_recall"]
DecidedBy = Literal["override", "rules", "llm", "fallback"]
HistoryRole = Literal["USER", "ASSISTANT", "COMPRESSION"]


def _doc(text: str) -> Any:
    """A field description for the JSON schema (LangGraph Studio's input form, API docs)."""
    return Field(description=text)


class DocumentInfo(TypedDict):
    """A document of the request; its text stays in `document_contents`."""

    doc_id: str
    title: str
    tokens: int
    content_hash: str


class HistoryMessage(TypedDict):
    type: HistoryRole
    content: str


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


class InputState(TypedDict):
    """What a caller sends. Only `query` is required."""

    query: Annotated[str, _doc("The question or request.")]
    session_id: NotRequired[Annotated[
        str | None, _doc("Continue this session; empty starts a new one.")]]
    kb: NotRequired[Annotated[str | None, _doc(
        "Knowledge base to read documents from; without doc_ids, all of its documents.")]]
    doc_ids: NotRequired[Annotated[list[str], _doc(
        "Documents of the knowledge base (kb, else 'default') the question is about.")]]
    content: NotRequired[Annotated[str | None, _doc("One document's text, given directly.")]]
    document_contents: NotRequired[Annotated[
        dict[str, str], _doc("Documents given directly, as {doc_id: text}.")]]
    mode_type: NotRequired[Annotated[str | None, _doc(
        "An intent that skips recognition: SIMPLE_INTERACTION, LITERATURE_SUMMARY, "
        "REVIEW_GENERATION, PAPER_REVIEW or LITERATURE_QA.")]]
    enable_web_search: NotRequired[Annotated[
        bool, _doc("Chat may search the web (Tavily or Bocha).")]]


class OutputState(TypedDict):
    """What a caller gets back."""

    answer: Annotated[str, _doc("The answer.")]
    session_id: Annotated[str, _doc("The session the question and answer were saved in.")]
    detected_intent: Annotated[str | None, _doc("The intent the question was handled as.")]
    intent_confidence: Annotated[float, _doc("Confidence of that intent, 0 to 1.")]
    intent_decided_by: Annotated[
        DecidedBy | None, _doc("Who decided: override (mode_type), rules, llm or fallback.")]
    strategy: Annotated[Strategy | None, _doc("How the documents were read; null for chat.")]
    sources: Annotated[list[Source], _doc("Recalled chunks the answer cites as [n].")]
    web_sources: Annotated[
        list[WebSource], _doc("Web search results a chat answer was given, and which it cited.")]
    error: Annotated[str | None, _doc("Why the run ended without an answer, if it did.")]
    usage: Annotated[list[LLMUsage], _doc("Every LLM call: node, model, tokens, seconds.")]


class State(InputState):
    """Everything the nodes share."""

    # request_init
    documents: list[DocumentInfo]
    history: list[HistoryMessage]
    session_tokens: int
    query_tokens: int
    available_tokens: int
    use_direct_content: bool
    # intent_recognition / strategy_selection
    detected_intent: str | None
    intent_confidence: float
    intent_decided_by: DecidedBy | None
    intent_reason: str
    strategy: Strategy | None
    # document_summary
    document_summaries: Annotated[dict[str, DocSummary], merge_summaries]
    # chunk_recall
    sub_questions: list[SubQuestion]
    plan: list[RecallStep]
    recalled: Annotated[list[RecalledChunkState], operator.add]
    completed_steps: Annotated[list[int], operator.add]
    execution_rounds: int
    # answer
    answer: str
    sources: list[Source]
    web_sources: list[WebSource]  # simple_interaction with web search
    error: str | None
    usage: Annotated[list[LLMUsage], operator.add]


class DocSummaryTask(TypedDict):
    """The state of one Send to summarize_document: one document, nothing else."""

    doc_id: str
    title: str
    content: str
    content_hash: str
    tokens: int
    kb: str | None  # where a large document's chunks are recalled from (None: given directly)
