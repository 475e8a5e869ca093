"""The connection to Elasticsearch: its URL, the client, index names and one-line errors."""

from __future__ import annotations

import hashlib
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from elastic_transport import ConnectionError as TransportConnectionError
from elastic_transport import ConnectionTimeout, TransportError
from elasticsearch import ApiError, AsyncElasticsearch

from scholarflow.errors import ConfigurationError, ScholarflowError
from scholarflow.settings import get_settings
from scholarflow.storage.services import ES_URL_ENV, check_http_url
from scholarflow.url_secrets import redact_url, scrub

ENV_URL = ES_URL_ENV
INDEX_PREFIX = "scholarflow-kb-"


class ElasticsearchUnavailableError(ConfigurationError):
    """SCHOLARFLOW_ES_URL does not answer (or is not a URL)."""


class ElasticsearchError(ScholarflowError):
    """Elasticsearch answered, but refused or failed the request."""


def index_name(kb_name: str) -> str:
    """`scholarflow-kb-<name>`, lowercase as ES demands; a name that lowercasing would
    change or fold into another ("Papers" vs "papers") gets a hash suffix: isolation."""
    if re.fullmatch(r"[a-z0-9][a-z0-9_.-]{0,150}", kb_name):
        return INDEX_PREFIX + kb_name
    slug = re.sub(r"[^a-z0-9_-]+", "-", kb_name.lower()).strip("-_")[:100] or "kb"
    digest = hashlib.sha256(kb_name.encode()).hexdigest()[:10]
    return f"{INDEX_PREFIX}{slug}-{digest}"


@asynccontextmanager
async def es_errors(url: str, what: str) -> AsyncIterator[None]:
    """Turn transport and API failures into one line a person can act on, without the
    URL's password (the client's text may quote the URL)."""
    try:
        yield
    except (TransportConnectionError, ConnectionTimeout) as exc:
        raise ElasticsearchUnavailableError(
            f"{ENV_URL}={redact_url(url)} is unreachable; could not {what} "
            f"({type(exc).__name__}); start Elasticsearch or fix the URL") from None
    except ApiError as exc:
        raise ElasticsearchError(scrub(
            f"Elasticsearch refused to {what} (HTTP {exc.meta.status}: {exc.message})", url
        )) from None
    except TransportError as exc:
        raise ElasticsearchError(scrub(f"could not {what} on Elasticsearch: {exc}", url)) from None


def connect(url: str | None, request_timeout: float = 30.0) -> tuple[AsyncElasticsearch, str]:
    """A client for `url` (default SCHOLARFLOW_ES_URL); a clear error for a missing or bad URL."""
    url = url or get_settings().es_url
    if not url:
        raise ConfigurationError(f"{ENV_URL} is not set; it names the Elasticsearch server")
    check_http_url(url, ENV_URL, "http://127.0.0.1:9200")
    try:
        # One retry: a dead URL should fail in seconds, with one clear line.
        return AsyncElasticsearch(url, request_timeout=request_timeout, max_retries=1), url
    except ValueError as exc:
        raise ElasticsearchUnavailableError(
            f"{ENV_URL}={redact_url(url)} is not a usable URL ({scrub(str(exc), url)})"
        ) from None
