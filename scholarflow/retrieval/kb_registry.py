"""Opening knowledge bases by name: the embedded index, or Elasticsearch when configured.

`SCHOLARFLOW_ES_URL` set: every knowledge base lives in Elasticsearch.
Otherwise in the embedded index under `<SCHOLARFLOW_HOME>/kb/<name>/`. A
knowledge base is opened once per process and shared, in the process's
RecallToolCache: an embedded one's search arrays (150 MB at 100k chunks) load
once, not once per question, and an Elasticsearch one keeps its client. The
cache holds `Context.recall_tool_cache_size` of them (`limit_open`); the least
recently used beyond that is closed. `close()` on an embedded one only
releases its SQLite connection; `close_all()` closes and drops everything.
"""

from __future__ import annotations

import asyncio
import importlib
import weakref

from scholarflow.errors import NotSupportedError
from scholarflow.extras import require
from scholarflow.retrieval.embeddings import Embedder, default_embedder
from scholarflow.retrieval.index import DEFAULT_KB, check_stored_name
from scholarflow.retrieval.index.embedded import (
    DB_FILENAME,
    EmbeddedKnowledgeBase,
    EmbedderMismatchError,
    kb_root,
)
from scholarflow.retrieval.kb import KnowledgeBase, KnowledgeBaseInfo
from scholarflow.retrieval.recall_cache import CacheStats, RecallToolCache
from scholarflow.settings import Settings, get_settings

__all__ = [
    "ES_URL_ENV",
    "EmbedderMismatchError",
    "close_all",
    "describe_knowledge_bases",
    "limit_open",
    "list_knowledge_bases",
    "open_knowledge_base",
    "open_stats",
]

ES_URL_ENV = Settings.es_url.env

# Keyed by an embedded index's folder, or by (Elasticsearch URL, name, embedder name).
_open: RecallToolCache[KnowledgeBase] = RecallToolCache()


async def open_knowledge_base(
    name: str = DEFAULT_KB, *, create: bool = False, embedder: Embedder | None = None
) -> KnowledgeBase:
    """The knowledge base `name`; KnowledgeBaseNotFoundError when missing and not `create`.

    Without `embedder`, an existing knowledge base uses the model it was
    built with and a new one `default_embedder()`; a given embedder must be
    the one it was built with (EmbedderMismatchError).
    """
    check_stored_name(name)
    if url := get_settings().es_url:
        require("elasticsearch", ES_URL_ENV)
        from scholarflow.retrieval.index.elastic import ElasticsearchKnowledgeBase

        # One client per knowledge base and event loop (its HTTP pool serves one loop: a
        # script's second asyncio.run gets its own); an embedded index's need no loop.
        key = (url, name, embedder.name if embedder else None, asyncio.get_running_loop())
        return await _open.open(key, lambda: ElasticsearchKnowledgeBase.open(
            name, create=create, embedder=embedder or default_embedder()))
    folder = (kb_root() / name).absolute()
    # One opening at a time: parallel tasks (summaries of large documents) opening the
    # same new index would each create its file, and SQLite's switch to WAL fails
    # ("database is locked") for all but one.
    async with loop_lock():
        cached = _open.get(folder)
        # A folder deleted meanwhile (the scratch index emptied) is opened anew.
        if (isinstance(cached, EmbeddedKnowledgeBase)
                and await asyncio.to_thread((folder / DB_FILENAME).is_file)):
            if embedder is not None and embedder.name != cached.embedder.name:
                raise EmbedderMismatchError(
                    f"knowledge base {name!r} was built with embeddings "
                    f"{cached.embedder.name!r}, not {embedder.name!r}"
                )
            return cached
        kb = await EmbeddedKnowledgeBase.open(name, create=create, embedder=embedder)
        await _open.put(folder, kb)
        return kb


_LOCKS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, asyncio.Lock]] = (
    weakref.WeakKeyDictionary())


def loop_lock(name: str = "open") -> asyncio.Lock:
    """This event loop's lock called `name` (an asyncio.Lock serves one loop only, and the
    CLI's commands and the tests each run their own loop)."""
    locks = _LOCKS.setdefault(asyncio.get_running_loop(), {})
    return locks.setdefault(name, asyncio.Lock())


async def list_knowledge_bases() -> list[str]:
    """The names of the knowledge bases there are, sorted."""
    if get_settings().es_url:
        require("elasticsearch", ES_URL_ENV)
        module = importlib.import_module("scholarflow.retrieval.index.elastic")
        lister = getattr(module.ElasticsearchKnowledgeBase, "list_names", None)
        if lister is None:
            raise NotSupportedError(
                f"listing knowledge bases on Elasticsearch ({ES_URL_ENV}) is not supported yet"
            )
        return sorted(await lister())
    return await asyncio.to_thread(_kb_names)


async def describe_knowledge_bases() -> list[KnowledgeBaseInfo]:
    """Each knowledge base's name, documents, chunks and backend, by name."""
    if get_settings().es_url:
        require("elasticsearch", ES_URL_ENV)
        from scholarflow.retrieval.index.elastic import ElasticsearchKnowledgeBase

        return sorted(await ElasticsearchKnowledgeBase.describe_all(), key=lambda i: i.name)
    return [await EmbeddedKnowledgeBase.describe(name) for name in await list_knowledge_bases()]


def _kb_names() -> list[str]:
    """Names of the embedded knowledge bases on disk; call from a worker thread."""
    root = kb_root()
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if (p / DB_FILENAME).is_file())


async def limit_open(maxsize: int) -> None:
    """Keep at most `maxsize` knowledge bases open (Context.recall_tool_cache_size);
    the least recently used beyond it are closed."""
    if maxsize != _open.maxsize:
        await _open.resize(maxsize)


def open_stats() -> CacheStats:
    """Hits, misses and size of the open knowledge bases."""
    return _open.stats()


async def close_all() -> None:
    """Close every knowledge base this process opened and forget them."""
    await _open.clear()
