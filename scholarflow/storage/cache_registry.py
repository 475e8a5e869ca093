"""The process's summary cache, chosen by configuration.

- `SCHOLARFLOW_REDIS_URL` (redis://...): in Redis.
- Else `SCHOLARFLOW_DATABASE_URL` (postgresql://...): in that PostgreSQL
  database, so server processes that share threads share the cache too (a
  SQLite file would be one cache per machine).
- Neither: in the SQLite file under `SCHOLARFLOW_HOME`.

The sessions are not here: they are LangGraph threads, in the checkpointer
(scholarflow/storage/checkpoints.py). One cache per configuration, so every run in the
process shares the same connections; the settings are read at each call, so
a changed environment (a test, a new server configuration) takes effect.
"""

from __future__ import annotations

from collections.abc import Callable

from scholarflow.extras import require
from scholarflow.settings import get_settings
from scholarflow.storage.paths import DATABASE_FILENAME, home_path
from scholarflow.storage.postgres_cache import PostgresSummaryCache
from scholarflow.storage.redis_cache import RedisSummaryCache
from scholarflow.storage.services import DATABASE_URL_ENV, REDIS_URL_ENV
from scholarflow.storage.summary_cache import SqliteSummaryCache, SummaryCache

_caches: dict[tuple[str, str], SummaryCache] = {}


def summary_cache() -> SummaryCache:
    settings = get_settings()
    if url := settings.redis_url:
        require("redis", REDIS_URL_ENV)
        return _one(("redis", url), lambda: RedisSummaryCache(url))
    if pg_url := settings.database_url:
        require("postgres", DATABASE_URL_ENV)
        return _one(("postgresql", pg_url), lambda: PostgresSummaryCache(pg_url))
    path = home_path() / DATABASE_FILENAME
    return _one(("sqlite", str(path)), lambda: SqliteSummaryCache(path))


def _one(key: tuple[str, str], make: Callable[[], SummaryCache]) -> SummaryCache:
    """One cache per (kind, address) and process."""
    if key not in _caches:
        _caches[key] = make()
    return _caches[key]


async def check_backends() -> None:
    """Reach the configured PostgreSQL or Redis cache now (creating its table), so an
    unreachable one is one clear error before any work starts; SQLite needs no check."""
    cache = summary_cache()
    if isinstance(cache, PostgresSummaryCache | RedisSummaryCache):
        await cache.check()


async def close_all() -> None:
    """Close every cache opened in this process."""
    for cache in _caches.values():
        await cache.close()
    _caches.clear()
