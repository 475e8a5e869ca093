"""Web search for chat: Tavily (tavily-python) or Bocha (its HTTP API), chosen by context.

Both backends answer with at most `max_results` `SearchResult`s. Every failure
(no key, HTTP error, timeout, unreadable answer) is one typed error whose
message is safe to show: it is built here, never copied from the service, so
the API key cannot leak through it. The chat goes on without search.

Endpoints can be moved for tests or proxies: `SCHOLARFLOW_TAVILY_URL`
(default https://api.tavily.com) and `SCHOLARFLOW_BOCHA_URL` (default
https://api.bochaai.com, the request goes to `{url}/v1/web-search`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlsplit

import httpx

from scholarflow.context import Context
from scholarflow.errors import ConfigurationError, ScholarflowError
from scholarflow.extras import require
from scholarflow.settings import DEFAULT_BOCHA_URL, DEFAULT_TAVILY_URL, Settings, get_settings

KEY_ENV = {"tavily": Settings.tavily_api_key.env, "bocha": Settings.bocha_api_key.env}
ENGINE_NAMES = {"tavily": "Tavily", "bocha": "Bocha"}
TIMEOUT_SECONDS = 15.0  # a chat waits for this; read at call time so tests can shorten it
MAX_QUERY_CHARS = 400  # Tavily rejects longer queries; a question this long is not a query
MAX_CONTENT_CHARS = 1_500  # per result: a few results must not crowd out the conversation
TAVILY_MAX_RESULTS = 20  # the services' own caps on one request
BOCHA_MAX_RESULTS = 50


class WebSearchUnavailableError(ConfigurationError):
    """Web search was asked for but has no API key."""


class WebSearchError(ScholarflowError):
    """The search service failed or answered with something unreadable."""


@dataclass(frozen=True, slots=True)
class SearchResult:
    title: str
    url: str
    content: str


class SearchBackend(Protocol):
    name: str

    async def search(self, query: str, max_results: int) -> list[SearchResult]: ...


async def web_search(ctx: Context, query: str) -> list[SearchResult]:
    """At most `ctx.max_results` results for `query` from the context's search engine."""
    backend = search_backend(ctx)
    results = await backend.search(query.strip()[:MAX_QUERY_CHARS], ctx.max_results)
    return results[: ctx.max_results]  # a service may send more than it was asked for


def search_backend(ctx: Context) -> SearchBackend:
    engine = ctx.search_engine
    if engine not in KEY_ENV:
        raise ConfigurationError(f"unknown search_engine {engine!r}: use 'tavily' or 'bocha'")
    key = ctx.search_engine_api_key
    if not key:
        raise WebSearchUnavailableError(
            f"no {ENGINE_NAMES[engine]} API key: set {KEY_ENV[engine]} to search the web"
        )
    if engine == "tavily":
        return TavilyBackend(key, get_settings().tavily_url)
    return BochaBackend(key, get_settings().bocha_url)


class TavilyBackend:
    """Tavily through the official async client (`tavily-python`)."""

    name = "Tavily"

    def __init__(self, api_key: str, base_url: str = DEFAULT_TAVILY_URL) -> None:
        self._key = api_key
        self._base_url = base_url

    async def search(self, query: str, max_results: int) -> list[SearchResult]:
        require("web", "web search with Tavily", instead="use search_engine bocha")
        from tavily import AsyncTavilyClient, errors  # type: ignore[import-untyped]

        sdk_errors = (errors.UsageLimitExceededError, errors.BadRequestError,
                      errors.ForbiddenError, errors.InvalidAPIKeyError, errors.TimeoutError,
                      errors.MissingAPIKeyError)
        try:
            # Keyless mode must never kick in: search_backend() only comes here with a key.
            async with AsyncTavilyClient(api_key=self._key,
                                         api_base_url=self._base_url) as client:
                body = await client.search(query, max_results=min(max_results, TAVILY_MAX_RESULTS),
                                           search_depth="basic", timeout=TIMEOUT_SECONDS)
        except errors.InvalidAPIKeyError:
            raise _rejected_key(self.name, 401) from None
        except errors.ForbiddenError:
            raise _rejected_key(self.name, 403) from None
        except errors.UsageLimitExceededError:
            raise WebSearchError("Tavily refused the search: usage limit exceeded (HTTP 429)"
                                 ) from None
        except errors.TimeoutError:
            raise _timed_out(self.name) from None
        except (httpx.HTTPError, ValueError, *sdk_errors) as exc:
            raise _failure(self.name, exc) from None
        if not isinstance(body, dict) or not isinstance(body.get("results"), list):
            raise WebSearchError("Tavily answered without a results list")
        return _results(body["results"], title="title", content=("content",))


