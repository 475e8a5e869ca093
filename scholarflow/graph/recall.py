"""The execution subgraph of the chunk_recall branch: recall steps in parallel rounds."""

from __future__ import annotations

from typing import Any, cast

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from scholarflow.context import Context
from scholarflow.graph.handlers import on_error
from scholarflow.graph.validated import drawn
from scholarflow.nodes.guard import guarded
from scholarflow.nodes.recall import (
    ExecutionInput,
    ExecutionOutput,
    ExecutionState,
    dispatch_steps,
    finish_execution,
    next_round,
    recall_step,
    recall_step_failed,
)
from scholarflow.state import RecallStepTask


def build_execution_graph(context_schema: type[Any] = Context) -> CompiledStateGraph[
    ExecutionState, Context, ExecutionInput, ExecutionOutput
]:
    builder = StateGraph(ExecutionState, context_schema=context_schema,
                         input_schema=ExecutionInput, output_schema=ExecutionOutput)
    builder.add_node("next_round", guarded("next_round", next_round))
    builder.add_node(  # mypy can't match a Send target's input to the node protocols
        "recall_step", cast(Any, guarded("recall_step", recall_step)),
        input_schema=RecallStepTask,
        **on_error(recall_step_failed),
    )
    builder.add_node("finish_execution", guarded("finish_execution", finish_execution))
    builder.add_edge(START, "next_round")
    builder.add_conditional_edges("next_round", dispatch_steps, ["recall_step", "finish_execution"])
    builder.add_edge("recall_step", "next_round")
    builder.add_edge("finish_execution", END)
    return drawn(builder.compile(name="execution"))  # so xray expands it in Studio
