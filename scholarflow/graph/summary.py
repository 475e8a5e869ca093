"""The document_summary subgraph (strategy multi_doc_summary)."""

from __future__ import annotations

from typing import Any, cast

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from scholarflow.context import Context
from scholarflow.graph.handlers import on_error
from scholarflow.graph.validated import drawn
from scholarflow.llm.calls import LLM_RETRY
from scholarflow.nodes.guard import guarded
from scholarflow.nodes.summary import (
    SummaryInput,
    SummaryOutput,
    SummaryState,
    collect_summaries,
    dispatch_summaries,
    load_cached_summaries,
    summarize_document,
    summary_failed,
)
from scholarflow.state import DocSummaryTask


def build_summary_graph(context_schema: type[Any] = Context) -> CompiledStateGraph[
    SummaryState, Context, SummaryInput, SummaryOutput
]:
    """The subgraph, with the top graph's context schema (Studio shows the subgraph's)."""
    builder = StateGraph(SummaryState, context_schema=context_schema,
                         input_schema=SummaryInput, output_schema=SummaryOutput)
    builder.add_node("load_cached_summaries",
                     guarded("load_cached_summaries", load_cached_summaries))
    builder.add_node(  # mypy can't match a Send target's input to the node protocols
        "summarize_document", cast(Any, guarded("summarize_document", summarize_document)),
        input_schema=DocSummaryTask,
        retry_policy=LLM_RETRY,
        **on_error(summary_failed),
    )
    builder.add_edge(START, "load_cached_summaries")
    builder.add_node("collect_summaries", guarded("collect_summaries", collect_summaries))
    builder.add_conditional_edges(
        "load_cached_summaries", dispatch_summaries, ["summarize_document", "collect_summaries"]
    )
    builder.add_edge("summarize_document", "collect_summaries")
    builder.add_edge("collect_summaries", END)
    return drawn(builder.compile(name="document_summary"))  # so xray expands it in Studio
