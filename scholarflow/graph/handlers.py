"""Error handlers that hold what they handled until the run ends (a LangGraph bug).

LangGraph's PregelRunner (langgraph 1.2.24, langgraph/pregel/_runner.py) records
each exception it routes to a node's `error_handler` by `id()` alone, in
`_handled_exception_ids`, a set that lives as long as the run, and it neither
raises nor stops on a later exception whose id is in that set (the one-task fast
path of `atick`, `_should_stop_others`, `_panic_or_proceed`). It keeps no
reference to the exception itself. A raised exception sits in a reference cycle
(its traceback's frames), so the cyclic GC frees it at a moment of its own, and
CPython then gives its address, which is its id, to a new object. When that
object is a later node's exception, say session_save raising the error of a run
whose node failed, or a GraphInterrupt, LangGraph takes it as handled and drops
it: the run ends as if it had succeeded, one checkpoint further, no next node.
Nothing but allocation timing decides whether it happens, hence a flaky test.

So every error handler is registered through `on_error`, which keeps the
exception it got in a list the run's config carries (`with_kept_errors`, which
ValidatedGraph applies to every run, subgraphs included through the config)
until the run ends: its id cannot be reused while LangGraph remembers it.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.config import get_config
from langgraph.errors import NodeError

# "__": LangGraph copies no such configurable key into checkpoint metadata or traces.
KEPT_ERRORS = "__scholarflow_handled_errors"

Handler = Callable[..., Awaitable[Any]]


def with_kept_errors(config: RunnableConfig | None) -> RunnableConfig:
    """`config` with a new, empty list for the exceptions this run's handlers get."""
    given = config or {}
    # A copy: the caller may run it again, and each run needs a list of its own.
    return {**given, "configurable": {**(given.get("configurable") or {}), KEPT_ERRORS: []}}


def kept_errors() -> list[BaseException] | None:
    """The current run's list; None outside a run that ValidatedGraph started."""
    try:
        kept = get_config().get("configurable", {}).get(KEPT_ERRORS)
    except RuntimeError:  # not in a runnable context
        return None
    return cast(list[BaseException] | None, kept)


def keeping(handler: Handler) -> Handler:
    """`handler`, holding the exception it handles until the run ends.

    functools.wraps keeps the signature LangGraph reads to inject `error: NodeError`.
    """

    @functools.wraps(handler)
    async def kept_handler(*args: Any, **kwargs: Any) -> Any:
        error = kwargs.get("error")
        kept = kept_errors()
        if isinstance(error, NodeError) and kept is not None:
            kept.append(error.error)
        return await handler(*args, **kwargs)

    return kept_handler


def on_error(handler: Handler) -> dict[str, Any]:
    """The `add_node` keyword for `handler`, kept (see above).

    (LangGraph injects NodeError by annotation; its node protocols don't model that.)
    """
    return {"error_handler": cast(Any, keeping(handler))}
