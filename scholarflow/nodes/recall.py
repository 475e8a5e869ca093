"""The chunk_recall branch: sub_question_generation -> plan_generation -> execution.

Until knowledge bases exist, sub_question_generation stops the branch at its
first step with a clear message, before any LLM call is spent.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from scholarflow.context import Context, get_context
from scholarflow.errors import NotSupportedError
from scholarflow.state import State
from scholarflow.tools.recall import get_retriever


async def sub_question_generation(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    get_retriever(get_context(runtime), state)
    raise NotSupportedError("sub-question generation over a knowledge base is not built yet")


async def plan_generation(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    raise NotSupportedError("recall planning is not built yet")


async def recall_step(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    raise NotSupportedError("recall execution is not built yet")
