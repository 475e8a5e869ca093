"""The 13 custom stream events (docs/architecture.md#events), sent with LangGraph's stream writer.

Every event is a plain dict with a `type`; consumers read them from
`stream_mode="custom"`. Thinking events are dropped when the run's context
says `show_thinking=False`. Events never carry secrets: they are built from
state and model output only.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from langgraph.config import get_stream_writer

EventType = Literal[
    "thinking_start",
    "thinking_end",
    "thought_chunk",
    "answer_chunk",
    "final_answer",
    "node_complete",
    "node_error",
    "doc_summary_init",
    "doc_summary_start",
    "doc_summary_chunk",
    "doc_summary_complete",
    "doc_summary_error",
    "error",
]
EVENT_TYPES: Final[frozenset[str]] = frozenset(EventType.__args__)  # type: ignore[attr-defined]
THINKING_EVENTS: Final[frozenset[str]] = frozenset(
    {"thinking_start", "thinking_end", "thought_chunk"}
)


def emit(event_type: EventType, **fields: Any) -> None:
    """Send one event on the custom stream (a no-op outside a graph run)."""
    try:
        writer = get_stream_writer()
    except RuntimeError:  # called outside a runnable context, e.g. from `route`
        return
    writer({"type": event_type, **fields})


class Thinking:
    """The thinking block of one run: start, chunks, end, sent only when wanted."""

    def __init__(self, show: bool, node: str) -> None:
        self.show = show
        self.node = node

    def start(self) -> None:
        if self.show:
            emit("thinking_start", node=self.node)

    def say(self, text: str) -> None:
        """A whole thought of the workflow's own (one line)."""
        if self.show:
            emit("thought_chunk", node=self.node, content=text, delta=False)

    def stream(self, text: str) -> None:
        """A piece of the model's own reasoning, as it streams."""
        if self.show:
            emit("thought_chunk", node=self.node, content=text, delta=True)

    def end(self) -> None:
        if self.show:
            emit("thinking_end", node=self.node)


def node_complete(node: str, **fields: Any) -> None:
    emit("node_complete", node=node, **fields)
