"""scholarflow: answers questions about your academic papers, as a LangGraph workflow."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scholarflow.context import Context

if TYPE_CHECKING:
    from scholarflow.graph.main import build_graph

__all__ = ["Context", "build_graph"]


def __getattr__(name: str) -> Any:
    # The graph pulls in langchain-openai; commands that don't run it start faster.
    if name == "build_graph":
        from scholarflow.graph.main import build_graph

        return build_graph
    raise AttributeError(f"module 'scholarflow' has no attribute {name!r}")
