"""Where recall happens for a request: a knowledge base, or the documents given directly.

Documents given directly (`--file`, `content`, `document_contents`) that need
recall are ingested into a scratch knowledge base, `_direct` (each person's own
on a server: retrieval/access.py), by doc_id with their content hash, so asking
again about the same file costs no re-indexing, and an id given again with
another text is indexed again.
The scratch knowledge base is a cache, bounded: when new documents would
take it over `SCRATCH_MAX_BYTES` on disk, it is emptied first.
A request with both searches both: the knowledge base and the scratch one.
`SCHOLARFLOW_RECALL_API_URL` sends recall of stored documents to an external
service instead.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Collection, Sequence
from pathlib import Path

from scholarflow.context import Context
from scholarflow.ingest.documents import document_from_text
from scholarflow.retrieval.access import open_kb
from scholarflow.retrieval.index import DEFAULT_KB
from scholarflow.retrieval.kb import KnowledgeBase, Retriever
from scholarflow.retrieval.owners import split_stored
from scholarflow.settings import Settings, get_settings
from scholarflow.state import DocumentInfo, State

DIRECT_KB = "_direct"
RECALL_API_ENV = Settings.recall_api_url.env
# Emptied whole, not per document: the index has no delete. Room for two of the
# largest files `ask --file` takes (20 MB of text), or hundreds of papers.
SCRATCH_MAX_BYTES = 256 * 1024 * 1024
# Disk per byte of text indexed (text, chunks, terms, vectors), rounded up.
_DISK_PER_TEXT_BYTE = 6


async def prepare_recall(state: State) -> None:
    """Open what recall will search: a missing knowledge base fails here, before any LLM
    call, and the documents given directly are indexed in the scratch knowledge base."""
    contents = state.get("document_texts") or {}
    kb, _doc_ids, direct = recall_scope(state.get("knowledge_base"),
                                        state.get("selected_doc_ids") or [],
                                        state.get("documents") or [], contents)
    if kb and (url := get_settings().recall_api_url):
        from scholarflow.retrieval.recall_api import HttpRecallRetriever

        HttpRecallRetriever(url, [kb])  # a malformed URL fails here, before any LLM call
    elif kb:
        await open_kb(kb)
    if direct:
        scratch = await open_kb(DIRECT_KB, create=True)
        await index_direct_documents(scratch, {d: contents[d] for d in direct})


async def index_direct_documents(kb: KnowledgeBase, contents: dict[str, str]) -> None:
    """Add the request's own documents to the scratch knowledge base (a no-op when there).

    New documents that would take the scratch index over its bound empty it
    first; the request's documents are then indexed again. (A run of another process
    searching the scratch index at that moment keeps its open files.)
    """
    from scholarflow.ingest.pipeline import add_document
    from scholarflow.retrieval.kb_registry import loop_lock

    # One indexing at a time in this process: parallel summaries of large documents
    # would otherwise queue on SQLite's write lock, past its busy timeout under load,
    # and the bound below must not be checked by two tasks at once.
    async with loop_lock("scratch-index"):
        documents = {d: document_from_text(t, doc_id=d) for d, t in contents.items()}
        indexed = await kb.documents(list(contents))
        present = {d.doc_id for d in indexed if d.content_hash == documents[d.doc_id].content_hash}
        # An id given before with another text: that text's chunks go, this one's come in.
        for stale in {d.doc_id for d in indexed} - present:
            await kb.remove(stale)
        incoming = sum(len(contents[d]) for d in set(contents) - present)  # chars: near bytes
        if incoming and await _over_bound(kb, incoming * _DISK_PER_TEXT_BYTE):
            kb = await _emptied(kb)
            present = set()
        for doc_id, document in documents.items():
            if doc_id not in present:
                await add_document(kb, document)



async def _over_bound(kb: KnowledgeBase, adding: int) -> bool:
    folder = getattr(kb, "folder", None)  # the embedded index; Elasticsearch bounds its own
    return (split_stored(kb.name)[1] == DIRECT_KB and isinstance(folder, Path)
            and await asyncio.to_thread(_folder_bytes, folder) + adding > SCRATCH_MAX_BYTES)


def _folder_bytes(folder: Path) -> int:
    total = 0
    for entry in folder.iterdir():
        try:
            total += entry.stat().st_size if entry.is_file() else 0
        except FileNotFoundError:  # a snapshot's temporary file, renamed while listed
            continue
    return total


async def _emptied(kb: KnowledgeBase) -> KnowledgeBase:
    folder = getattr(kb, "folder")  # noqa: B009 - checked by _over_bound
    await kb.close()
    await asyncio.to_thread(shutil.rmtree, folder, True)
    return await open_kb(DIRECT_KB, create=True)  # the registry sees the file gone: a new one


def recall_scope(
    kb: str | None, doc_ids: Sequence[str], documents: list[DocumentInfo],
    contents: Collection[str],
) -> tuple[str | None, list[str], list[str]]:
    """Where recall searches: (knowledge base, its documents, documents given directly).

    The knowledge base is `kb`, or "default" when documents were named by id
    without one (that is where they were loaded from), or None when every
    document was given directly; its empty list means all of it. Documents
    given directly (`contents`, their texts) are searched in the scratch
    knowledge base, alongside the stored ones, never instead of them.
    """
    direct = [d["doc_id"] for d in documents if d["doc_id"] in contents]
    stored = [d for d in dict.fromkeys(doc_ids) if d not in contents]
    if kb:
        return kb, stored, direct
    return (DEFAULT_KB if stored else None), stored, direct


async def retriever_for(kb: str, doc_id: str | None, ctx: Context) -> Retriever:
    """The retriever of knowledge base `kb`; a step aimed at one document gets that document's.

    With the recall API configured, stored documents are searched there; the
    documents given directly are in no external index, so the scratch one is local.
    """
    url = get_settings().recall_api_url
    if url and kb != DIRECT_KB:
        from scholarflow.retrieval.recall_api import HttpRecallRetriever

        return HttpRecallRetriever(url, [kb])
    from scholarflow.retrieval.recall_cache import DocumentRetriever

    base = await open_kb(kb, ctx=ctx)  # the expensive part, cached
    # The view of one document costs one small object: made per step, not cached.
    return base if doc_id is None else DocumentRetriever(base, doc_id)


async def key_chunks_text(
    kb_name: str | None, doc_id: str, text: str | None, max_tokens: int, ctx: Context
) -> str:
    """A large document's most informative chunks, in reading order, within `max_tokens`.

    Recalled with fixed questions about problem, method, data, results and
    limits (in English and Chinese), so any document yields its key parts.
    """
    from scholarflow.prompts import KEY_CHUNK_QUERIES
    from scholarflow.retrieval.kb import RecallParams
    from scholarflow.tokens import count_tokens

    if kb_name:
        kb = await open_kb(kb_name, ctx=ctx)
    else:
        kb = await open_kb(DIRECT_KB, create=True, ctx=ctx)
        await index_direct_documents(kb, {doc_id: text or ""})
    params = RecallParams(top_n=ctx.top_n, similarity_threshold=0.0,
                          vector_similarity_weight=ctx.vector_similarity_weight)
    results = [await kb.search(q, doc_ids=[doc_id], params=params) for q in KEY_CHUNK_QUERIES]
    order: dict[str, str] = {}  # chunk_id -> text, in the order the questions earn them
    for rank in range(ctx.top_n):  # round-robin: every question gets its best chunk first
        for hits in results:
            if rank < len(hits):
                order.setdefault(hits[rank].chunk_id, hits[rank].text)
    picked: dict[str, str] = {}
    used = 0
    for chunk_id, chunk_text in order.items():
        cost = count_tokens(chunk_text) + 2
        if used + cost > max_tokens:
            break
        picked[chunk_id] = chunk_text
        used += cost
    return "\n\n".join(picked[c] for c in sorted(picked))  # chunk ids sort in reading order
