"""How a run reaches knowledge bases: opening one by name, and its recall settings.

The nodes and the command line both go through here. The registry (and with it
the embedded index and its arrays) is imported when a knowledge base is first
opened, so importing the graph, or `scholarflow --help`, loads no index.

`open_kb` opens a knowledge base for the run's person (retrieval/owners.py):
a stored name they may not read is, to them, missing, whatever put it in the
run's state; a scratch index ("_direct") is the person's own.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from scholarflow.retrieval.kb import KnowledgeBase, RecallParams
from scholarflow.retrieval.owners import (
    LOCAL,
    Person,
    may_read,
    missing,
    person_of,
    shown_name,
    split_stored,
    stored_name,
)
from scholarflow.retrieval.references import asks_about_references

if TYPE_CHECKING:
    from scholarflow.context import Context


async def open_kb(
    name: str, *, create: bool = False, ctx: Context | None = None
) -> KnowledgeBase:
    """The knowledge base stored as `name`, for the run's person (KnowledgeBaseNotFoundError
    when there is none, or it is not theirs to read).

    Knowledge bases stay open in the process's RecallToolCache; `ctx` sizes it
    (`recall_tool_cache_size`), closing the least recently used beyond that.
    """
    from scholarflow.retrieval.kb_registry import limit_open, open_knowledge_base

    person = run_person()
    if split_stored(name)[1].startswith("_") and split_stored(name)[0] != person.name:
        name = stored_name(person.name, split_stored(name)[1])  # a scratch index: one's own
    elif not await may_read(person, name):
        raise missing(shown_name(person, name))
    if ctx is not None:
        await limit_open(ctx.recall_tool_cache_size)
    return await open_knowledge_base(name, create=create)


def run_person() -> Person:
    """The person the current run is for (retrieval/owners.py); local outside a run."""
    from langgraph.config import get_config

    try:
        config = get_config()
    except RuntimeError:  # not in a run: the command line, a plain Python call
        return LOCAL
    return person_of(config)


def recall_params(ctx: Context, queries: Sequence[str], *,
                  top_n: int | None = None) -> RecallParams:
    """The run's recall settings for `queries`: reference lists only when one asks for them."""
    return RecallParams(top_n=top_n or ctx.top_n, similarity_threshold=ctx.similarity_threshold,
                        vector_similarity_weight=ctx.vector_similarity_weight,
                        use_rerank=ctx.use_rerank,
                        include_references=any(map(asks_about_references, queries)))
