"""The nodes of the document_summary subgraph: cache lookup, then one summary per document.

Request arrives -> batch cache lookup -> hits used as they are -> misses
summarised in parallel (one Send each, every call through the LLM limiter)
-> new summaries cached -> all summaries merged (docs/architecture.md#summary-cache).
"""

from __future__ import annotations

import logging
import operator
from typing import Annotated, Any, NotRequired

from langgraph.errors import NodeError
from langgraph.runtime import Runtime
from langgraph.types import Send
from pydantic import Field
from typing_extensions import TypedDict  # pydantic needs it on Python < 3.12 (Studio schemas)

from scholarflow.context import Context, first_attempt, get_context
from scholarflow.errors import ConfigurationError
from scholarflow.events import Thinking, emit, node_complete
from scholarflow.llm import calls as llm
from scholarflow.llm.budget import (
    MIN_MATERIAL_TOKENS,
    answer_reserve,
    cap_tokens,
    prompt_budget,
    window_words,
)
from scholarflow.llm.empty_answer import require_text
from scholarflow.nodes.recall_scope import key_chunks_text
from scholarflow.prompts import DOCUMENT_CONDENSED_SUMMARY_PROMPT
from scholarflow.retrieval.access import open_kb
from scholarflow.retrieval.index import DEFAULT_KB
from scholarflow.state import DocSummary, DocSummaryTask, DocumentInfo, LLMUsage, merge_summaries
from scholarflow.storage.cache_registry import summary_cache
from scholarflow.storage.summary_cache import summary_cache_key
from scholarflow.tokens import MESSAGE_OVERHEAD_TOKENS, count_tokens

logger = logging.getLogger(__name__)

# A summary's length in words (Chinese: characters): ~330 tokens at most, so a
# prompt holds a few hundred of them at 128k; scaled down so that a small window
# still holds SUMMARIES_PER_PROMPT, never under SUMMARY_MIN_WORDS.
SUMMARY_MAX_WORDS, SUMMARY_MIN_WORDS, SUMMARIES_PER_PROMPT = 250, 80, 10
# A word is ~1.3 tokens in English and a Chinese character ~1.3: the reply bound of
# 2 a word leaves room for a model's loose count, so a summary of the asked length is
# not cut, and SUMMARIES_PER_PROMPT bounded summaries fit one prompt.
TOKENS_PER_WORD_BOUND = 2
TITLE_TOKENS = 100
_PROMPT_OVERHEAD_TOKENS = count_tokens(
    DOCUMENT_CONDENSED_SUMMARY_PROMPT.format(max_words=SUMMARY_MAX_WORDS, title="", content="")
)


class SummaryInput(TypedDict):
    """What document_summary reads from the parent: the run's documents."""

    documents: Annotated[list[DocumentInfo], Field(
        description="The documents to summarise, without their text.")]
    document_texts: Annotated[dict[str, str], Field(
        description="Texts in hand, {doc_id: text}; the others are read from the knowledge base.")]
    knowledge_base: NotRequired[Annotated[str | None, Field(
        description="Where stored documents are read from; null: the default one.")]]


class SummaryOutput(TypedDict):
    """What document_summary gives back to the parent."""

    # Not in SummaryInput, so these start empty and the parent receives only what is new.
    # (A reducer must be the field's last annotation: LangGraph reads only that one.)
    document_summaries: Annotated[dict[str, DocSummary], Field(
        description="One condensed summary per document, by doc_id."), merge_summaries]
    usage: Annotated[list[LLMUsage], Field(
        description="Every LLM call of the subgraph: node, model, tokens, seconds."), operator.add]


class SummaryState(SummaryInput, SummaryOutput):
    """The subgraph's state: its input documents and the summaries it produces."""

    stored_doc_ids: Annotated[list[str], Field(
        description="Documents read from the knowledge base, not given directly.")]


def summary_words(ctx: Context) -> int:
    """The words (Chinese: characters) a summary may have in this window."""
    fitting = prompt_budget(ctx) // SUMMARIES_PER_PROMPT // TOKENS_PER_WORD_BOUND
    return max(SUMMARY_MIN_WORDS, min(SUMMARY_MAX_WORDS, fitting))


def material_limit(ctx: Context, title: str) -> int:
    """The tokens of a document a summary prompt can hold: a larger document is
    summarised from its key recalled chunks, up to this many."""
    return (prompt_budget(ctx) - _PROMPT_OVERHEAD_TOKENS
            - count_tokens(cap_tokens(title, TITLE_TOKENS)) - MESSAGE_OVERHEAD_TOKENS)


def summary_call_tokens(ctx: Context, title: str, tokens: int) -> tuple[int, int]:
    """(prompt, reply bound) of the call that summarises a document of `tokens` tokens:
    what summarize_document sends, counted without reading the document."""
    material = min(tokens, max(material_limit(ctx, title), 0))
    prompt = (_PROMPT_OVERHEAD_TOKENS + count_tokens(cap_tokens(title, TITLE_TOKENS))
              + MESSAGE_OVERHEAD_TOKENS + material)
    return prompt, summary_words(ctx) * TOKENS_PER_WORD_BOUND


async def cached_summaries(ctx: Context, documents: list[DocumentInfo]) -> dict[str, DocSummary]:
    """The documents' summaries the cache has, by doc_id (none when the context asks to
    refresh them)."""
    hits: dict[str, DocSummary] = {}
    if not ctx.refresh_summary_cache:
        keys = {summary_cache_key(d["doc_id"], d["content_hash"]): d for d in documents}
        found = await summary_cache().get_many(list(keys))
        for key, summary in found.items():
            doc = keys[key]
            hits[doc["doc_id"]] = DocSummary(
                doc_id=doc["doc_id"], title=doc["title"], summary=summary,
                tokens=count_tokens(summary), cached=True,
            )
    return hits


