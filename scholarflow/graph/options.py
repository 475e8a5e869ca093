"""The option_reading subgraph: a multiple-choice question read in words, a node a call."""

from __future__ import annotations

from typing import Any

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from scholarflow.context import Context
from scholarflow.graph.validated import drawn
from scholarflow.llm.calls import LLM_RETRY
from scholarflow.nodes.guard import guarded
from scholarflow.nodes.option_naming import name_option, route_after_passages
from scholarflow.nodes.option_pressed import read_pressed
from scholarflow.nodes.option_reading import (
    OptionInput,
    OptionOutput,
    OptionState,
    read_excerpt,
    read_passages,
    route_after_excerpt,
)


def build_option_graph(context_schema: type[Any] = Context) -> CompiledStateGraph[
    OptionState, Context, OptionInput, OptionOutput
]:
    builder = StateGraph(OptionState, context_schema=context_schema,
                         input_schema=OptionInput, output_schema=OptionOutput)
    builder.add_node("read_excerpt", guarded("read_excerpt", read_excerpt),
                     retry_policy=LLM_RETRY)
    builder.add_node("read_passages", guarded("read_passages", read_passages),
                     retry_policy=LLM_RETRY)
    builder.add_node("name_option", guarded("name_option", name_option),
                     retry_policy=LLM_RETRY)
    builder.add_node("read_pressed", guarded("read_pressed", read_pressed),
                     retry_policy=LLM_RETRY)
    builder.add_edge(START, "read_excerpt")
    builder.add_conditional_edges("read_excerpt", route_after_excerpt, ["read_passages", END])
    builder.add_conditional_edges("read_passages", route_after_passages,
                                  ["name_option", "read_pressed", END])
    builder.add_edge("name_option", END)
    builder.add_edge("read_pressed", END)
    return drawn(builder.compile(name="option_reading"))  # so xray expands it in Studio
