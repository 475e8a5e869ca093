"""The graph's default error handler: report the failure, then still save the turn."""

from __future__ import annotations

import logging
from typing import Literal

from langgraph.errors import NodeError, NodeTimeoutError
from langgraph.types import Command

from scholarflow.errors import ScholarflowError
from scholarflow.events import emit
from scholarflow.nodes.request import fresh_run, request_inputs_cleared
from scholarflow.sessions.services import scrub_env_urls
from scholarflow.state import State

logger = logging.getLogger(__name__)


def user_message(node: str, exc: BaseException) -> str:
    """One line a person can act on. It goes into the run's state, events and checkpoint,
    so any secret of a service URL a library's message quotes is scrubbed."""
    return scrub_env_urls(_message(node, exc))


def _message(node: str, exc: BaseException) -> str:
    if isinstance(exc, ScholarflowError):
        return str(exc)
    if isinstance(exc, NodeTimeoutError):
        return f"{node} took too long and was stopped; try again, or raise the LLM timeout"
    first = (str(exc).strip().splitlines() or [""])[0][:300]
    return f"internal error in {node}: {type(exc).__name__}: {first}"


async def handle_node_error(
    state: State, error: NodeError
) -> Command[Literal["session_save", "__end__"]]:
    message = user_message(error.node, error.error)
    logger.debug("node %s failed", error.node, exc_info=error.error)
    emit("node_error", node=error.node, error=message)
    if error.node == "session_save":
        emit("error", message=message, session_id=state.get("session_id"))
        end: Literal["__end__"] = "__end__"  # END, typed for the router's Literal
        return Command(update={"error": message, **request_inputs_cleared()}, goto=end)
    # A run that failed in request_init never reset what the thread's last run left.
    reset = fresh_run() if error.node == "request_init" else {}
    target: Literal["session_save"] = "session_save"
    return Command(update={**reset, "error": message, "answer": ""}, goto=target)
