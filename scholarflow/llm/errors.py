"""LLM and embedding endpoint failures as typed, one-line errors that say what to do.

Retryable: 429 (as `RateLimitedLLMError`), 5xx, timeouts and dropped
connections, retried by the nodes' policies; anything else is fatal. The
endpoint is shown without its password, and no message holds the key.
"""

from __future__ import annotations

import asyncio

import httpx
import openai
from langgraph.runtime import get_runtime

from scholarflow.context import LLM_TIMEOUT_ENV, MAX_CALLS_ENV, Context
from scholarflow.endpoints import base_url_setting
from scholarflow.errors import FatalLLMError, RateLimitedLLMError, RetryableLLMError
from scholarflow.llm.limiter import retry_after_seconds
from scholarflow.llm.watch import StallTimeoutError
from scholarflow.scrub import scrub_secrets
from scholarflow.url_secrets import redact_url


def translate_error(exc: BaseException, ctx: Context) -> Exception:
    """A typed, one-line error for a failed chat call; never includes the key."""
    return translate_api_error(
        exc, kind="model", model=ctx.model_name or "", model_env="SCHOLARFLOW_MODEL",
        base_url=ctx.openai_api_base, timeout=ctx.llm_timeout_seconds,
        url_env=base_url_setting(ctx.openai_api_base),
        timeout_setting=f"{LLM_TIMEOUT_ENV} (--llm-timeout, llm_timeout_seconds)",
    )


def translate_api_error(
    exc: BaseException, *, kind: str, model: str, model_env: str, base_url: str | None,
    timeout: float, url_env: str = "OPENAI_BASE_URL", timeout_setting: str | None = None,
    attempts: int | None = None,
) -> Exception:
    """A typed, one-line error for a failed call to an OpenAI-compatible endpoint: what
    failed, then what to do. The endpoint is shown without its password.

    `kind` says what was called ("model", "embedding model"), `model_env` which
    setting names the model, `url_env` the endpoint, `timeout_setting` the timeout
    (None: not settable). `attempts`: how many tries this was, when a client retried;
    else the node's attempt (its RetryPolicy retries). Retryable: 429, 5xx, timeouts,
    dropped connections.
    """
    where = redact_url(base_url) if base_url else "the OpenAI API"
    tries = attempts if attempts is not None else _node_attempt()
    after = f" after {tries} attempts" if tries > 1 else ""
    if isinstance(exc, openai.RateLimitError):
        return RateLimitedLLMError(
            f"the {kind} endpoint {where} "
            + (f"kept rate limiting (429){after}" if after else "is rate limiting (429)")
            + f": lower {MAX_CALLS_ENV} or wait and retry",
            retry_after=retry_after_seconds(exc.response.headers),
        )
    # StallTimeoutError (no first token, or a gap, llm/watch.py) is an asyncio.TimeoutError.
    if isinstance(exc, openai.APITimeoutError | asyncio.TimeoutError | httpx.TimeoutException):
        fix = f"raise {timeout_setting} or check the server" if timeout_setting else (
            "check that the server is running and not overloaded")
        if isinstance(exc, StallTimeoutError):
            what = "stopped answering mid-reply for" if exc.started else "did not answer within"
            return RetryableLLMError(
                f"the {kind} at {where} {what} {exc.waited:g} s{after}: {fix}")
        return RetryableLLMError(
            f"the {kind} at {where} did not answer within {timeout:g} s{after}: {fix}")
    if isinstance(exc, openai.APIConnectionError | httpx.TransportError):
        return RetryableLLMError(f"cannot reach the {kind} at {where}{after}: check {url_env} "
                                 "and that the server is running")
    if isinstance(exc, openai.AuthenticationError | openai.PermissionDeniedError):
        return FatalLLMError(f"the {kind} endpoint {where} rejected the API key "
                             f"({exc.status_code}): check OPENAI_API_KEY")
    if isinstance(exc, openai.NotFoundError):
        return FatalLLMError(f"{kind} {model!r} was not found at {where} (404): check {model_env}, "
                             f"and that {url_env} ends in the API's path (e.g. /v1)")
    if isinstance(exc, openai.APIStatusError):
        if exc.status_code >= 500:
            return RetryableLLMError(
                f"the {kind} endpoint {where} failed with {exc.status_code}{after}: the server "
                "is failing; try again later or check its logs")
        return FatalLLMError(
            f"the {kind} endpoint {where} rejected the request ({exc.status_code}: "
            f"{_first_line(exc)}): check {model_env} and that the request suits this server")
    if isinstance(exc, Exception):
        return exc
    raise exc  # KeyboardInterrupt and friends are not ours to translate


def _node_attempt() -> int:
    """The running node's attempt (its RetryPolicy's count), 1 outside a graph run."""
    try:
        info = get_runtime().execution_info
    except Exception:  # not inside a node
        return 1
    return info.node_attempt if info is not None else 1


def _first_line(exc: BaseException) -> str:
    return scrub_secrets((str(exc).strip().splitlines() or [type(exc).__name__])[0][:200])
