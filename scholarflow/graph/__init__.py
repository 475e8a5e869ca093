"""The scholarflow graph. `graph` has no checkpointer: LangGraph server brings its own."""

from scholarflow.context import ServedContext
from scholarflow.graph.main import ScholarflowGraph, build_graph

graph = build_graph(context_schema=ServedContext)

__all__ = ["ScholarflowGraph", "build_graph", "graph"]
