"""RedisSummaryCache against the local Redis: keys, MGET/SET EX, TTL, overwrite, faults.

Every key is `doc_summary:<unique prefix>...` and is deleted afterwards.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import pytest
import redis.asyncio as aioredis

from scholarflow.errors import BackendUnavailableError, ConfigurationError
from scholarflow.ingest.documents import content_hash
from scholarflow.storage.redis_cache import RedisSummaryCache
from scholarflow.storage.summary_cache import DEFAULT_TTL_SECONDS, SummaryCache, summary_cache_key
from tests.support.tcp_proxy import TcpProxy


@pytest.fixture
async def raw(redis_url: str) -> AsyncIterator[aioredis.Redis]:
    client = aioredis.Redis.from_url(redis_url, decode_responses=True)
    yield client
    await client.aclose()


@pytest.fixture
async def cache(redis_url: str) -> AsyncIterator[RedisSummaryCache]:
    c = RedisSummaryCache(redis_url)
    yield c
    await c.close()


def key(prefix: str, name: str) -> str:
    return summary_cache_key(f"{prefix}-{name}", content_hash(name))


async def test_miss_hit_and_what_redis_holds(
    cache: RedisSummaryCache, raw: aioredis.Redis, redis_doc_prefix: str
) -> None:
    assert isinstance(cache, SummaryCache)
    a, b, missing = (key(redis_doc_prefix, n) for n in ("a", "b", "missing"))
    assert await cache.get_many([]) == {}
    assert await cache.get_many([a]) == {}
    await cache.set(a, "summary of a")
    await cache.set(b, "摘要 b")
    assert await cache.get_many([a, missing, b, a]) == {a: "summary of a", b: "摘要 b"}
    # A plain string under exactly the shared key, expiring in 7 days.
    assert a.startswith(f"doc_summary:{redis_doc_prefix}-a:")
    assert await raw.get(a) == "summary of a"
    ttl = await raw.ttl(a)
    assert DEFAULT_TTL_SECONDS - 60 <= ttl <= DEFAULT_TTL_SECONDS == 7 * 24 * 3600


async def test_overwrite_replaces_the_value_and_renews_the_expiry(
    cache: RedisSummaryCache, raw: aioredis.Redis, redis_doc_prefix: str
) -> None:
    k = key(redis_doc_prefix, "doc")
    await cache.set(k, "old", ttl_seconds=30)
    assert 0 < await raw.ttl(k) <= 30
    await cache.set(k, "new")
    assert await cache.get_many([k]) == {k: "new"}
    assert await raw.ttl(k) > DEFAULT_TTL_SECONDS - 60


async def test_shared_between_caches(redis_url: str, redis_doc_prefix: str) -> None:
    # Two processes (or users) with their own clients see one cache.
    k = key(redis_doc_prefix, "shared")
    async with RedisSummaryCache(redis_url) as one, RedisSummaryCache(redis_url) as two:
        await one.set(k, "from one")
        assert await two.get_many([k]) == {k: "from one"}


async def test_many_keys_in_one_call(cache: RedisSummaryCache, redis_doc_prefix: str) -> None:
    keys = [key(redis_doc_prefix, str(i)) for i in range(1200)]
    for k in keys[::2]:
        await cache.set(k, k.upper())
    assert await cache.get_many(keys) == {k: k.upper() for k in keys[::2]}


async def test_rejects_non_positive_ttl(cache: RedisSummaryCache) -> None:
    with pytest.raises(ValueError):
        await cache.set("doc_summary:x:y", "v", ttl_seconds=0)


async def test_unreachable_at_start_is_one_clear_error() -> None:
    # Port 1: nothing listens there. The password must not appear in the message.
    cache = RedisSummaryCache("redis://:s3cret@127.0.0.1:1/0")
    for call in (cache.check(), cache.get_many(["doc_summary:a:b"]),
                 cache.set("doc_summary:a:b", "v")):
        with pytest.raises(BackendUnavailableError) as info:
            await call
        assert str(info.value) == (
            "cannot connect to Redis at SCHOLARFLOW_REDIS_URL (redis://:***@127.0.0.1:1/0): "
            "connection refused; check the URL in SCHOLARFLOW_REDIS_URL and that Redis is "
            "running, or unset it"
        )
    await cache.close()


def test_a_url_that_is_not_redis_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match=r"SCHOLARFLOW_REDIS_URL must be a redis://"):
        RedisSummaryCache("http://127.0.0.1:6379")


async def test_lost_connection_degrades_to_misses_then_recovers(
    redis_url: str, redis_doc_prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    target = urlsplit(redis_url)
    proxy = await TcpProxy(target.hostname or "127.0.0.1", target.port or 6379).start()
    via_proxy = f"redis://127.0.0.1:{proxy.port}{target.path}"
    cache = RedisSummaryCache(via_proxy, retry_after_seconds=0.3)
    k, later = key(redis_doc_prefix, "kept"), key(redis_doc_prefix, "later")
    await cache.set(k, "cached")
    assert await cache.get_many([k]) == {k: "cached"}

    await proxy.close()  # Redis "goes away"
    caplog.set_level(logging.WARNING, logger="scholarflow.storage.redis_cache")
    assert await cache.get_many([k]) == {}  # a miss, not an error
    await cache.set(later, "not stored")  # skipped, not an error
    assert await cache.get_many([k]) == {}
    assert not cache.available
    lost = [r for r in caplog.records if "lost the connection to Redis" in r.getMessage()]
    assert len(lost) == 1
    assert "SCHOLARFLOW_REDIS_URL" in lost[0].getMessage()

    # The same address answers again: after retry_after_seconds the cache is back.
    proxy = await TcpProxy(target.hostname or "127.0.0.1", target.port or 6379).start(proxy.port)
    await asyncio.sleep(0.35)
    assert await cache.get_many([k, later]) == {k: "cached"}
    assert cache.available
    assert any("is back" in r.getMessage() for r in caplog.records)
    await cache.close()
    await proxy.close()


async def test_usable_from_another_event_loop(
    cache: RedisSummaryCache, redis_doc_prefix: str
) -> None:
    # As when the CLI or a server calls from a loop of its own.
    k = key(redis_doc_prefix, "loops")
    await cache.set(k, "v")

    def elsewhere() -> dict[str, str]:
        async def go() -> dict[str, str]:
            try:
                return await cache.get_many([k])
            finally:
                await cache.close()

        return asyncio.run(go())

    assert await asyncio.to_thread(elsewhere) == {k: "v"}
    assert await cache.get_many([k]) == {k: "v"}
