"""The process's configuration, read from the environment here and nowhere else.

An operator configures a scholarflow process (the CLI, a LangGraph server) with
environment variables: endpoints, keys, service URLs, process-wide limits. Each
one is a `Setting` of `Settings` below, with its variable, default, description
and parsing; every module reads them through `get_settings()`. The per-run
`Context` (context.py) takes its defaults from here, and a value its caller
passed always wins.

- A value is parsed when it is read, not when the settings are built: a bad
  one fails the command that needs it, with one ConfigurationError line that
  names the variable, and not a command that never reads it.
- Surrounding whitespace is ignored; a blank value is the same as unset.
- The service URLs (PostgreSQL, Redis, Elasticsearch, the recall API, the
  model endpoints) are checked by the code that connects, which checks a URL
  passed to it in code the same way; its error names the variable too.
- Keys are `Secret`s, whose repr and str are masked; the repr of `Settings`
  masks them and the passwords of its URLs, so it is safe in a log line.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Generic, TypeVar, overload

from scholarflow.errors import ConfigurationError
from scholarflow.url_secrets import redact_url

T = TypeVar("T")

DEFAULT_MODEL = "gpt-4o-mini"
DEFAULT_MAX_CONCURRENT_LLM_CALLS = 10
DEFAULT_LLM_TIMEOUT_SECONDS = 120.0
# Many OpenAI-compatible servers cap inputs per request (DashScope: 10,
# OpenAI: 2048); 32 is accepted by most and still amortises the round trip.
DEFAULT_EMBEDDING_BATCH_SIZE = 32
DEFAULT_TAVILY_URL = "https://api.tavily.com"
DEFAULT_BOCHA_URL = "https://api.bochaai.com"


# Not pydantic's SecretStr: `scholarflow --help` imports this module, and pydantic
# would add a tenth of a second to it.
@dataclass(frozen=True)
class Secret:
    """A key: `get_secret_value()` gives it; repr and str never do."""

    _value: str = field(repr=False)

    def get_secret_value(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('**********')"

    def __str__(self) -> str:
        return "**********"


def revealed(secret: Secret | None) -> str | None:
    """The key itself, for the one client that sends it; None when unset."""
    return None if secret is None else secret.get_secret_value()


class Setting(Generic[T]):
    """One environment variable: read on a `Settings`, its parsed value, else `default`."""

    def __init__(self, env: str, default: T, parse: Callable[[str, str], T], description: str,
                 *, secret: bool = False, url: bool = False) -> None:
        self.env = env
        self.default = default
        self.parse = parse  # (variable, value stripped, never blank) -> value; or raises
        self.description = description
        self.secret = secret
        self.url = url  # may carry a password: redacted in repr, scrubbed from errors
        self.name = ""

    def __set_name__(self, owner: type[Any], name: str) -> None:
        self.name = name

    @overload
    def __get__(self, settings: None, owner: type[Any] | None = None) -> Setting[T]: ...
    @overload
    def __get__(self, settings: Settings, owner: type[Any] | None = None) -> T: ...
    def __get__(self, settings: Settings | None, owner: type[Any] | None = None) -> Any:
        if settings is None:
            return self  # on the class: the setting itself (its variable, its default)
        raw = settings.value_of(self)
        return self.default if raw is None else self.parse(self.env, raw)

    def shown(self, raw: str) -> str:
        """The raw value as the repr of `Settings` shows it: no key, no URL password."""
        if self.secret:
            return repr(Secret(raw))
        if self.url:
            return repr(redact_url(raw))
        return repr(raw)


def _bad(env: str, rule: str, shown: str) -> ConfigurationError:
    return ConfigurationError(f"{env} must be {rule}, not {shown}: fix or unset {env}")


def _text(_env: str, raw: str) -> str:
    return raw


def _secret(_env: str, raw: str) -> Secret:
    return Secret(raw)


def _path(_env: str, raw: str) -> Path:
    return Path(raw).expanduser()


def _on(_env: str, _raw: str) -> bool:
    return True  # any value at all turns it on


def _switch(env: str, raw: str) -> bool:
    if raw.lower() not in {"0", "1", "true", "false"}:
        raise _bad(env, "0 or 1", repr(raw))
    return raw.lower() in {"1", "true"}


def _on_off(env: str, raw: str) -> bool:
    if raw.lower() not in {"on", "off", "1", "0", "true", "false"}:
        raise _bad(env, "on or off", repr(raw))
    return raw.lower() in {"on", "1", "true"}


def _count(rule: str) -> Callable[[str, str], int]:
    """A parser of whole numbers of at least 1; `rule` says what the number is."""
    def parse(env: str, raw: str) -> int:
        # isascii: "²" is a digit to isdigit() and not a number to int()
        if not (raw.isascii() and raw.isdigit()) or int(raw) < 1:
            raise _bad(env, rule, repr(raw))
        return int(raw)
    return parse


def _choice(*names: str) -> Callable[[str, str], str]:
    """A parser of one of `names` (case ignored)."""
    def parse(env: str, raw: str) -> str:
        if raw.lower() not in names:
            raise _bad(env, "one of " + ", ".join(names), repr(raw))
        return raw.lower()
    return parse


def _seconds(env: str, raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not 0 < value < float("inf"):  # also refuses nan
        raise _bad(env, "a number of seconds above 0, like 120 or 0.5", repr(raw))
    return value


def _http_url(env: str, raw: str) -> str:
    url = raw.rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise _bad(env, "an http(s) URL", repr(redact_url(raw)))
    return url


def server_url_problem(raw: str) -> str | None:
    """Why `raw` is not the address of a lab's server (http(s)://host[:port][/path], with
    no user, password, query or fragment: the token goes in a header), or None."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(raw)
        parts.port  # noqa: B018 - a port that is no number raises here
    except ValueError:
        return "not a URL"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "not an http(s) URL with a host, like https://lab.example.org"
    if parts.username is not None or parts.password is not None:
        return "a URL with a user or password in it (the token goes in SCHOLARFLOW_TOKEN)"
    if parts.query or parts.fragment:
        return "a URL with a query or fragment (the token goes in SCHOLARFLOW_TOKEN)"
    return None


