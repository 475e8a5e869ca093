"""Shared helpers for the networked services (PostgreSQL, Redis, Elasticsearch, the recall
API): variable names, URL checks and messages.

Every failure to reach a service becomes one line that names the variable,
shows the URL without its password, and says what to do. A driver's own
message may quote any part of a malformed URL (libpq: `invalid
percent-encoded token: "<password>"`), so every secret of the URL is scrubbed
from it too.
"""

from __future__ import annotations

import os
import re
from urllib.parse import urlsplit

from scholarflow.errors import BackendUnavailableError, ConfigurationError
from scholarflow.settings import SETTINGS, Settings, get_settings
from scholarflow.url_secrets import redact_url, scrub

DATABASE_URL_ENV = Settings.database_url.env
REDIS_URL_ENV = Settings.redis_url.env
ES_URL_ENV = Settings.es_url.env
RECALL_API_URL_ENV = Settings.recall_api_url.env
# Every variable whose URL may carry a password: their secrets are scrubbed from every
# error line, whichever code failed, since a library's message may quote the URL.
SECRET_URL_ENVS = tuple(setting.env for setting in SETTINGS if setting.url)
POSTGRES_SCHEMES = ("postgresql", "postgres")
REDIS_SCHEMES = ("redis", "rediss", "unix")
def scrub_env_urls(text: str) -> str:
    """`text` without any secret of the URLs in SECRET_URL_ENVS."""
    for url in get_settings().urls():
        text = scrub(text, url)
    return text


def check_scheme(url: str, env_name: str, schemes: tuple[str, ...], example: str) -> str:
    """The URL if its scheme is one of `schemes`; else a ConfigurationError naming the variable."""
    scheme = url.partition("://")[0].lower() if "://" in url else ""
    if scheme not in schemes:
        raise ConfigurationError(
            f"{env_name} must be a {schemes[0]}:// URL (e.g. {example}), "
            f"not {redact_url(url)!r}"
        )
    return url


def check_http_url(url: str, env_name: str, example: str) -> str:
    """The URL if it is http(s) with a host and a numeric port (if any); else a
    ConfigurationError naming the variable. A client's own error for such a URL may
    quote part of the password (an unencoded '#' or '/' ends the authority early)."""
    try:
        parts = urlsplit(url)
        # .port raises ValueError for a port that is not a number or out of range.
        usable = (parts.scheme.lower() in ("http", "https") and bool(parts.hostname)
                  and parts.port != 0)
    except ValueError:
        usable = False
    if not usable:
        raise ConfigurationError(
            f"{env_name} must be an http(s) URL with a host and an optional numeric port "
            f"(e.g. {example}), not {redact_url(url)!r}"
            # An unencoded '#' or '/' in a password is the likely cause when there is one.
            + ("; percent-encode any '@', ':', '/', '?' or '#' in the user name or password"
               if "@" in url else "")
        )
    return url


def failure_reason(exc: BaseException, url: str) -> str:
    """The useful part of a driver's error about `url`, on one line, without its secrets."""
    text = scrub(" ".join(str(exc).split()) or type(exc).__name__, url)
    # redis-py: "Error 111 connecting to host:port. ..." -> the errno's own words.
    if match := re.match(r"Error (\d+) connecting to [^ ]+\.", text):
        text = os.strerror(int(match[1]))
    # libpq: "connection failed: connection to server at ... failed: <reason>"
    text = text.rsplit(" failed: ", 1)[-1]
    text = re.sub(r"^(FATAL|ERROR):\s+", "", text)
    text = text.split(" Is the server running", 1)[0].rstrip(". ")
    if not text[1:2].isupper():  # "Connection refused" -> "connection refused"; "AUTH" stays
        text = text[:1].lower() + text[1:]
    return text[:300]


def unreachable(
    service: str, env_name: str, url: str, exc: BaseException
) -> BackendUnavailableError:
    """The error for a service that could not be reached at first use.

    The advice fits a stopped server and a wrong URL (unknown database or
    role, bad port or option) alike: the driver's reason says which.
    """
    return BackendUnavailableError(
        f"cannot connect to {service} at {env_name} ({redact_url(url)}): "
        f"{failure_reason(exc, url)}; check the URL in {env_name} and that {service} "
        "is running, or unset it"
    )


def failed(service: str, env_name: str, url: str, exc: BaseException) -> BackendUnavailableError:
    """The error for a service that failed after it had been reached."""
    return BackendUnavailableError(
        f"{service} at {env_name} ({redact_url(url)}) failed: {failure_reason(exc, url)}; "
        "check that it is running"
    )
