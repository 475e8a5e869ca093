"""request_init and document_check: the session, the documents and the budget."""

from __future__ import annotations

from typing import Any, Literal

from langgraph.runtime import Runtime
from langgraph.types import Overwrite

from scholarflow.budget import check_budget
from scholarflow.context import Context, get_context
from scholarflow.documents import Document, document_from_text, documents_from_mapping
from scholarflow.errors import InputError
from scholarflow.events import Thinking, node_complete
from scholarflow.intents import Intent
from scholarflow.request_schema import check_request_values
from scholarflow.sessions.registry import session_store
from scholarflow.state import DocumentInfo, HistoryMessage, State
from scholarflow.tokens import available_tokens, count_tokens
from scholarflow.tools.index.tokenize import has_words
from scholarflow.tools.kb import DocumentNotFoundError
from scholarflow.tools.recall import DEFAULT_KB, open_kb


def fresh_run() -> dict[str, Any]:
    """What one run computes, back at its start value.

    A checkpointed thread (one session) keeps its state between runs, so
    request_init starts every run from this. The reducer fields get
    `Overwrite`: a plain update would be added to the last run's values.
    """
    return {
        "usage": Overwrite([]),
        "document_summaries": Overwrite({}),
        "recalled": Overwrite([]),
        "completed_steps": Overwrite([]),
        "documents": [], "history": [], "use_direct_content": False,
        "detected_intent": None, "intent_confidence": 0.0, "intent_decided_by": None,
        "intent_reason": "", "strategy": None,
        "sub_questions": [], "plan": [], "execution_rounds": 0,
        "answer": "", "sources": [], "error": None,
    }


def request_inputs_cleared() -> dict[str, Any]:
    """The request's optional inputs, emptied when a run ends.

    A later run on the same thread that leaves one out must not inherit the
    last run's documents or mode. `session_id` stays: the thread is the session.
    """
    return {"content": None, "document_contents": {}, "doc_ids": [], "kb": None,
            "mode_type": None, "enable_web_search": False}


def validate_request(state: State) -> str:
    """The stripped question; raises InputError for what no node can work with.

    The graph's entry checked the request already (graph/validated.py); this checks
    the values again for a state that did not come through it (`Command(update=...)`).
    """
    return check_request_values(state)


async def gather_documents(state: State) -> tuple[list[DocumentInfo], dict[str, str]]:
    """The request's documents and the texts given directly.

    First `content` and `document_contents`; then `doc_ids` from the knowledge
    base (`kb`, else "default"), or every document of `kb` when no id is named.
    Texts of stored documents are read later, only where a strategy needs them.
    """
    direct: dict[str, Document] = {}
    if content := state.get("content"):
        doc = document_from_text(content)
        direct[doc.doc_id] = doc
    for doc in documents_from_mapping(state.get("document_contents") or {}):
        direct.setdefault(doc.doc_id, doc)
    infos = [
        DocumentInfo(doc_id=d.doc_id, title=d.title, tokens=count_tokens(d.content),
                     content_hash=d.content_hash)
        for d in direct.values()
    ]
    kb_name = state.get("kb")
    wanted = [d for d in state.get("doc_ids") or [] if d not in direct]
    if kb_name or wanted:
        kb = await open_kb(kb_name or DEFAULT_KB)
        stored = await kb.documents(wanted or None)
        if missing := sorted(set(wanted) - {s.doc_id for s in stored}):
            raise DocumentNotFoundError(
                f"no document {', '.join(missing)} in knowledge base {kb.name!r}; "
                f"see `scholarflow search QUERY --kb {kb.name}`"
            )
        infos += [DocumentInfo(doc_id=s.doc_id, title=s.title, tokens=s.tokens,
                               content_hash=s.content_hash)
                  for s in stored if s.doc_id not in direct]
    return infos, {d.doc_id: d.content for d in direct.values()}


def document_budget(ctx: Context, *, session_tokens: int, query_tokens: int) -> int:
    """DESIGN.md's available_tokens for this context."""
    return available_tokens(
        max_context_tokens=ctx.max_context_tokens,
        session_tokens=session_tokens,
        query_tokens=query_tokens,
        system_tokens=ctx.system_tokens_estimate,
        reserved_answer_tokens=ctx.reserved_answer_tokens,
    )


def fits_whole(ctx: Context, infos: list[DocumentInfo], budget: int) -> bool:
    """use_direct_content: one document under the threshold share of the budget."""
    return len(infos) == 1 and infos[0]["tokens"] <= budget * ctx.direct_content_threshold


async def request_init(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    ctx = get_context(runtime)
    query = validate_request(state)
    query_tokens = count_tokens(query)
    # Before any LLM call, and before a new session is created for a run that cannot go on.
    check_budget(ctx, query_tokens=query_tokens)
    thinking = Thinking(ctx.show_thinking, "request_init")
    thinking.start()

    store = session_store()
    if session_id := state.get("session_id"):
        if await store.get(session_id) is None:
            raise InputError(f"no session {session_id!r}; see `scholarflow sessions list`")
    else:
        session_id = (await store.create()).session_id
    active = await store.messages(session_id, active_only=True)
    history = [HistoryMessage(type=m.type.value, content=m.content) for m in active]
    session_tokens = sum(m.token_count for m in active)

    infos, contents = await gather_documents(state)
    budget = document_budget(ctx, session_tokens=session_tokens, query_tokens=query_tokens)
    direct = fits_whole(ctx, infos, budget)
    if direct and infos[0]["doc_id"] not in contents:  # one stored document, read whole
        kb = await open_kb(state.get("kb") or DEFAULT_KB)
        contents[infos[0]["doc_id"]] = await kb.document_text(infos[0]["doc_id"])

    doc_tokens = sum(i["tokens"] for i in infos)
    thinking.say(
        f"Session {session_id}: {len(active)} earlier messages ({session_tokens} tokens). "
        f"{len(infos)} document(s), {doc_tokens} tokens; {budget} tokens available"
        + ("; the document fits whole." if direct else ".")
    )
    node_complete("request_init", session_id=session_id, documents=len(infos))
    return {
        **fresh_run(),
        "query": query,
        "session_id": session_id,
        "documents": infos,
        "document_contents": contents,
        "history": history,
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
    if (count or state.get("kb")) and not has_words(state["query"]):
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
