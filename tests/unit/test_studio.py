"""What LangGraph Studio shows of the served graph: its drawing and its schemas.

In process, no server: Studio's drawing is `aget_graph(xray=True)` (langgraph_api's
/assistants/{id}/graph), its schemas the graph's and each subgraph's input, output
and context JSON schemas (/assistants/{id}/schemas and /subgraphs?recurse=true).
tests/integration/test_langgraph_server.py asks a real `langgraph dev` for the same.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from langchain_core.runnables.graph import Graph
from pydantic import TypeAdapter

from scholarflow.graph import graph
from tests.support.studio_checks import (
    EXPANDED_NODES,
    drawing_faults,
    owned_classes,
    secret_names,
    undescribed,
)


def _pregels() -> list[tuple[str, Any]]:
    return [("", graph), *graph.get_subgraphs(recurse=True)]


def _faults(drawing: Graph) -> list[str]:
    return drawing_faults(drawing.nodes, [(e.source, e.target) for e in drawing.edges])


async def test_xray_draws_every_subgraph_expanded_and_no_loose_node() -> None:
    for name, drawing in (("get_graph", graph.get_graph(xray=True)),
                          ("aget_graph", await graph.aget_graph(xray=True))):
        nodes = set(drawing.nodes)
        assert nodes >= EXPANDED_NODES, f"{name}: {sorted(EXPANDED_NODES - nodes)} not drawn"
        # Expanded: the subgraph's box is replaced by its nodes.
        assert not {"document_summary", "execution", "option_reading"} & nodes, sorted(nodes)
        assert not _faults(drawing), f"{name}: {_faults(drawing)}"
        mermaid = drawing.draw_mermaid()
        for sub in ("document_summary", "execution", "option_reading"):
            assert f"subgraph {sub}" in mermaid, sub


async def test_every_drawing_leaves_the_error_handlers_out() -> None:
    drawing = graph.get_graph()
    assert {"document_summary", "execution", "session_save"} <= set(drawing.nodes)
    assert not _faults(drawing), _faults(drawing)
    assert drawing.draw_mermaid()
    for ns, sub in graph.get_subgraphs(recurse=True):
        assert not _faults(sub.get_graph()), ns
        assert not _faults(await sub.aget_graph()), ns


# --- schemas ------------------------------------------------------------------------------------


def _served_schemas() -> Iterator[tuple[str, Any]]:
    """Every schema Studio is served for the graph and its subgraphs, and the state
    classes behind the state schema (see test_state_schema_has_no_secret_channel)."""
    for ns, pregel in _pregels():
        prefix = ns or "scholarflow"
        yield f"{prefix} input", pregel.get_input_jsonschema()
        yield f"{prefix} output", pregel.get_output_jsonschema()
        yield f"{prefix} context", pregel.get_context_jsonschema()
        # The state, the input and output, and every node's own input (a Send's state).
        for cls in pregel.builder.schemas:
            yield f"{prefix} {cls.__name__}", TypeAdapter(cls).json_schema()


def test_every_field_of_every_schema_has_a_description() -> None:
    assert {ns for ns, _ in _pregels()} == {"", "document_summary", "execution", "option_reading"}
    owned = owned_classes()
    assert {"DocSummaryTask", "RecallStepTask", "SummaryState", "ExecutionState"} <= owned
    missing = [m for name, schema in _served_schemas() for m in undescribed(schema, name, owned)]
    assert not missing, f"fields without a description: {missing}"


def test_no_schema_names_a_secret() -> None:
    found = {name: secret_names(schema) for name, schema in _served_schemas()}
    assert not {name: names for name, names in found.items() if names}


def test_state_schema_has_no_secret_channel() -> None:
    # langgraph_api builds the state schema from the channels' names alone (every field
    # `Any`: its pydantic v1 `__root__` model fails on pydantic 2), so check the names.
    for ns, pregel in _pregels():
        channels = pregel.stream_channels_list
        assert channels, ns
        assert not secret_names({"properties": dict.fromkeys(channels)}), ns
