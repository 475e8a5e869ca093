"""The compiled graph, checking a new request and its context before LangGraph runs it.

LangGraph has no hook for this: the START node keeps the keys that are input
channels and drops the others (langgraph/graph/state.py, `attach_node(START)`),
and nothing enforces a TypedDict's types, not even a pydantic input schema's for
a dict input. Every way to run the graph goes through `stream` or `astream`:
`invoke`/`ainvoke`, `astream_events` and LangGraph server (langgraph_api/stream.py
calls `astream` or `astream_events` on a `copy()`, which keeps this class), and
`stream` runs `astream` (graph/sync.py). So `astream` checks the input first;
`None` and `Command` (resuming a thread) pass.
They also give each run the list its error handlers keep their exceptions in
(graph/handlers.py).

Every compiled graph here, the subgraphs too, is also drawn without its
error-handler nodes (`DrawnGraph`), so Studio's xray view expands the subgraphs.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from contextlib import aclosing
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.graph import Graph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command
from langgraph.typing import ContextT, InputT, OutputT, StateT

from scholarflow.context import Context, as_context
from scholarflow.graph.handlers import with_kept_errors
from scholarflow.graph.sessions import kept_session
from scholarflow.graph.sync import iterate
from scholarflow.request_schema import validate_request_input
from scholarflow.state import InputState, OutputState, State


class DrawnGraph(CompiledStateGraph[StateT, ContextT, InputT, OutputT]):
    """`CompiledStateGraph` drawn without its error-handler nodes.

    LangGraph draws each `error_handler=` as a node without edges (any failing node
    reaches it). A drawing with such loose nodes has no single first and last node,
    and a parent's xray drawing expands a subgraph only when its drawing has both
    (langgraph/pregel/_draw.py); Studio would also show them as stray boxes.
    """

    def get_graph(
        self, config: RunnableConfig | None = None, *, xray: int | bool = False
    ) -> Graph:
        return self._without_handlers(super().get_graph(config, xray=xray))

    async def aget_graph(
        self, config: RunnableConfig | None = None, *, xray: int | bool = False
    ) -> Graph:
        return self._without_handlers(await super().aget_graph(config, xray=xray))

    def _without_handlers(self, drawing: Graph) -> Graph:
        for name, node in self.nodes.items():
            if node.is_error_handler and name in drawing.nodes:
                drawing.remove_node(drawing.nodes[name])
        return drawing


def drawn(
    graph: CompiledStateGraph[StateT, ContextT, InputT, OutputT],
) -> DrawnGraph[StateT, ContextT, InputT, OutputT]:
    """`graph`, drawn without its error handlers (for a subgraph). Like `validated`,
    it takes a subclass that adds methods and no state."""
    graph.__class__ = DrawnGraph
    return cast(DrawnGraph[StateT, ContextT, InputT, OutputT], graph)


class ValidatedGraph(DrawnGraph[State, Context, InputState, OutputState]):
    """`CompiledStateGraph` whose runs start only from a valid request and context."""

    def _checked(self, input: Any, kwargs: dict[str, Any]) -> Any:
        """The input to run; InputError or ConfigurationError for what cannot run."""
        if (context := kwargs.get("context")) is not None:
            as_context(context, self.context_schema or Context)
        if input is None or isinstance(input, Command):
            return input  # resuming the thread's run, or a human-in-the-loop answer
        return validate_request_input(input)

    async def astream(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> AsyncIterator[Any]:
        checked = self._checked(input, kwargs)
        config = with_kept_errors(config)  # graph/handlers.py: a LangGraph bug
        async with kept_session(self, checked, config) as config:  # graph/sessions.py
            inner = cast(AsyncGenerator[Any, None], super().astream(checked, config, **kwargs))
            async with aclosing(inner) as stream:  # closing ours closes LangGraph's run too
                async for chunk in stream:
                    yield chunk

    def stream(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> Iterator[Any]:
        """`astream`'s chunks, run on scholarflow's event loop (graph/sync.py): every node
        is async. LangGraph's `invoke` and Runnable's `batch` come through here."""
        return iterate(lambda: self.astream(input, config, **kwargs))


def validated(graph: CompiledStateGraph[State, Context, InputState, OutputState]
              ) -> ValidatedGraph:
    """`graph`, checking its input. `StateGraph.compile()` builds its own class, so the
    compiled graph takes this subclass, which adds methods and no state."""
    graph.__class__ = ValidatedGraph
    return cast(ValidatedGraph, graph)
