"""The graph's typed state.

`InputState` is what a caller sends, `OutputState` what it gets back, and
`State` everything the nodes share. Fields that several parallel tasks write
have reducers; every other field is last-write-wins. Send targets get their own
small states (`DocSummaryTask`).
"""

from __future__ import annotations

import operator
from typing import Annotated, Literal, NotRequired, TypedDict

Strategy = Literal["full_content", "multi_doc_summary", "chunk_recall"]
DecidedBy = Literal["override", "rules", "llm", "fallback"]
HistoryRole = Literal["USER", "ASSISTANT", "COMPRESSION"]


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
    location: str


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


class RecallStepTask(TypedDict):
    """The state of one Send to recall_step: the step and where to search."""

    step: RecallStep
    kb: str | None
    doc_ids: list[str]


def merge_summaries(
    left: dict[str, DocSummary] | None, right: dict[str, DocSummary] | None
) -> dict[str, DocSummary]:
    """Parallel summary tasks each add their document's summary."""
    return {**(left or {}), **(right or {})}


class InputState(TypedDict):
    """What a caller sends. Only `query` is required."""

    query: str
    session_id: NotRequired[str | None]
    kb: NotRequired[str | None]
    doc_ids: NotRequired[list[str]]
    content: NotRequired[str | None]
    document_contents: NotRequired[dict[str, str]]
    mode_type: NotRequired[str | None]
    enable_web_search: NotRequired[bool]


class OutputState(TypedDict):
    """What a caller gets back."""

    answer: str
    session_id: str
    detected_intent: str | None
    intent_confidence: float
    intent_decided_by: DecidedBy | None
    strategy: Strategy | None
    sources: list[Source]
    error: str | None
    usage: list[LLMUsage]


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
