"""Checks of what Studio shows, shared by tests/unit/test_studio.py (in process) and
tests/integration/test_langgraph_server.py (through `langgraph dev`): drawings and JSON schemas."""

from __future__ import annotations

import inspect
import re
import sys
from collections.abc import Iterable, Iterator
from typing import Any

from scholarflow.context import SERVER_FIELDS

SECRET_NAME = re.compile(r"api_key|secret|password|credential", re.I)
SUMMARY_NODES = frozenset({"load_cached_summaries", "summarize_document", "collect_summaries"})
EXECUTION_NODES = frozenset({"next_round", "recall_step", "finish_execution"})
OPTION_NODES = frozenset({"read_excerpt", "read_passages", "name_option", "read_pressed"})
# What xray draws in place of the three subgraph nodes.
EXPANDED_NODES = frozenset({f"document_summary:{n}" for n in SUMMARY_NODES}
                           | {f"execution:{n}" for n in EXECUTION_NODES}
                           | {f"option_reading:{n}" for n in OPTION_NODES})


def drawing_faults(nodes: Iterable[str], edges: Iterable[tuple[str, str]]) -> list[str]:
    """Error-handler nodes drawn, and nodes without an edge (Studio's stray boxes)."""
    nodes = set(nodes)
    linked = {end for edge in edges for end in edge}
    return sorted({n for n in nodes if "error_handler__" in n} | (nodes - linked))


def owned_classes() -> set[str]:
    """Names of the classes scholarflow defines: their $defs must be described too
    (langchain_core's message classes are not ours to describe)."""
    return {name for module_name, module in list(sys.modules.items())
            if module_name.split(".")[0] == "scholarflow"
            for name, obj in inspect.getmembers(module, inspect.isclass)
            if obj.__module__ == module_name}


def undescribed(schema: Any, where: str, owned: set[str]) -> Iterator[str]:
    """Every property without a description, recursively, in `schema` and its owned $defs."""
    if isinstance(schema, list):
        for item in schema:
            yield from undescribed(item, where, owned)
        return
    if not isinstance(schema, dict):
        return
    for name, prop in (schema.get("properties") or {}).items():
        if isinstance(prop, dict) and not prop.get("description"):
            yield f"{where}.{name}"
        yield from undescribed(prop, f"{where}.{name}", owned)
    for name, sub in (schema.get("$defs") or {}).items():
        if name in owned:
            yield from undescribed(sub, f"{where}#{name}", owned)
    for key in ("items", "additionalProperties", "anyOf", "allOf", "oneOf"):
        yield from undescribed(schema.get(key), where, owned)


def secret_names(schema: Any) -> list[str]:
    """Property names, anywhere in `schema`, that are a server setting or look secret."""
    names = set(_property_names(schema))
    return sorted(n for n in names if n in SERVER_FIELDS or SECRET_NAME.search(n))


def _property_names(schema: Any) -> Iterator[str]:
    if isinstance(schema, list):
        for item in schema:
            yield from _property_names(item)
    elif isinstance(schema, dict):
        for key, value in schema.items():
            if key == "properties" and isinstance(value, dict):
                yield from value
            yield from _property_names(value)
