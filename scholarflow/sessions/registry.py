"""The process's session store and summary cache, chosen by configuration.

One instance each per data folder, so every run in the process shares the
same connection. Later backends (PostgreSQL, Redis) plug in here.
"""

from __future__ import annotations

from pathlib import Path

from scholarflow.sessions.cache import SqliteSummaryCache, SummaryCache
from scholarflow.sessions.paths import DATABASE_FILENAME, home_path
from scholarflow.sessions.sqlite import SqliteSessionStore
from scholarflow.sessions.store import SessionStore

_stores: dict[Path, SessionStore] = {}
_caches: dict[Path, SummaryCache] = {}


def _db_path() -> Path:
    return home_path() / DATABASE_FILENAME


def session_store() -> SessionStore:
    path = _db_path()
    if path not in _stores:
        _stores[path] = SqliteSessionStore(path)
    return _stores[path]


def summary_cache() -> SummaryCache:
    path = _db_path()
    if path not in _caches:
        _caches[path] = SqliteSummaryCache(path)
    return _caches[path]


async def close_all() -> None:
    """Close every store and cache opened in this process."""
    for closable in [*_stores.values(), *_caches.values()]:
        await closable.close()
    _stores.clear()
    _caches.clear()
