"""Every node's exceptions leave it scrubbed, so what LangGraph stores holds no secret.

LangGraph keeps a failed task's exception in the checkpoint's writes as
`repr(exception)`, and logs it when it retries. `guarded(name, fn)` re-raises
whatever the node raised as the same typed class (RetryableLLMError,
RateLimitedLLMError with its retry_after, FatalLLMError, InputError...: retry
policies and error handlers still match) with one scrubbed line, and without
its cause or context, which may quote a URL's password or a key. Any other
exception becomes an InternalError naming the node. LangGraph's control flow
(interrupts, commands to a parent graph, cancellation) passes untouched.

The wrapper keeps the node's signature (functools.wraps): LangGraph reads it
to decide whether to pass `runtime`, and the first parameter's annotation
for the node's input.
"""

from __future__ import annotations

import copy
import functools
import inspect
import logging
from collections.abc import Callable
from typing import Any, TypeVar

from langgraph.errors import GraphBubbleUp

from scholarflow.errors import InternalError, ScholarflowError
from scholarflow.scrub import one_line, remember, scrub_secrets, scrubbed_traceback

logger = logging.getLogger(__name__)

F = TypeVar("F", bound=Callable[..., Any])
_FIRST_LINE_LIMIT = 300


def guarded(name: str, fn: F) -> F:
    """`fn` (a node of graph node `name`), re-raising its exceptions scrubbed."""
    if inspect.iscoroutinefunction(fn):
        @functools.wraps(fn)
        async def async_node(*args: Any, **kwargs: Any) -> Any:
            try:
                return await fn(*args, **kwargs)
            except GraphBubbleUp:
                raise
            except Exception as exc:
                failure = scrubbed(name, exc, kwargs.get("runtime"))
            # Raised outside the except block: the new exception gets no __context__.
            raise failure from None

        return async_node  # type: ignore[return-value]  # same signature, via wraps

    @functools.wraps(fn)
    def sync_node(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except GraphBubbleUp:
            raise
        except Exception as exc:
            failure = scrubbed(name, exc, kwargs.get("runtime"))
        raise failure from None

    return sync_node  # type: ignore[return-value]


def scrubbed(node: str, exc: Exception, runtime: Any = None) -> Exception:
    """`exc` as one scrubbed line of the same type (InternalError for a foreign type),
    with no cause, context, notes or traceback that could carry a secret."""
    keys = _context_keys(runtime)
    remember(*keys)  # the log filter and the CLI's error line scrub them too
    if logger.isEnabledFor(logging.DEBUG):  # the original traceback, for SCHOLARFLOW_DEBUG=1
        logger.debug("node %s failed:\n%s", node, scrubbed_traceback(exc))
    if isinstance(exc, ScholarflowError):
        failure: Exception = _retyped(exc, one_line(str(exc) or type(exc).__name__))
    else:
        first = (str(exc).strip().splitlines() or [""])[0]
        failure = InternalError(
            f"internal error in {node}: {type(exc).__name__}: "
            f"{one_line(first, limit=_FIRST_LINE_LIMIT)}; set SCHOLARFLOW_DEBUG=1 for the "
            "traceback and report it")
    failure.__cause__ = failure.__context__ = None
    failure.__suppress_context__ = True
    failure.__traceback__ = None
    if hasattr(failure, "__notes__"):
        del failure.__notes__
    return failure


def _retyped(exc: ScholarflowError, message: str) -> Exception:
    """A copy of `exc` (same class and attributes, e.g. retry_after) saying `message`."""
    try:
        clone = copy.copy(exc)
    except Exception:  # a constructor copy cannot call: build it without one
        clone = type(exc).__new__(type(exc))
        clone.__dict__.update(vars(exc))
    for attr, value in list(vars(clone).items()):  # attributes may quote a URL too
        if isinstance(value, str):
            setattr(clone, attr, scrub_secrets(value))
    clone.args = (message,)
    return clone


def _context_keys(runtime: Any) -> tuple[str | None, ...]:
    """The API keys of the run's context, when the node was given its runtime."""
    if runtime is None:
        try:
            from langgraph.runtime import get_runtime

            runtime = get_runtime()
        except Exception:  # outside a run: the environment's keys are scrubbed anyway
            return ()
    ctx = getattr(runtime, "context", None)
    if isinstance(ctx, dict):
        return ctx.get("openai_api_key"), ctx.get("search_engine_api_key")
    return getattr(ctx, "openai_api_key", None), getattr(ctx, "search_engine_api_key", None)
