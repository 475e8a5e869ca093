"""The top graph (docs/architecture.md#graph): edges and routing only; the work is in `nodes/`."""

from __future__ import annotations

from typing import Any, cast

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from scholarflow.context import Context
from scholarflow.graph.handlers import on_error
from scholarflow.graph.options import build_option_graph
from scholarflow.graph.recall import build_execution_graph
from scholarflow.graph.summary import build_summary_graph
from scholarflow.graph.validated import validated
from scholarflow.llm.calls import LLM_RETRY
from scholarflow.nodes.answer import answer_generation
from scholarflow.nodes.answer_passages import evidence_selection, route_after_evidence
from scholarflow.nodes.chat import simple_interaction
from scholarflow.nodes.cost_check import cost_check
from scholarflow.nodes.errors import handle_node_error
from scholarflow.nodes.guard import guarded
from scholarflow.nodes.intent import (
    intent_recognition,
    route_after_intent,
    route_after_strategy,
    strategy_selection,
)
from scholarflow.nodes.plan_review import plan_review, route_after_plan
from scholarflow.nodes.recall import plan_generation, sub_question_generation
from scholarflow.nodes.reports import partial_report, partial_report_failed, route_after_answer
from scholarflow.nodes.request import (
    document_check,
    request_init,
    route_after_document_check,
    route_after_request,
)
from scholarflow.nodes.session_save import session_save
from scholarflow.state import InputState, OutputState, ReportTask, State

ScholarflowGraph = CompiledStateGraph[State, Context, InputState, OutputState]


def build_graph(
    checkpointer: BaseCheckpointSaver[str] | None = None,
    *,
    context_schema: type[Any] = Context,
) -> ScholarflowGraph:
    """The compiled scholarflow graph; pass a checkpointer to persist runs.

    `context_schema=ServedContext` leaves the API keys out of the schema, for
    LangGraph server (see scholarflow.context).
    """
    builder = StateGraph(
        State, context_schema=context_schema, input_schema=InputState, output_schema=OutputState
    )
    # Every node is guarded: what it raises is stored (repr) and logged by LangGraph,
    # so it leaves the node as one scrubbed line of the same type (nodes/guard.py).
    # A failing node reports node_error and goes on to session_save, which ends the run
    # in that error; session_save itself has no handler, so its own failure is the run's.
    handled = on_error(handle_node_error)

    builder.add_node("request_init", guarded("request_init", request_init), **handled)
    builder.add_node("document_check", guarded("document_check", document_check), **handled)
    builder.add_node("intent_recognition", guarded("intent_recognition", intent_recognition),
                     **handled)
    builder.add_node("strategy_selection", guarded("strategy_selection", strategy_selection),
                     **handled)
    # multi_doc_summary: the estimate first; past the context's limits, a person approves.
    builder.add_node("cost_check", guarded("cost_check", cost_check), **handled)
    builder.add_node("document_summary", build_summary_graph(context_schema), **handled)
    builder.add_node("sub_question_generation",
                     guarded("sub_question_generation", sub_question_generation),
                     retry_policy=LLM_RETRY, **handled)
    builder.add_node("plan_generation", guarded("plan_generation", plan_generation), **handled)
    # Returns Command(goto=execution | sub_question_generation): its annotation draws both.
    builder.add_node("plan_review", guarded("plan_review", plan_review), **handled)
    builder.add_node("execution", build_execution_graph(context_schema), **handled)
    builder.add_node("evidence_selection", guarded("evidence_selection", evidence_selection),
                     **handled)
    builder.add_node("option_reading", build_option_graph(context_schema), **handled)
    builder.add_node("answer_generation", guarded("answer_generation", answer_generation),
                     retry_policy=LLM_RETRY, **handled)
    # One Send per partial report, each with its own retries: a 429 redoes that report only.
    builder.add_node(  # mypy can't match a Send target's input to the node protocols
        "partial_report", cast(Any, guarded("partial_report", partial_report)),
        input_schema=ReportTask, retry_policy=LLM_RETRY, **on_error(partial_report_failed))
    builder.add_node("simple_interaction", guarded("simple_interaction", simple_interaction),
                     retry_policy=LLM_RETRY, **handled)
    builder.add_node("session_save", guarded("session_save", session_save))

    builder.add_edge(START, "request_init")
    builder.add_conditional_edges("request_init", route_after_request)
    builder.add_conditional_edges("document_check", route_after_document_check)
    builder.add_conditional_edges("intent_recognition", route_after_intent)
    builder.add_conditional_edges("strategy_selection", route_after_strategy)
    builder.add_edge("cost_check", "document_summary")
    builder.add_edge("document_summary", "answer_generation")
    builder.add_edge("sub_question_generation", "plan_generation")
    builder.add_conditional_edges("plan_generation", route_after_plan)
    builder.add_edge("execution", "evidence_selection")
    builder.add_conditional_edges("evidence_selection", route_after_evidence)
    builder.add_edge("option_reading", "answer_generation")
    builder.add_conditional_edges("answer_generation", route_after_answer,
                                  ["partial_report", "session_save"])
    builder.add_edge("partial_report", "answer_generation")
    builder.add_edge("simple_interaction", "session_save")
    builder.add_edge("session_save", END)
    return validated(builder.compile(checkpointer=checkpointer, name="scholarflow"))