def _server_url(env: str, raw: str) -> str:
    if (why := server_url_problem(raw)) is not None:
        raise ConfigurationError(f"{env} is {why}: fix or unset {env}")
    return raw.rstrip("/")


def _token(env: str, raw: str) -> Secret:
    # Never shown, not even in the error: printable ASCII without spaces, as a header needs.
    if not all("!" <= c <= "~" for c in raw):
        raise ConfigurationError(f"{env} holds spaces or characters a token never has (a "
                                 f"copy-paste mistake?): set it to the token alone")
    return Secret(raw)


_WHOLE = "a whole number of at least 1"


class Settings:
    """scholarflow's process configuration: one attribute per environment variable.

    `get_settings()` gives the process's; `Settings(mapping)` reads a mapping
    instead of the environment (`Settings()`: every default). Read-only.
    """

    __slots__ = ("_raw",)

    # The chat model (any OpenAI-compatible endpoint)
    model = Setting(
        "SCHOLARFLOW_MODEL", DEFAULT_MODEL, _text,
        "The chat model's name, when the context names none (model_name).")
    openai_base_url: Setting[str | None] = Setting(
        "OPENAI_BASE_URL", None, _text,
        "The OpenAI-compatible endpoint (DeepSeek, Qwen, vLLM, Ollama), when the context "
        "names none (openai_api_base); unset: OpenAI. The embeddings' and the reranker's "
        "too, unless theirs are set.", url=True)
    openai_api_key: Setting[Secret | None] = Setting(
        "OPENAI_API_KEY", None, _secret,
        "The endpoint's key, when the context gives none (openai_api_key); the embeddings' "
        "and the reranker's too.", secret=True)
    max_context_tokens: Setting[int | None] = Setting(
        "SCHOLARFLOW_MAX_CONTEXT_TOKENS", None,
        _count("the model's context window in tokens, a whole number like 8192"),
        "The model's context window in tokens: the default of max_context_tokens, over the "
        "window the server reports; unset: that report, else 128000.")
    llm_timeout_seconds = Setting(
        "SCHOLARFLOW_LLM_TIMEOUT", DEFAULT_LLM_TIMEOUT_SECONDS, _seconds,
        "Seconds an LLM call may wait for its first token (plus the same per 4,096 prompt "
        "tokens) and between two tokens: the default of llm_timeout_seconds.")
    max_concurrent_llm_calls = Setting(
        "SCHOLARFLOW_MAX_CONCURRENT_LLM_CALLS", DEFAULT_MAX_CONCURRENT_LLM_CALLS, _count(_WHOLE),
        "The process-wide cap on LLM calls in flight; on a server, the only way to set it.")
    adaptive_llm_limit = Setting(
        "SCHOLARFLOW_ADAPTIVE_LLM_LIMIT", True, _switch,
        "1: on a 429 the cap halves, and grows back by one per success; 0: a fixed cap. On a "
        "server, the only way to set it.")

    # Web search in chat
    tavily_api_key: Setting[Secret | None] = Setting(
        "TAVILY_API_KEY", None, _secret,
        "Tavily's key: the search engine when no context names one, unless only Bocha's key "
        "is set.", secret=True)
    bocha_api_key: Setting[Secret | None] = Setting(
        "BOCHA_API_KEY", None, _secret, "Bocha's key.", secret=True)
    tavily_url = Setting(
        "SCHOLARFLOW_TAVILY_URL", DEFAULT_TAVILY_URL, _http_url,
        "Tavily's API (a test server, a proxy).", url=True)
    bocha_url = Setting(
        "SCHOLARFLOW_BOCHA_URL", DEFAULT_BOCHA_URL, _http_url,
        "Bocha's API; a search is a POST to {url}/v1/web-search.", url=True)

    # Where data lives
    home = Setting(
        "SCHOLARFLOW_HOME", Path(".scholarflow"), _path,
        "The data folder: sessions, the summary cache, knowledge bases, locks.")
    database_url: Setting[str | None] = Setting(
        "SCHOLARFLOW_DATABASE_URL", None, _text,
        "PostgreSQL (postgresql://...): sessions and checkpoints, and the summary cache "
        "without Redis; unset: SQLite in the data folder.", url=True)
    redis_url: Setting[str | None] = Setting(
        "SCHOLARFLOW_REDIS_URL", None, _text,
        "Redis (redis://...): the document summary cache, shared by every process.", url=True)
    es_url: Setting[str | None] = Setting(
        "SCHOLARFLOW_ES_URL", None, _text,
        "Elasticsearch (http://host:9200): knowledge bases; unset: the embedded index.",
        url=True)
    recall_api_url: Setting[str | None] = Setting(
        "SCHOLARFLOW_RECALL_API_URL", None, _text,
        "An external recall service for stored documents, instead of the local index.",
        url=True)

    # Recall's models
    embedding_model: Setting[str | None] = Setting(
        "SCHOLARFLOW_EMBEDDING_MODEL", None, _text,
        "An OpenAI-compatible embeddings model; unset: the bundled local e5 model.")
    embedding_base_url: Setting[str | None] = Setting(
        "SCHOLARFLOW_EMBEDDING_BASE_URL", None, _text,
        "The embeddings endpoint; unset: OPENAI_BASE_URL.", url=True)
    embedding_batch_size = Setting(
        "SCHOLARFLOW_EMBEDDING_BATCH_SIZE", DEFAULT_EMBEDDING_BATCH_SIZE, _count(_WHOLE),
        "Texts per request to the embeddings endpoint.")
    rerank_model: Setting[str | None] = Setting(
        "SCHOLARFLOW_RERANK_MODEL", None, _text,
        "An OpenAI-compatible rerank model (POST {base}/rerank) for use_rerank; unset: a "
        "local re-scoring.")
    rerank_base_url: Setting[str | None] = Setting(
        "SCHOLARFLOW_RERANK_BASE_URL", None, _text,
        "The rerank endpoint; unset: OPENAI_BASE_URL.", url=True)

    # Ingest
    pdf_reader = Setting(
        "SCHOLARFLOW_PDF_READER", "pdfium", _choice("pdfium", "pypdf", "pymupdf"),
        "The PDF engine: pdfium (default, Apache/BSD), pypdf (pure Python) or pymupdf "
        "(AGPL: the opt-in extra scholarflow[pymupdf]).")
    ocr = Setting(
        "SCHOLARFLOW_OCR", "auto", _choice("auto", "tesseract", "rapidocr", "off"),
        "auto: scanned pages and pages whose fonts map to no characters are read by OCR: "
        "Tesseract when it is installed, with RapidOCR (the extra scholarflow[ocr]) for "
        "Chinese pages when both are, else whichever is; tesseract or rapidocr: that engine "
        "only; off: never (they are left out and named).")
    tesseract: Setting[Path | None] = Setting(
        "SCHOLARFLOW_TESSERACT", None, _path,
        "The Tesseract program OCR runs; unset: `tesseract` on the PATH.")
    ocr_page_seconds = Setting(
        "SCHOLARFLOW_OCR_PAGE_SECONDS", 60.0, _seconds,
        "Seconds OCR may spend on one page; a page over it is left out and named.")
    ocr_document_seconds = Setting(
        "SCHOLARFLOW_OCR_DOCUMENT_SECONDS", 900.0, _seconds,
        "Seconds OCR may spend on one document; the pages past it are left out and named.")

    # A lab's server (scholarflow/server/)
    server_auth = Setting(
        "SCHOLARFLOW_AUTH", True, _on_off,
        "on (default): the server asks every request for a person's token (`scholarflow "
        "users add NAME`); off: no token, and everything is the local person's (one person "
        "on localhost).")
    upload_max_bytes = Setting(
        "SCHOLARFLOW_UPLOAD_MAX_BYTES", 256_000_000, _count("a number of bytes, like 256000000"),
        "The largest file the server takes in one upload, in bytes.")
    upload_max_request_bytes = Setting(
        "SCHOLARFLOW_UPLOAD_MAX_REQUEST_BYTES", 1_000_000_000,
        _count("a number of bytes, like 1000000000"),
        "The largest upload request (all its files together), in bytes.")
    server: Setting[str | None] = Setting(
        "SCHOLARFLOW_SERVER", None, _server_url,
        "A lab's server for the CLI's ingest, kb, ask, resume and sessions (what --server "
        "gives); unset: this machine's data.", url=True)
    server_token: Setting[Secret | None] = Setting(
        "SCHOLARFLOW_TOKEN", None, _token,
        "Your token on that server (the operator's `scholarflow users add` prints it).",
        secret=True)

    debug = Setting(
        "SCHOLARFLOW_DEBUG", False, _on,
        "Any value: the CLI prints the (scrubbed) traceback of an unexpected error.")

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        source = environ or {}
        self._raw = {s.env: value for s in SETTINGS if (value := source.get(s.env, "").strip())}

    def value_of(self, setting: Setting[Any]) -> str | None:
        """The variable's value as set (stripped), unparsed; None when unset or blank."""
        return self._raw.get(setting.env)

    def is_set(self, setting: Setting[Any]) -> bool:
        """Whether the variable was set: its value, rather than its default, applies."""
        return setting.env in self._raw

    def urls(self) -> list[str]:
        """The values of the URL variables that are set, unparsed: every secret in them is
        scrubbed from error lines, that of a URL too bad to parse included."""
        return [self._raw[s.env] for s in SETTINGS if s.url and s.env in self._raw]

    def __repr__(self) -> str:
        shown = (f"{s.name}={s.shown(self._raw[s.env])}" for s in SETTINGS if s.env in self._raw)
        return f"Settings({', '.join(shown)})"


SETTINGS: tuple[Setting[Any], ...] = tuple(
    value for value in vars(Settings).values() if isinstance(value, Setting))


def get_settings() -> Settings:
    """The process's settings, from its environment.

    Built once per set of values: a variable changed since the last call (a test's
    monkeypatch, a forked child's environment) gives new settings, so they are never
    stale, and nothing needs resetting.
    """
    return _settings_for(tuple((s.env, value) for s in SETTINGS
                               if (value := os.environ.get(s.env, "").strip())))


@lru_cache(maxsize=1)
def _settings_for(values: tuple[tuple[str, str], ...]) -> Settings:
    return Settings(dict(values))
