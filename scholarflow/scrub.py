"""One scrubbing of every error before it is stored or printed.

`scrub_secrets(text)` removes every secret scholarflow knows of from a line:
- the passwords of the service URLs in the environment, in every form a
  driver may quote (sessions.services.scrub_env_urls);
- the password of any URL in the text (scheme://user:PASSWORD@host);
- the values of the API keys in the environment (OPENAI_API_KEY,
  SCHOLARFLOW_*_API_KEY, TAVILY_API_KEY, BOCHA_API_KEY, any *_API_KEY,
  *_TOKEN, *_SECRET, *_PASSWORD) and of the keys a run's context was given
  (`remember`), as written and percent-encoded;
- what looks like a credential whoever it belongs to: `Bearer ...`, `sk-...`,
  `api_key=...`.

The node wrapper (nodes/guard.py), the error handler (nodes/errors.py), the
CLI's error line and the log filter all call it, so one place decides what a
secret is.
"""

from __future__ import annotations

import logging
import os
import re
import traceback
from collections.abc import Iterable
from urllib.parse import quote, quote_plus, unquote

MASK = "***"
# Environment variables whose values are secrets: the documented keys and the usual names.
_SECRET_ENV = re.compile(r"(API_?KEY|_TOKEN|_SECRET|PASSWORD|PASSWD)$", re.I)
_MIN_SECRET = 4  # shorter values cannot be told from ordinary words: left alone
_WHOLE_WORD_UNDER = 8  # shorter secrets are scrubbed only as whole words ("ollama")
# scheme://user:PASSWORD@host: the password runs to the last '@' before the path.
_URL_PASSWORD = re.compile(r"(\b[a-z][a-z0-9+.\-]*://[^\s:/?#@'\"]*):([^\s/?#'\"]*)@", re.I)
_BEARER = re.compile(r"\b(Bearer)\s+[A-Za-z0-9._~+/=\-]{6,}", re.I)
_KEY_LIKE = re.compile(r"\b(sk|tvly|sk-ant|sk-proj)-[A-Za-z0-9_\-]{6,}")
_ASSIGNED = re.compile(
    r"\b(api[_-]?key|apikey|access[_-]?token|auth[_-]?token|x-api-key|secret|client[_-]?secret)"
    r"(['\"]?\s*[=:]\s*['\"]?)(?!\*\*\*)([^\s'\"&,;)}]+)", re.I)

_remembered: set[str] = set()


def remember(*secrets: str | None) -> None:
    """Also scrub these values from now on (a run's context keys, which need not be in
    the environment). Kept in memory only, like the context that holds them."""
    _remembered.update(s for s in secrets if s and len(s.strip()) >= _MIN_SECRET)


def _known_secrets() -> list[str]:
    found = set(_remembered)
    found.update(value.strip() for name, value in os.environ.items()
                 if _SECRET_ENV.search(name) and len(value.strip()) >= _MIN_SECRET)
    forms = set(found)
    for secret in found:  # as a URL or a form would carry it
        forms.update({quote(secret, safe=""), quote_plus(secret), unquote(secret)})
    return sorted((f for f in forms if len(f) >= _MIN_SECRET), key=lambda s: (-len(s), s))


def _mask(text: str, secret: str) -> str:
    if len(secret) >= _WHOLE_WORD_UNDER:
        return text.replace(secret, MASK)
    return re.sub(rf"(?<![^\W_]){re.escape(secret)}(?![^\W_])", MASK, text)


def scrub_secrets(text: str, *extra: str | None) -> str:
    """`text` with every secret replaced by ***; `extra`: more values to remove."""
    for secret in sorted({s for s in extra if s and len(s) >= _MIN_SECRET} | set(_known_secrets()),
                         key=lambda s: (-len(s), s)):
        if secret in text:
            text = _mask(text, secret)
    from scholarflow.storage.services import scrub_env_urls

    text = scrub_env_urls(text)
    text = _URL_PASSWORD.sub(lambda m: f"{m[1]}:{MASK}@" if m[2] else m[0], text)
    text = _BEARER.sub(lambda m: f"{m[1]} {MASK}", text)
    text = _KEY_LIKE.sub(lambda m: f"{m[1]}-{MASK}", text)
    return _ASSIGNED.sub(lambda m: f"{m[1]}{m[2]}{MASK}", text)


def one_line(text: str, *, limit: int = 500) -> str:
    """The text's words on one line, scrubbed, at most `limit` characters."""
    line = scrub_secrets(" ".join(text.split()))
    return line if len(line) <= limit else line[:limit - 3] + "..."


def scrubbed_traceback(exc: BaseException) -> str:
    """The exception's whole traceback (its causes too), scrubbed: for debug logs."""
    return scrub_secrets("".join(traceback.format_exception(exc)))


class ScrubFilter(logging.Filter):
    """Rewrites each record's message and traceback without secrets before any handler
    formats it. On a handler it covers every logger whose records reach that handler."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a bad format string: log what there is
            message = str(record.msg)
        record.msg, record.args = scrub_secrets(message), None
        if record.exc_info and record.exc_info[1] is not None:
            record.exc_text = scrubbed_traceback(record.exc_info[1]).rstrip("\n")
            record.exc_info = None  # formatted above: no handler formats it again
        elif record.exc_text:
            record.exc_text = scrub_secrets(record.exc_text)
        if record.stack_info:
            record.stack_info = scrub_secrets(record.stack_info)
        return True


_FILTER = ScrubFilter()


def install_log_scrubbing(*loggers: logging.Logger) -> None:
    """Scrub every record the root logger's handlers (and the given loggers) emit.

    A filter on a logger does not see its children's records, so it goes on the
    handlers, where every propagated record passes; and on the scholarflow logger for
    handlers attached there directly.
    """
    targets: Iterable[logging.Filterer] = [
        *logging.getLogger().handlers, logging.getLogger("scholarflow"), *loggers]
    for target in targets:
        if _FILTER not in target.filters:
            target.addFilter(_FILTER)
