"""The execution subgraph of the chunk_recall branch."""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from scholarflow.context import Context
from scholarflow.nodes.recall import recall_step
from scholarflow.state import State


def build_execution_graph() -> CompiledStateGraph[State, Context, State, State]:
    builder = StateGraph(State, context_schema=Context)
    builder.add_node("recall_step", recall_step)
    builder.add_edge(START, "recall_step")
    builder.add_edge("recall_step", END)
    return builder.compile(name="execution")
