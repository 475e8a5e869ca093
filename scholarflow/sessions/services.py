"""Shared helpers for the networked backends (PostgreSQL, Redis): variable names and messages.

Every failure to reach a service becomes one line that names the variable,
shows the URL without its password, and says what to do.
"""

from __future__ import annotations

import os
import re
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from scholarflow.errors import BackendUnavailableError, ConfigurationError

DATABASE_URL_ENV = "SCHOLARFLOW_DATABASE_URL"
REDIS_URL_ENV = "SCHOLARFLOW_REDIS_URL"
POSTGRES_SCHEMES = ("postgresql", "postgres")
REDIS_SCHEMES = ("redis", "rediss", "unix")
_SECRET_PARAMS = {"password", "passwd", "sslpassword"}


def env_url(name: str) -> str | None:
    """The variable's value, stripped; None when unset or blank."""
    return os.environ.get(name, "").strip() or None


def redact_url(url: str) -> str:
    """The URL with any password (in the authority or the query) replaced by ***."""
    try:
        parts = urlsplit(url)
        host = parts.netloc.rpartition("@")[2]
        netloc = parts.netloc
        if parts.password is not None:
            netloc = f"{parts.username or ''}:***@{host}"
        query = urlencode(
            [(k, "***" if k.lower() in _SECRET_PARAMS else v)
             for k, v in parse_qsl(parts.query, keep_blank_values=True)],
            safe="*",
        )
        return urlunsplit(parts._replace(netloc=netloc, query=query))
    except ValueError:
        return "<unparsable URL>"


def check_scheme(url: str, env_name: str, schemes: tuple[str, ...], example: str) -> str:
    """The URL if its scheme is one of `schemes`; else a ConfigurationError naming the variable."""
    scheme = url.partition("://")[0].lower() if "://" in url else ""
    if scheme not in schemes:
        raise ConfigurationError(
            f"{env_name} must be a {schemes[0]}:// URL (e.g. {example}), "
            f"not {redact_url(url)!r}"
        )
    return url


def failure_reason(exc: BaseException) -> str:
    """The useful part of a driver's connection error, on one line."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    # redis-py: "Error 111 connecting to host:port. ..." -> the errno's own words.
    if match := re.match(r"Error (\d+) connecting to [^ ]+\.", text):
        text = os.strerror(int(match[1]))
    # libpq: "connection failed: connection to server at ... failed: <reason>"
    text = text.rsplit(" failed: ", 1)[-1]
    text = re.sub(r"^(FATAL|ERROR):\s+", "", text)
    text = text.split(" Is the server running", 1)[0].rstrip(". ")
    return (text[:1].lower() + text[1:])[:300]


def unreachable(
    service: str, env_name: str, url: str, exc: BaseException
) -> BackendUnavailableError:
    """The error for a service that could not be reached at first use."""
    return BackendUnavailableError(
        f"cannot connect to {service} at {env_name} ({redact_url(url)}): "
        f"{failure_reason(exc)}; start it or unset the variable"
    )


def failed(service: str, env_name: str, url: str, exc: BaseException) -> BackendUnavailableError:
    """The error for a service that failed after it had been reached."""
    return BackendUnavailableError(
        f"{service} at {env_name} ({redact_url(url)}) failed: {failure_reason(exc)}; "
        "check that it is running"
    )
