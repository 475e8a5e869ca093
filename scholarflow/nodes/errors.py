"""Failures: a node that fails reports it, and the run still goes to session_save, which
ends it in error (graph/main.py). The question is in the thread by then (request_init).
"""

from __future__ import annotations

import logging
from typing import Any, Literal

from langgraph.errors import NodeError, NodeTimeoutError
from langgraph.types import Command

from scholarflow import errors
from scholarflow.errors import ConfigurationError, InputError, ScholarflowError
from scholarflow.events import emit
from scholarflow.scrub import scrub_secrets
from scholarflow.state import Failure, State, fresh_run

logger = logging.getLogger(__name__)


def user_message(node: str, exc: BaseException) -> str:
    """One line a person can act on. It goes into the run's state, events and checkpoint,
    so every secret (a URL's password, a key) is scrubbed, though the node guard
    (nodes/guard.py) scrubbed the exception already."""
    return scrub_secrets(" ".join(_message(node, exc).split()))


def _message(node: str, exc: BaseException) -> str:
    if isinstance(exc, ScholarflowError):
        return str(exc)
    if isinstance(exc, NodeTimeoutError):
        return f"{node} took too long and was stopped; try again, or raise the LLM timeout"
    first = (str(exc).strip().splitlines() or [""])[0][:300]
    return (f"internal error in {node}: {type(exc).__name__}: {first}; set "
            "SCHOLARFLOW_DEBUG=1 for the traceback and report it")


def error_kind(exc: BaseException) -> Literal["input", "config", "run"]:
    """For the CLI's exit code: a bad request or setting (2), or a run that failed (1)."""
    if isinstance(exc, InputError):
        return "input"
    return "config" if isinstance(exc, ConfigurationError) else "run"


def failure_update(node: str, exc: BaseException) -> dict[str, Any]:
    """Report `node`'s failure (node_error) and the state update that carries it to
    session_save: the message, and the typed error's class to raise there."""
    return reported_failure(node, failure_of(node, exc))


def failure_of(node: str, exc: BaseException) -> Failure:
    """`node`'s failure as state can hold it, to be reported later."""
    kind = type(exc).__name__ if isinstance(exc, ScholarflowError) else "InternalError"
    return Failure(error=user_message(node, exc), error_kind=kind, kind=error_kind(exc))


def reported_failure(node: str, failure: Failure) -> dict[str, Any]:
    """Report `failure` as `node`'s (node_error): the update failure_update gives."""
    emit("node_error", node=node, error=failure["error"], kind=failure["kind"])
    return {"error": failure["error"], "error_kind": failure["error_kind"], "answer": ""}


def run_error(state: State) -> ScholarflowError:
    """The typed error a failed run ends with: the class its failing node raised."""
    message = state.get("error") or "the run failed"
    return _error_class(state.get("error_kind") or "")(message)


def _error_class(name: str) -> type[ScholarflowError]:
    pending: list[type[ScholarflowError]] = [ScholarflowError]
    while pending:
        cls = pending.pop()
        if cls.__name__ == name and _constructible(cls):
            return cls
        pending += cls.__subclasses__()
    return errors.InternalError


def _constructible(cls: type[ScholarflowError]) -> bool:
    """Whether `cls(message)` works: not for a class whose constructor needs more."""
    try:
        cls("probe")
    except TypeError:
        return False
    return True


async def handle_node_error(state: State, error: NodeError) -> Command[Literal["session_save"]]:
    logger.debug("node %s failed: %s", error.node, user_message(error.node, error.error))
    update = failure_update(error.node, error.error)
    if error.node == "request_init":
        # Refused before it set the run up: none of the last run's results may stay.
        update = {**fresh_run(), **update}
    target: Literal["session_save"] = "session_save"
    return Command(update=update, goto=target)
