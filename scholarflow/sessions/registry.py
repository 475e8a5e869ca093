"""The process's session store and summary cache, chosen by configuration.

- `SCHOLARFLOW_DATABASE_URL` (postgresql://...): sessions in PostgreSQL.
- `SCHOLARFLOW_REDIS_URL` (redis://...): the summary cache in Redis.
- A database URL without a Redis URL: the summary cache in the same
  PostgreSQL database, so server processes that share sessions share the
  cache too (a SQLite file would be one cache per machine).
- Neither: both in the SQLite file under `SCHOLARFLOW_HOME`.

One instance each per configuration, so every run in the process shares the
same connections; the variables are read at each call, so a changed
environment (a test, a new server configuration) takes effect.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from scholarflow.sessions.cache import SqliteSummaryCache, SummaryCache
from scholarflow.sessions.paths import DATABASE_FILENAME, home_path
from scholarflow.sessions.postgres import PostgresSessionStore
from scholarflow.sessions.postgres_cache import PostgresSummaryCache
from scholarflow.sessions.postgres_db import PostgresDatabase
from scholarflow.sessions.redis_cache import RedisSummaryCache
from scholarflow.sessions.services import DATABASE_URL_ENV, REDIS_URL_ENV, env_url
from scholarflow.sessions.sqlite import SqliteSessionStore
from scholarflow.sessions.store import SessionStore

K = TypeVar("K")
T = TypeVar("T")

_stores: dict[tuple[str, str], SessionStore] = {}
_caches: dict[tuple[str, str], SummaryCache] = {}
_databases: dict[str, PostgresDatabase] = {}


def _database(url: str) -> PostgresDatabase:
    # The store and the PostgreSQL cache share one pool.
    return _one(_databases, url, lambda: PostgresDatabase(url))


def session_store() -> SessionStore:
    if url := env_url(DATABASE_URL_ENV):
        return _one(_stores, ("postgresql", url), lambda: PostgresSessionStore(_database(url)))
    path = home_path() / DATABASE_FILENAME
    return _one(_stores, ("sqlite", str(path)), lambda: SqliteSessionStore(path))


def summary_cache() -> SummaryCache:
    if url := env_url(REDIS_URL_ENV):
        return _one(_caches, ("redis", url), lambda: RedisSummaryCache(url))
    if pg_url := env_url(DATABASE_URL_ENV):
        return _one(_caches, ("postgresql", pg_url),
                    lambda: PostgresSummaryCache(_database(pg_url)))
    path = home_path() / DATABASE_FILENAME
    return _one(_caches, ("sqlite", str(path)), lambda: SqliteSummaryCache(path))


def _one(made: dict[K, T], key: K, make: Callable[[], T]) -> T:
    """One backend object per (kind, address) and process."""
    if key not in made:
        made[key] = make()
    return made[key]


async def check_backends() -> None:
    """Reach the configured PostgreSQL and Redis now (creating the tables), so an
    unreachable one is one clear error before any work starts; SQLite needs no check."""
    for backend in (session_store(), summary_cache()):
        if isinstance(backend, PostgresSessionStore | PostgresSummaryCache | RedisSummaryCache):
            await backend.check()


async def close_all() -> None:
    """Close every store and cache opened in this process."""
    for closable in [*_stores.values(), *_caches.values()]:
        await closable.close()
    _stores.clear()
    _caches.clear()
    _databases.clear()
