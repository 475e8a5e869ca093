"""scholarflow: answers questions about your academic papers, as a LangGraph workflow."""

from scholarflow.context import Context
from scholarflow.graph.main import build_graph

__all__ = ["Context", "build_graph"]
