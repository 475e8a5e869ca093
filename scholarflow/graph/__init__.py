"""The scholarflow graph. `graph` has no checkpointer: LangGraph server brings its own."""

from scholarflow.graph.main import ScholarflowGraph, build_graph

graph = build_graph()

__all__ = ["ScholarflowGraph", "build_graph", "graph"]
