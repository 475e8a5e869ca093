"""The model endpoints' URLs, checked once before any call.

A URL no client can use ("not a url", a port over 65535, ftp://) fails the
same way on every attempt, so it is a ConfigurationError naming the setting,
raised when the context is built: never retried, and nothing is sent.
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit

from scholarflow.errors import ConfigurationError

OPENAI_BASE_URL_ENV = "OPENAI_BASE_URL"
EMBEDDING_MODEL_ENV = "SCHOLARFLOW_EMBEDDING_MODEL"
EMBEDDING_BASE_URL_ENV = "SCHOLARFLOW_EMBEDDING_BASE_URL"
EXAMPLE = "http://localhost:8000/v1"


def check_endpoint(url: str, setting: str) -> str:
    """`url` when it is an http(s) URL with a host and a valid port; else a
    ConfigurationError naming `setting`, the URL shown without its password."""
    import httpx  # here: every command builds a Context, not every one needs httpx

    try:
        parts = urlsplit(url.strip())
        usable = (parts.scheme.lower() in ("http", "https") and bool(parts.hostname)
                  and parts.port != 0  # .port raises ValueError when not a number 0-65535
                  and not any(c.isspace() for c in url.strip()))
        if usable:
            httpx.URL(url.strip())  # what the client will parse: spaces, bad characters
    except (ValueError, httpx.InvalidURL):
        usable = False
    if not usable:
        from scholarflow.sessions.services import redact_url  # late: sessions imports a lot

        hint = ("; percent-encode any '@', ':', '/', '?' or '#' in the user name or password"
                if "@" in url else "")
        raise ConfigurationError(
            f"{setting}={redact_url(url)!r} is not an http(s) URL with a host and a valid "
            f"port: set it to e.g. {EXAMPLE}{hint}")
    return url


def base_url_setting(base_url: str | None) -> str:
    """Which setting a chat endpoint came from: the variable, or the context's field."""
    env = os.environ.get(OPENAI_BASE_URL_ENV, "").strip()
    same = not base_url or base_url.strip() == env
    return OPENAI_BASE_URL_ENV if same else "openai_api_base"


def embedding_base_url() -> tuple[str | None, str]:
    """The embeddings endpoint and the variable it came from
    (SCHOLARFLOW_EMBEDDING_BASE_URL, else OPENAI_BASE_URL)."""
    for name in (EMBEDDING_BASE_URL_ENV, OPENAI_BASE_URL_ENV):
        if value := os.environ.get(name, "").strip():
            return value, name
    return None, EMBEDDING_BASE_URL_ENV


def check_endpoints(openai_api_base: str | None) -> None:
    """Check the chat endpoint and, when an embeddings model is set, its endpoint."""
    if openai_api_base:
        check_endpoint(openai_api_base, base_url_setting(openai_api_base))
    if os.environ.get(EMBEDDING_MODEL_ENV, "").strip():
        url, name = embedding_base_url()
        if url:
            check_endpoint(url, name)
