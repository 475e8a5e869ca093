"""request_init and document_check: the session, the question, the documents, the budget.

The thread is the session: request_init puts the run's question in the thread's
`messages` (so it stays whatever becomes of the run), and starts every per-run
field over, since a thread keeps its state between runs. The run's inputs are
EphemeralValue channels (state.py): only this node sees them.
"""

from __future__ import annotations

import uuid
from typing import Any, Literal

from langchain_core.messages import HumanMessage
from langgraph.config import get_config
from langgraph.runtime import Runtime

from scholarflow.context import Context, get_context
from scholarflow.errors import InputError, InvalidRequestError
from scholarflow.events import Thinking, node_complete
from scholarflow.ingest.documents import Document, document_from_text, documents_from_mapping
from scholarflow.intents import Intent
from scholarflow.llm.budget import answer_reserve, check_budget, system_reserve, window
from scholarflow.llm.window import probe_window
from scholarflow.nodes.errors import failure_update
from scholarflow.nodes.guard import scrubbed
from scholarflow.request_schema import check_request_values
from scholarflow.retrieval.access import open_kb, run_person
from scholarflow.retrieval.index import DEFAULT_KB
from scholarflow.retrieval.index.tokenize import has_words
from scholarflow.retrieval.kb import DocumentNotFoundError, KnowledgeBaseNotFoundError
from scholarflow.retrieval.owners import missing, readable
from scholarflow.sessions.conversation import (
    META,
    active_tokens,
    message_text,
    question_message,
    session_stats,
)
from scholarflow.state import DocumentInfo, State, fresh_run
from scholarflow.tokens import available_tokens, count_tokens


def run_question(state: State) -> tuple[str, HumanMessage]:
    """The run's question and the message that carries it in the thread.

    `query` when the run was given one; else the last of `messages`, if it is a
    human message no run has taken yet (Studio's chat, agent-chat-ui). A human
    message of an earlier run is not asked again: that run had its turn.
    """
    messages = list(state.get("messages") or [])
    last = messages[-1] if messages else None
    fresh = (last if isinstance(last, HumanMessage) and META not in last.additional_kwargs
             else None)
    query = state.get("query")
    if isinstance(query, str) and query.strip():
        same = fresh is not None and message_text(fresh).strip() == query.strip()
        return query.strip(), question_message(
            query.strip(), message_id=fresh.id if same and fresh is not None else None)
    if fresh is None or not message_text(fresh).strip():
        raise InvalidRequestError(
            "invalid request: there is no question; send it as a human message in messages "
            '(e.g. {"messages": [{"type": "human", "content": "summarize this paper"}]}) '
            "or as query")
    text = message_text(fresh).strip()
    return text, question_message(text, message_id=fresh.id)


def thread_session_id(state: State) -> str:
    """The session's id: the thread's. A run without a thread has no checkpointer and
    named no session (graph/sessions.py gives a named one the command line's store): it is
    a session of its own."""
    thread_id = (get_config().get("configurable") or {}).get("thread_id")
    asked = state.get("session_id")
    if thread_id is not None:
        if asked and asked != str(thread_id):
            raise InvalidRequestError(
                f"invalid request: session_id {asked!r} is not this thread ({thread_id!r}): "
                "the thread is the session; run on that thread, or leave session_id out")
        return str(thread_id)
    known = state.get("session")
    return asked or (known["session_id"] if known else str(uuid.uuid4()))


async def run_kb(state: State) -> str | None:
    """The stored name of the knowledge base the request reads (`kb`, else "default" when
    it names stored documents by id), checked against the run's person
    (retrieval/owners.py): one they may not read is missing to them. None when the
    request reads none."""
    ref = state.get("kb")
    if not ref and not _stored_ids(state, _direct_documents(state)):
        return None
    return await readable(run_person(), ref or DEFAULT_KB)


def _direct_documents(state: State) -> dict[str, Document]:
    direct: dict[str, Document] = {}
    if content := state.get("content"):
        doc = document_from_text(content)
        direct[doc.doc_id] = doc
    for doc in documents_from_mapping(state.get("document_contents") or {}):
        direct.setdefault(doc.doc_id, doc)
    return direct


def _stored_ids(state: State, direct: dict[str, Document]) -> list[str]:
    return [d for d in state.get("doc_ids") or [] if d not in direct]


async def gather_documents(
    state: State, *, stored_kb: str | None = None
) -> tuple[list[DocumentInfo], dict[str, str]]:
    """The request's documents and the texts given directly.

    First `content` and `document_contents`; then `doc_ids` from the knowledge
    base (`kb`, else "default"), or every document of `kb` when no id is named.
    Texts of stored documents are read later, only where a strategy needs them.
    `stored_kb`: `run_kb(state)`, when the caller has it already.
    """
    direct = _direct_documents(state)
    infos = [
        DocumentInfo(doc_id=d.doc_id, title=d.title, tokens=count_tokens(d.content),
                     content_hash=d.content_hash)
        for d in direct.values()
    ]
    shown = state.get("kb") or DEFAULT_KB
    wanted = _stored_ids(state, direct)
    if state.get("kb") or wanted:
        kb = await _open_named(shown, stored_kb or await run_kb(state))
        stored = await kb.documents(wanted or None)
        if absent := sorted(set(wanted) - {s.doc_id for s in stored}):
            raise DocumentNotFoundError(
                f"no document {', '.join(absent)} in knowledge base {shown!r}; "
                f"see `scholarflow search QUERY --kb {shown}`"
            )
        infos += [DocumentInfo(doc_id=s.doc_id, title=s.title, tokens=s.tokens,
                               content_hash=s.content_hash)
                  for s in stored if s.doc_id not in direct]
    return infos, {d.doc_id: d.content for d in direct.values()}