async def load_cached_summaries(state: SummaryState, runtime: Runtime[Context]) -> dict[str, Any]:
    ctx = get_context(runtime)
    documents = state["documents"]
    hits = await cached_summaries(ctx, documents)
    emit("doc_summary_init", total=len(documents), cached=len(hits),
         to_generate=len(documents) - len(hits), refresh=ctx.refresh_summary_cache)
    for hit in hits.values():
        emit("doc_summary_complete", doc_id=hit["doc_id"], title=hit["title"], cached=True)
    # Stored documents still to summarise: read their texts (direct ones are here already).
    contents = dict(state.get("document_texts") or {})
    unread = [d["doc_id"] for d in documents if d["doc_id"] not in hits | contents]
    if unread:
        kb = await open_kb(state.get("knowledge_base") or DEFAULT_KB)
        for doc_id in unread:
            contents[doc_id] = await kb.document_text(doc_id)
    node_complete("load_cached_summaries", cached=len(hits))
    return {"document_summaries": hits, "document_texts": contents, "stored_doc_ids": unread}


def dispatch_summaries(state: SummaryState) -> list[Send] | str:
    """One Send per document still without a summary; straight on when the cache had all."""
    done = state.get("document_summaries") or {}
    stored = set(state.get("stored_doc_ids") or [])
    kb = state.get("knowledge_base") or DEFAULT_KB  # where stored documents were read from
    sends = [
        Send("summarize_document", DocSummaryTask(
            doc_id=d["doc_id"], title=d["title"], content_hash=d["content_hash"],
            # a document given directly is in no knowledge base: recalled from its text
            tokens=d["tokens"], kb=kb if d["doc_id"] in stored else None,
            content=state["document_texts"][d["doc_id"]],
        ))
        for d in state["documents"]
        if d["doc_id"] not in done
    ]
    return sends or "collect_summaries"


async def summarize_document(task: DocSummaryTask, runtime: Runtime[Context]) -> dict[str, Any]:
    ctx = get_context(runtime)
    doc_id, title = task["doc_id"], task["title"]
    shown_title = cap_tokens(title, TITLE_TOKENS)  # a title is a line, not a document
    limit = material_limit(ctx, title)
    if limit < MIN_MATERIAL_TOKENS:
        raise ConfigurationError(
            f"{window_words(ctx)} leaves {max(limit, 0)} tokens to "
            f"summarise {title[:80]!r} after reserved_answer_tokens="
            f"{answer_reserve(ctx)}: raise max_context_tokens or lower "
            "reserved_answer_tokens"
        )
    emit("doc_summary_start", doc_id=doc_id, title=title)
    content = task["content"]
    if task["tokens"] > limit:  # too large to read whole: summarise its key chunks
        content = await key_chunks_text(task["kb"], doc_id, content, limit, ctx)
        Thinking(ctx.show_thinking, "summarize_document").say(
            f"{title!r} has {task['tokens']} tokens: summarising its key recalled passages."
        )
        if not content.strip():  # no key chunk fits the window: the beginning, never nothing
            content = cap_tokens(task["content"], limit)
    words = summary_words(ctx)
    prompt = DOCUMENT_CONDENSED_SUMMARY_PROMPT.format(
        max_words=words, title=shown_title, content=content
    )
    # Not streamed: ten summaries interleaving token by token read as noise, and
    # a streamed call costs several times the client CPU, which with 200
    # documents is what keeps the limiter's slots from staying busy.
    result = await llm.complete(ctx, [("user", prompt)], node="summarize_document",
                                max_tokens=words * TOKENS_PER_WORD_BOUND)
    summary = require_text(ctx, result.text, first_attempt=first_attempt(runtime),
                           what=f"summary of {title[:80]!r}").strip()
    emit("doc_summary_chunk", doc_id=doc_id, content=summary)
    await summary_cache().set(summary_cache_key(doc_id, task["content_hash"]), summary)
    summary_tokens = count_tokens(summary)
    emit("doc_summary_complete", doc_id=doc_id, title=title, cached=False,
         tokens=summary_tokens)
    node_complete("summarize_document", doc_id=doc_id)
    return {
        "document_summaries": {doc_id: DocSummary(
            doc_id=doc_id, title=title, summary=summary, tokens=summary_tokens, cached=False,
        )},
        "usage": [result.usage],
    }


async def collect_summaries(state: SummaryState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Close the subgraph: say what was summarised, cached or lost."""
    ctx = get_context(runtime)
    summaries = state.get("document_summaries") or {}
    cached = sum(1 for s in summaries.values() if s["cached"])
    failed = len(state["documents"]) - len(summaries)
    Thinking(ctx.show_thinking, "document_summary").say(
        f"{len(summaries)} of {len(state['documents'])} documents summarised "
        f"({cached} from cache" + (f", {failed} failed)." if failed else ").")
    )
    node_complete("document_summary", summarised=len(summaries), cached=cached, failed=failed)
    return {}


async def summary_failed(task: DocSummaryTask, error: NodeError) -> dict[str, Any]:
    """One document failing does not sink the others: report it and go on."""
    message = str(error.error) or type(error.error).__name__
    logger.warning("summary of %s failed: %s", task.get("doc_id"), message)
    emit("doc_summary_error", doc_id=task.get("doc_id"), title=task.get("title"), error=message)
    return {}
