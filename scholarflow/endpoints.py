"""The model endpoints' URLs, checked once before any call.

A URL no client can use ("not a url", a port over 65535, ftp://) fails the
same way on every attempt, so it is a ConfigurationError naming the setting,
raised when the context is built: never retried, and nothing is sent.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from scholarflow.errors import ConfigurationError
from scholarflow.settings import Settings, get_settings

OPENAI_BASE_URL_ENV = Settings.openai_base_url.env
EMBEDDING_BASE_URL_ENV = Settings.embedding_base_url.env
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
        from scholarflow.url_secrets import redact_url

        hint = ("; percent-encode any '@', ':', '/', '?' or '#' in the user name or password"
                if "@" in url else "")
        raise ConfigurationError(
            f"{setting}={redact_url(url)!r} is not an http(s) URL with a host and a valid "
            f"port: set it to e.g. {EXAMPLE}{hint}")
    return url


def base_url_setting(base_url: str | None) -> str:
    """Which setting a chat endpoint came from: the variable, or the context's field."""
    same = not base_url or base_url.strip() == (get_settings().openai_base_url or "")
    return OPENAI_BASE_URL_ENV if same else "openai_api_base"


def embedding_base_url() -> tuple[str | None, str]:
    """The embeddings endpoint and the variable it came from
    (SCHOLARFLOW_EMBEDDING_BASE_URL, else OPENAI_BASE_URL)."""
    settings = get_settings()
    if settings.embedding_base_url:
        return settings.embedding_base_url, EMBEDDING_BASE_URL_ENV
    if settings.openai_base_url:
        return settings.openai_base_url, OPENAI_BASE_URL_ENV
    return None, EMBEDDING_BASE_URL_ENV


def check_endpoints(openai_api_base: str | None) -> None:
    """Check the chat endpoint and, when an embeddings model is set, its endpoint."""
    if openai_api_base:
        check_endpoint(openai_api_base, base_url_setting(openai_api_base))
    if get_settings().embedding_model:
        url, name = embedding_base_url()
        if url:
            check_endpoint(url, name)