async def _open_named(shown: str, stored: str | None) -> Any:
    """The knowledge base a person named `shown`; a missing one is named as they named it."""
    try:
        return await open_kb(stored or shown)
    except KnowledgeBaseNotFoundError:
        if run_person().is_local:
            raise  # its message says how to create it with `scholarflow ingest`
        raise missing(shown) from None


def document_budget(ctx: Context, *, session_tokens: int, query_tokens: int) -> int:
    """available_tokens for this context (docs/architecture.md#budget)."""
    return available_tokens(
        max_context_tokens=window(ctx),
        session_tokens=session_tokens,
        query_tokens=query_tokens,
        system_tokens=system_reserve(ctx),
        reserved_answer_tokens=answer_reserve(ctx),
    )


def fits_whole(ctx: Context, infos: list[DocumentInfo], budget: int) -> bool:
    """use_direct_content: one document under the threshold share of the budget."""
    return len(infos) == 1 and infos[0]["tokens"] <= budget * ctx.direct_content_threshold


async def request_init(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    ctx = get_context(runtime)
    question, message = run_question(state)
    check_request_values({**state, "query": question})
    session_id = thread_session_id(state)
    earlier = [m for m in state.get("messages") or [] if m.id != message.id]
    before = state.get("session")
    # From here the question is in the thread, whatever becomes of the run: a failure
    # below goes to the error handler with this update applied (see handle_node_error).
    started = {**fresh_run(), "messages": [message], "question": question,
               "question_id": message.id,
               "session": session_stats(session_id, [*earlier, message], before)}
    try:
        update = await _prepare(ctx, state, question, earlier, before is None, session_id)
    except Exception as exc:  # the run ends here, but the question stays in the thread
        return {**started, **failure_update("request_init", scrubbed("request_init", exc))}
    return {**started, **update}


def route_after_request(state: State) -> Literal["document_check", "session_save"]:
    return "session_save" if state.get("error") else "document_check"


async def _prepare(ctx: Context, state: State, question: str, earlier: list[Any],
                   new_session: bool, session_id: str) -> dict[str, Any]:
    query_tokens = count_tokens(question)
    # The window the server reports, when no one set it: once per process, then cached
    # for every node (budget.window); a server that does not say leaves the default.
    await probe_window(ctx)
    check_budget(ctx, query_tokens=query_tokens)  # before any LLM call
    thinking = Thinking(ctx.show_thinking, "request_init")
    thinking.start()
    session_tokens = active_tokens(earlier)
    kb_name = await run_kb(state)  # the stored name, checked: later nodes open this one
    infos, contents = await gather_documents(state, stored_kb=kb_name)
    budget = document_budget(ctx, session_tokens=session_tokens, query_tokens=query_tokens)
    direct = fits_whole(ctx, infos, budget)
    if direct and infos[0]["doc_id"] not in contents and kb_name:  # one stored, read whole
        kb = await open_kb(kb_name)
        contents[infos[0]["doc_id"]] = await kb.document_text(infos[0]["doc_id"])

    doc_tokens = sum(i["tokens"] for i in infos)
    status = (f"New session {session_id}" if new_session else
              f"Session {session_id}: {len(earlier)} earlier messages ({session_tokens} tokens)")
    thinking.say(
        f"{status}. {len(infos)} document(s), {doc_tokens} tokens; {budget} tokens available"
        + ("; the document fits whole." if direct else ".")
    )
    node_complete("request_init", session_id=session_id, documents=len(infos),
                  new_session=new_session)
    return {
        "knowledge_base": kb_name,
        "selected_doc_ids": list(state.get("doc_ids") or []),
        "requested_mode": state.get("mode_type"),
        "web_search": bool(state.get("enable_web_search")),
        "documents": infos,
        "document_texts": contents,
        "session_tokens": session_tokens,
        "query_tokens": query_tokens,
        "available_tokens": budget,
        "use_direct_content": direct,
    }


async def document_check(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    ctx = get_context(runtime)
    count = len(state.get("documents") or [])
    # Here, not in request_init: the session is known by now, so session_save keeps the
    # question. Chat can answer "???", but recall has nothing to look up.
    if (count or state.get("knowledge_base")) and not has_words(state["question"]):
        raise InputError("the question has no words to search for: ask something, "
                         "e.g. 'what method does this paper propose?'")
    update: dict[str, Any] = {}
    if count == 0:
        Thinking(ctx.show_thinking, "document_check").say(
            "No documents attached: answering as a conversation."
        )
        update = {
            "detected_intent": Intent.SIMPLE_INTERACTION.value,
            "intent_confidence": 1.0,
            "intent_decided_by": "rules",
            "intent_reason": "no documents and no content",
            "strategy": None,
        }
    node_complete("document_check", documents=count)
    return update


def route_after_document_check(state: State) -> Literal["simple_interaction", "intent_recognition"]:
    return "intent_recognition" if state.get("documents") else "simple_interaction"
