"""Opening knowledge bases by name: the embedded index, or Elasticsearch when configured.

`SCHOLARFLOW_ES_URL` set: every knowledge base lives in Elasticsearch.
Otherwise in the embedded index under `<SCHOLARFLOW_HOME>/kb/<name>/`. An
embedded knowledge base is opened once per process and shared: its search
arrays (150 MB at 100k chunks) load once, not once per question. `close()`
on it only releases the SQLite connection; `close_all()` drops everything.
"""

from __future__ import annotations

import asyncio
import importlib
import os
import weakref
from pathlib import Path
from typing import Any

from scholarflow.errors import NotSupportedError
from scholarflow.tools.embeddings import Embedder, default_embedder
from scholarflow.tools.index import DEFAULT_KB, check_kb_name
from scholarflow.tools.index.embedded import (
    DB_FILENAME,
    EmbeddedKnowledgeBase,
    EmbedderMismatchError,
    kb_root,
)
from scholarflow.tools.kb import KnowledgeBase

__all__ = [
    "DEFAULT_KB",
    "ES_URL_ENV",
    "EmbedderMismatchError",
    "close_all",
    "list_knowledge_bases",
    "open_knowledge_base",
]

ES_URL_ENV = "SCHOLARFLOW_ES_URL"

_open: dict[Path, EmbeddedKnowledgeBase] = {}
_open_es: dict[tuple[str, str, str | None], Any] = {}  # ElasticsearchKnowledgeBase, imported lazily


async def open_knowledge_base(
    name: str = DEFAULT_KB, *, create: bool = False, embedder: Embedder | None = None
) -> KnowledgeBase:
    """The knowledge base `name`; KnowledgeBaseNotFoundError when missing and not `create`.

    Without `embedder`, an existing knowledge base uses the model it was
    built with and a new one `default_embedder()`; a given embedder must be
    the one it was built with (EmbedderMismatchError).
    """
    check_kb_name(name)
    if url := os.environ.get(ES_URL_ENV, "").strip():
        from scholarflow.tools.index.elastic import ElasticsearchKnowledgeBase

        # One client per knowledge base and process, as for the embedded index.
        key = (url, name, embedder.name if embedder else None)
        es = _open_es.get(key)
        if es is None:
            es = await ElasticsearchKnowledgeBase.open(
                name, create=create, embedder=embedder or default_embedder()
            )
            _open_es[key] = es
        return es
    folder = (kb_root() / name).absolute()
    # One opening at a time: parallel tasks (summaries of large documents) opening the
    # same new index would each create its file, and SQLite's switch to WAL fails
    # ("database is locked") for all but one.
    async with loop_lock():
        cached = _open.get(folder)
        if cached is not None and await asyncio.to_thread((folder / DB_FILENAME).is_file):
            if embedder is not None and embedder.name != cached.embedder.name:
                raise EmbedderMismatchError(
                    f"knowledge base {name!r} was built with embeddings "
                    f"{cached.embedder.name!r}, not {embedder.name!r}"
                )
            return cached
        kb = await EmbeddedKnowledgeBase.open(name, create=create, embedder=embedder)
        _open[folder] = kb
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
    if os.environ.get(ES_URL_ENV, "").strip():
        module = importlib.import_module("scholarflow.tools.index.elastic")
        lister = getattr(module.ElasticsearchKnowledgeBase, "list_names", None)
        if lister is None:
            raise NotSupportedError(
                f"listing knowledge bases on Elasticsearch ({ES_URL_ENV}) is not supported yet"
            )
        return sorted(await lister())
    return await asyncio.to_thread(_kb_names)


def _kb_names() -> list[str]:
    """Names of the embedded knowledge bases on disk; call from a worker thread."""
    root = kb_root()
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if (p / DB_FILENAME).is_file())


async def close_all() -> None:
    """Close every knowledge base this process opened and forget them."""
    opened: list[KnowledgeBase] = [*_open.values(), *_open_es.values()]
    _open.clear()
    _open_es.clear()
    for kb in opened:
        await kb.close()
