"""The graph's default error handler: report the failure, then still save the turn."""

from __future__ import annotations

import logging
from typing import Literal

from langgraph.errors import NodeError, NodeTimeoutError
from langgraph.types import Command

from scholarflow.errors import ConfigurationError, InputError, ScholarflowError
from scholarflow.events import emit
from scholarflow.nodes.request import fresh_run, request_inputs_cleared
from scholarflow.scrub import scrub_secrets
from scholarflow.state import State

logger = logging.getLogger(__name__)


def user_message(node: str, exc: BaseException) -> str:
    """One line a person can act on. It goes into the run's state, events and checkpoint,
    so every secret (a URL's password, a key) is scrubbed, though the node guard
    (graph/guard.py) scrubbed the exception already."""
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


async def handle_node_error(
    state: State, error: NodeError
) -> Command[Literal["session_save", "__end__"]]:
    message = user_message(error.node, error.error)
    # The guard logged the node's own traceback (scrubbed); this one would end in it.
    logger.debug("node %s failed: %s", error.node, message)
    kind = error_kind(error.error)
    emit("node_error", node=error.node, error=message, kind=kind)
    if error.node == "session_save":
        emit("error", message=message, session_id=state.get("session_id"), kind=kind)
        end: Literal["__end__"] = "__end__"  # END, typed for the router's Literal
        return Command(update={"error": message, **request_inputs_cleared()}, goto=end)
    # A run that failed in request_init never reset what the thread's last run left.
    reset = fresh_run() if error.node == "request_init" else {}
    target: Literal["session_save"] = "session_save"
    return Command(update={**reset, "error": message, "answer": ""}, goto=target)
