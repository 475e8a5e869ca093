"""The summary cache in Redis (`SCHOLARFLOW_REDIS_URL`), shared by every user and process.

Keys are the shared `doc_summary:{doc_id}:{content_hash}`; reads are one
MGET, writes one SET with EX (7 days unless told), so an overwrite (a
`refresh_summary_cache` run) renews the expiry too. redis-py is imported
when the cache is first used.

A cache is an optimisation, so Redis going away during a run must not fail
the run: after the first successful command, a failure logs one warning,
reads become misses and writes are skipped, and Redis is tried again after
`retry_after_seconds`. Redis unreachable from the start is different: that
is a wrong URL or a stopped server, reported as one error naming the variable.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Sequence
from typing import TYPE_CHECKING, Any, cast

from scholarflow.errors import ConfigurationError
from scholarflow.storage.services import (
    REDIS_SCHEMES,
    REDIS_URL_ENV,
    check_scheme,
    failure_reason,
    unreachable,
)
from scholarflow.storage.summary_cache import DEFAULT_TTL_SECONDS, ClosesOnExit, check_ttl
from scholarflow.url_secrets import redact_url, scrub

if TYPE_CHECKING:
    from redis.asyncio import Redis

logger = logging.getLogger(__name__)

CONNECT_TIMEOUT_SECONDS = 5.0
SOCKET_TIMEOUT_SECONDS = 5.0
RETRY_AFTER_SECONDS = 30.0


class RedisSummaryCache(ClosesOnExit):
    """SummaryCache on Redis; see the module docstring for what happens when Redis fails."""

    def __init__(
        self,
        url: str,
        *,
        env_name: str = REDIS_URL_ENV,
        connect_timeout: float = CONNECT_TIMEOUT_SECONDS,
        socket_timeout: float = SOCKET_TIMEOUT_SECONDS,
        retry_after_seconds: float = RETRY_AFTER_SECONDS,
    ) -> None:
        self.env_name = env_name
        self.url = check_scheme(url, env_name, REDIS_SCHEMES, "redis://localhost:6379/0")
        self._connect_timeout = connect_timeout
        self._socket_timeout = socket_timeout
        self._retry_after = retry_after_seconds
        self._client: Redis | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._reached = False  # some command has succeeded: failures now mean "lost"
        self._lost = False  # in an outage: warned once, skipping Redis until _retry_at
        self._retry_at = 0.0

    def _redis(self) -> Redis:
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            # A client's connections belong to the loop that made them.
            from redis.asyncio import Redis
            from redis.asyncio.retry import Retry
            from redis.backoff import NoBackoff

            try:
                self._client = Redis.from_url(
                    self.url, decode_responses=True,
                    socket_connect_timeout=self._connect_timeout,
                    socket_timeout=self._socket_timeout,
                    # One immediate retry covers a pooled connection the server closed;
                    # more would only delay a run whose Redis is gone.
                    retry=Retry(NoBackoff(), 1),
                )
            except ValueError as exc:
                reason = scrub(" ".join(str(exc).split()), self.url)
                raise ConfigurationError(
                    f"{self.env_name} is not a usable Redis URL ({redact_url(self.url)}): "
                    f"{reason}; correct it or unset it"
                ) from None
            self._loop = loop
        return self._client

    async def close(self) -> None:
        """Close the connections if this loop opened them; a later call opens new ones."""
        client, self._client = self._client, None
        if client is not None and self._loop is asyncio.get_running_loop():
            await client.aclose()

    async def check(self) -> None:
        """Reach Redis now: BackendUnavailableError naming the variable when it cannot."""
        from redis.exceptions import RedisError

        try:
            await cast(Awaitable[bool], self._redis().ping())  # typed sync|async
        except (RedisError, OSError) as exc:
            raise unreachable("Redis", self.env_name, self.url, exc) from None
        self._succeeded()

    async def get_many(self, keys: Sequence[str]) -> dict[str, str]:
        unique = list(dict.fromkeys(keys))
        if not unique or self._skipping():
            return {}
        from redis.exceptions import RedisError

        try:
            values: list[Any] = await self._redis().mget(unique)
        except (RedisError, OSError) as exc:
            self._failed(exc)
            return {}
        self._succeeded()
        return {k: v for k, v in zip(unique, values, strict=True) if v is not None}

    async def set(self, key: str, value: str, ttl_seconds: int = DEFAULT_TTL_SECONDS) -> None:
        check_ttl(ttl_seconds)
        if self._skipping():
            return
        from redis.exceptions import RedisError

        try:
            await self._redis().set(key, value, ex=ttl_seconds)
        except (RedisError, OSError) as exc:
            self._failed(exc)
            return
        self._succeeded()

    @property
    def available(self) -> bool:
        """False while Redis is lost and skipped."""
        return not self._lost

    def _skipping(self) -> bool:
        return self._lost and time.monotonic() < self._retry_at

    def _succeeded(self) -> None:
        self._reached = True
        if self._lost:
            self._lost = False
            logger.warning("Redis at %s is back: using the summary cache again", self.env_name)

    def _failed(self, exc: BaseException) -> None:
        if not self._reached:
            raise unreachable("Redis", self.env_name, self.url, exc) from None
        if not self._lost:
            logger.warning(
                "lost the connection to Redis at %s (%s): %s; going on without the "
                "summary cache, trying again in %.0f s",
                self.env_name, redact_url(self.url), failure_reason(exc, self.url),
                self._retry_after,
            )
        self._lost = True
        self._retry_at = time.monotonic() + self._retry_after