class BochaBackend:
    """Bocha over its HTTP API: POST {url}/v1/web-search with a Bearer key."""

    name = "Bocha"

    def __init__(self, api_key: str, base_url: str = DEFAULT_BOCHA_URL) -> None:
        self._key = api_key
        self._url = f"{base_url}/v1/web-search"

    async def search(self, query: str, max_results: int) -> list[SearchResult]:
        payload = {"query": query, "count": min(max_results, BOCHA_MAX_RESULTS),
                   "summary": True, "freshness": "noLimit"}
        headers = {"Authorization": f"Bearer {self._key}"}
        try:
            async with httpx.AsyncClient(timeout=TIMEOUT_SECONDS) as client:
                response = await client.post(self._url, json=payload, headers=headers)
        except httpx.TimeoutException:
            raise _timed_out(self.name) from None
        except httpx.HTTPError as exc:
            raise _failure(self.name, exc) from None
        if response.status_code in (401, 403):
            raise _rejected_key(self.name, response.status_code)
        if response.status_code != 200:
            raise WebSearchError(f"Bocha answered HTTP {response.status_code}")
        try:
            body = response.json()
        except ValueError:
            raise WebSearchError("Bocha sent a response that is not JSON") from None
        return _bocha_results(body)


def _bocha_results(body: Any) -> list[SearchResult]:
    if not isinstance(body, dict):
        raise WebSearchError("Bocha sent a response of an unknown shape")
    code = body.get("code", 200)
    if str(code) != "200":  # errors can come inside a 200 answer, as {"code": "401", ...}
        if str(code) in ("401", "403"):
            raise _rejected_key("Bocha", int(str(code)))
        raise WebSearchError(f"Bocha answered with error code {str(code)[:10]}")
    data = body.get("data")
    pages = data.get("webPages") if isinstance(data, dict) else None
    if pages is None and isinstance(data, dict):
        return []  # Bocha leaves webPages out when nothing matched
    values = pages.get("value") if isinstance(pages, dict) else None
    if not isinstance(values, list):
        raise WebSearchError("Bocha sent a response without data.webPages.value")
    return _results(values, title="name", content=("summary", "snippet"))


def _results(raw: list[Any], *, title: str, content: tuple[str, ...]) -> list[SearchResult]:
    """The usable results: an http(s) URL and some text; titles and texts trimmed."""
    results: list[SearchResult] = []
    for item in raw:
        if not isinstance(item, dict):
            continue
        url = str(item.get("url") or "").strip()
        text = next((str(item[k]).strip() for k in content if item.get(k)), "")
        if not _is_web_url(url) or not text:
            continue
        name = " ".join(str(item.get(title) or "").split())[:200] or urlsplit(url).netloc
        results.append(SearchResult(title=name, url=url, content=text[:MAX_CONTENT_CHARS]))
    return results


def _is_web_url(url: str) -> bool:
    if len(url) > 2_000 or any(c.isspace() or c in '<>"' for c in url):
        return False
    parts = urlsplit(url)
    return parts.scheme in ("http", "https") and bool(parts.netloc)


def _rejected_key(engine: str, status: int) -> WebSearchError:
    env = KEY_ENV[engine.lower()]
    return WebSearchError(f"{engine} rejected the API key (HTTP {status}): check {env}")


def _timed_out(engine: str) -> WebSearchError:
    return WebSearchError(f"{engine} did not answer within {TIMEOUT_SECONDS:g} s")


def _failure(engine: str, exc: Exception) -> WebSearchError:
    # Built from the status or the error's type only: a service's own message may echo
    # the request, and the request carries the key.
    if isinstance(exc, httpx.HTTPStatusError):
        return WebSearchError(f"{engine} answered HTTP {exc.response.status_code}")
    if isinstance(exc, httpx.TimeoutException):
        return _timed_out(engine)
    if isinstance(exc, httpx.TransportError):
        return WebSearchError(f"could not reach {engine} ({type(exc).__name__})")
    if isinstance(exc, ValueError):
        return WebSearchError(f"{engine} sent a response that is not JSON")
    return WebSearchError(f"{engine} search failed ({type(exc).__name__})")
