"""The document-summary cache (docs/architecture.md): keys, hits, misses, expiry, overwrite,
on SQLite and on PostgreSQL (Redis: test_redis_cache.py)."""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from scholarflow.ingest.documents import content_hash
from scholarflow.storage.postgres_cache import PostgresSummaryCache
from scholarflow.storage.summary_cache import (
    DEFAULT_TTL_SECONDS,
    SqliteSummaryCache,
    SummaryCache,
    default_summary_cache,
    summary_cache_key,
)


class Clock:
    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


Cache = SqliteSummaryCache | PostgresSummaryCache


@pytest.fixture(params=["sqlite", "postgresql"])
def new_cache(request: pytest.FixtureRequest, tmp_path: Path, clock: Clock) -> Callable[[], Cache]:
    """Opens a cache on this test's database: one SQLite file, or one PostgreSQL schema."""
    if request.param == "sqlite":
        return lambda: SqliteSummaryCache(tmp_path / "scholarflow.db", clock=clock)
    url, schema = request.getfixturevalue("postgres_url"), request.getfixturevalue("pg_schema")
    return lambda: PostgresSummaryCache(url, schema=schema, clock=clock)


@pytest.fixture
async def cache(new_cache: Callable[[], Cache]) -> AsyncIterator[Cache]:
    c = new_cache()
    yield c
    await c.close()


async def _rows(cache: Cache) -> int:
    """Rows in the cache table, expired ones included, read behind the cache's back."""
    if isinstance(cache, SqliteSummaryCache):
        with sqlite3.connect(cache.path) as raw:
            return int(raw.execute("SELECT COUNT(*) FROM summary_cache").fetchone()[0])
    async with cache.db.connection() as conn:
        cur = await conn.execute(
            f"SELECT COUNT(*) FROM {cache.db.table('scholarflow_summary_cache')}"
        )
        row = await cur.fetchone()
    assert row is not None
    return int(row[0])


def test_key_format() -> None:
    assert summary_cache_key("doc-1", "abc123") == "doc_summary:doc-1:abc123"
    text = "Attention is all you need"
    assert summary_cache_key("d", content_hash(text)) == (
        "doc_summary:d:" + hashlib.sha256(text.encode("utf-8")).hexdigest()
    )


def test_content_hash() -> None:
    assert content_hash("") == (
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    )
    assert content_hash("文献综述") == hashlib.sha256("文献综述".encode()).hexdigest()
    assert content_hash("a") != content_hash("a ")


async def test_miss_and_hit(cache: Cache) -> None:
    assert isinstance(cache, SummaryCache)
    assert await cache.get_many([]) == {}
    assert await cache.get_many(["doc_summary:x:1"]) == {}
    await cache.set("doc_summary:a:1", "summary of a")
    await cache.set("doc_summary:b:2", "summary of b")
    got = await cache.get_many(["doc_summary:a:1", "doc_summary:missing:0", "doc_summary:b:2"])
    assert got == {"doc_summary:a:1": "summary of a", "doc_summary:b:2": "summary of b"}
    assert await cache.get_many(["doc_summary:a:1", "doc_summary:a:1"]) == {
        "doc_summary:a:1": "summary of a"
    }


async def test_overwrite(cache: Cache, clock: Clock) -> None:
    await cache.set("k", "old", ttl_seconds=10)
    await cache.set("k", "new", ttl_seconds=100)
    clock.now += 50  # past the old ttl: the overwrite also renewed it
    assert await cache.get_many(["k"]) == {"k": "new"}


async def test_expiry(cache: Cache, clock: Clock) -> None:
    await cache.set("short", "v", ttl_seconds=10)
    await cache.set("default", "v")
    clock.now += 9
    assert set(await cache.get_many(["short", "default"])) == {"short", "default"}
    clock.now += 1
    assert set(await cache.get_many(["short", "default"])) == {"default"}
    clock.now += DEFAULT_TTL_SECONDS - 10
    assert await cache.get_many(["short", "default"]) == {}
    assert DEFAULT_TTL_SECONDS == 7 * 24 * 3600


async def test_expired_rows_are_purged(
    cache: Cache, new_cache: Callable[[], Cache], clock: Clock
) -> None:
    await cache.set("a", "v", ttl_seconds=5)
    await cache.set("b", "v", ttl_seconds=5)
    await cache.set("c", "v", ttl_seconds=500)
    clock.now += 10
    assert await cache.purge_expired() == 2
    assert await _rows(cache) == 1
    # A fresh cache purges on its first write.
    fresh = new_cache()
    await fresh.set("d", "v", ttl_seconds=5)
    clock.now += 10
    await fresh.close()
    again = new_cache()
    await again.set("e", "v")
    await again.close()
    assert await _rows(cache) == 2  # c and e; d expired and went


async def test_rejects_non_positive_ttl(cache: Cache) -> None:
    with pytest.raises(ValueError):
        await cache.set("k", "v", ttl_seconds=0)


async def test_many_keys(cache: Cache) -> None:
    keys = [summary_cache_key(f"doc{i}", content_hash(str(i))) for i in range(1200)]
    for key in keys[::2]:
        await cache.set(key, key.upper())
    got = await cache.get_many(keys)
    assert got == {k: k.upper() for k in keys[::2]}


async def test_data_survives_reopening(tmp_path: Path) -> None:
    path = tmp_path / "scholarflow.db"
    async with SqliteSummaryCache(path) as cache:
        await cache.set("k", "v")
    async with SqliteSummaryCache(path) as reopened:
        assert await reopened.get_many(["k"]) == {"k": "v"}


async def test_runs_off_the_event_loop(tmp_path: Path) -> None:
    cache = SqliteSummaryCache(tmp_path / "scholarflow.db")
    loop_thread = threading.get_ident()
    seen: list[int] = []
    await cache.set("k", "v")
    await cache._db.run(lambda conn: conn.set_trace_callback(lambda _: seen.append(
        threading.get_ident())))
    await cache.set("k", "w")
    await cache.get_many(["k"])
    await cache.close()
    assert seen and loop_thread not in seen


async def test_default_cache_lives_in_scholarflow_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SCHOLARFLOW_HOME", str(tmp_path / "home"))
    cache = default_summary_cache()
    assert isinstance(cache, SqliteSummaryCache)
    assert cache.path == tmp_path / "home" / "scholarflow.db"
    await cache.set("k", "v")
    assert await cache.get_many(["k"]) == {"k": "v"}
    await cache.close()
