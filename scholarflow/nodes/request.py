"""request_init and document_check: the session, the documents and the budget."""

from __future__ import annotations

from typing import Any, Literal

from langgraph.runtime import Runtime

from scholarflow.context import Context, get_context
from scholarflow.documents import Document, document_from_text, documents_from_mapping
from scholarflow.errors import InputError, KnowledgeBaseNotConfiguredError
from scholarflow.events import Thinking, node_complete
from scholarflow.intents import Intent
from scholarflow.sessions.registry import session_store
from scholarflow.state import DocumentInfo, HistoryMessage, State
from scholarflow.tokens import available_tokens, count_tokens


def validate_request(state: State) -> str:
    """The stripped question; raises InputError for what no node can work with."""
    query = (state.get("query") or "").strip()
    if not query:
        raise InputError("the question is empty: ask something, e.g. 'summarize this paper'")
    if mode := state.get("mode_type"):
        try:
            Intent.parse(mode)
        except ValueError as exc:
            raise InputError(f"invalid mode: {exc}") from None
    return query


def gather_documents(state: State) -> list[Document]:
    """The request's documents: `content`, `document_contents`, then `doc_ids`."""
    docs: list[Document] = []
    if content := state.get("content"):
        docs.append(document_from_text(content))
    mapping = state.get("document_contents") or {}
    docs.extend(documents_from_mapping(mapping))
    missing = [d for d in state.get("doc_ids") or [] if d not in mapping]
    if missing:
        raise KnowledgeBaseNotConfiguredError(
            f"documents {', '.join(missing)} must come from a knowledge base, and none is "
            "configured yet: give the documents directly (--file or document_contents)"
        )
    unique: dict[str, Document] = {}
    for doc in docs:
        unique.setdefault(doc.doc_id, doc)
    return list(unique.values())


def document_infos(docs: list[Document]) -> list[DocumentInfo]:
    return [
        DocumentInfo(doc_id=d.doc_id, title=d.title, tokens=count_tokens(d.content),
                     content_hash=d.content_hash)
        for d in docs
    ]


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

    docs = gather_documents(state)
    infos = document_infos(docs)
    query_tokens = count_tokens(query)
    budget = document_budget(ctx, session_tokens=session_tokens, query_tokens=query_tokens)
    direct = fits_whole(ctx, infos, budget)

    doc_tokens = sum(i["tokens"] for i in infos)
    thinking.say(
        f"Session {session_id}: {len(active)} earlier messages ({session_tokens} tokens). "
        f"{len(infos)} document(s), {doc_tokens} tokens; {budget} tokens available"
        + ("; the document fits whole." if direct else ".")
    )
    node_complete("request_init", session_id=session_id, documents=len(infos))
    return {
        "query": query,
        "session_id": session_id,
        "documents": infos,
        "document_contents": {d.doc_id: d.content for d in docs},
        "history": history,
        "session_tokens": session_tokens,
        "query_tokens": query_tokens,
        "available_tokens": budget,
        "use_direct_content": direct,
        "error": None,
    }


async def document_check(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    ctx = get_context(runtime)
    count = len(state.get("documents") or [])
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
