"""The one place that builds chat models and applies the process-wide LLM cap.

Every LLM call, streamed or not, goes through `complete` or `stream`, which
hold a slot of the process-wide `LLMLimiter` (llm_limiter.py) for the whole
call and give it back the moment the call ends; a 429 halves the limiter's
limit and successes grow it back (`Context.adaptive_llm_limit`). Errors come
out typed: `RetryableLLMError` (429 as its `RateLimitedLLMError`, 5xx,
timeouts, dropped connections), retried by the nodes' `LLM_RETRY` policy, and
`FatalLLMError`. The client's own retries are off so
that the node policy is the only retry layer and a backoff never holds a slot.

LangGraph's `messages` stream mode shows every chat model run of a node unless
the run is tagged `TAG_NOSTREAM`. So every model call here is tagged: the reader
is meant to see only the answer, `stream(..., visible=True)`, and that goes out
through `AnswerRelay` (llm_relay.py), a chat model run whose tokens are the text
as the reader gets it (after a `TextFilter`), so the streamed message adds up to
the answer saved in the thread (session_save gives it the same id).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol

import httpx
import openai
from langchain_core.messages import AIMessage, AIMessageChunk
from langchain_core.runnables import RunnableConfig
from langchain_openai import ChatOpenAI
from langgraph.constants import TAG_NOSTREAM
from langgraph.runtime import get_runtime
from langgraph.types import RetryPolicy

from scholarflow.budget import answer_reserve
from scholarflow.context import (
    DEFAULT_MAX_CONCURRENT_LLM_CALLS,
    LLM_TIMEOUT_ENV,
    MAX_CALLS_ENV,
    Context,
)
from scholarflow.endpoints import base_url_setting
from scholarflow.errors import (
    ConfigurationError,
    FatalLLMError,
    RateLimitedLLMError,
    RetryableLLMError,
)
from scholarflow.llm_limiter import LLMLimiter as LLMLimiter  # re-exported: its old home
from scholarflow.llm_limiter import retry_after_seconds
from scholarflow.llm_relay import AnswerRelay
from scholarflow.prompt_guard import check_prompt
from scholarflow.scrub import scrub_secrets
from scholarflow.sessions.services import redact_url
from scholarflow.state import LLMUsage

logger = logging.getLogger(__name__)

Prompt = Sequence[tuple[str, str]]  # (role, content) pairs: "system", "user", "assistant"

# A 429 says "not now", not "broken": it gets more attempts than other failures
# (8, i.e. up to ~30 s of backoff) so a rate-limited document is slowed, not lost,
# while the adaptive limit brings the calls in flight down. A 5xx or a timeout
# gets 4. LangGraph uses the first policy whose retry_on matches; the attempt
# count is the node's total. Its jitter adds 0-1 s to every wait.
RATE_LIMIT_RETRY = RetryPolicy(
    initial_interval=0.5,
    backoff_factor=2.0,
    max_interval=8.0,
    max_attempts=8,
    jitter=True,
    retry_on=RateLimitedLLMError,
)
ERROR_RETRY = RetryPolicy(
    initial_interval=0.5,
    backoff_factor=2.0,
    max_interval=8.0,
    max_attempts=4,
    jitter=True,
    retry_on=RetryableLLMError,
)
LLM_RETRY: tuple[RetryPolicy, ...] = (RATE_LIMIT_RETRY, ERROR_RETRY)


_LIMITER = LLMLimiter(DEFAULT_MAX_CONCURRENT_LLM_CALLS)


def limiter(ctx: Context | None = None) -> LLMLimiter:
    """The process-wide limiter, set up by the latest context that asked for it.

    On LangGraph server no run's context can change it (ServedContext has no
    such fields): it comes from the server's environment.
    """
    if ctx is not None:
        if ctx.max_concurrent_llm_calls != _LIMITER.max_capacity:
            _LIMITER.set_capacity(ctx.max_concurrent_llm_calls)
        _LIMITER.adaptive = ctx.adaptive_llm_limit
    return _LIMITER


@dataclass(frozen=True, slots=True)
class LLMResult:
    text: str
    usage: LLMUsage
    reasoning: str = ""
    # The id of the message `messages` stream mode showed (stream(visible=True)); None
    # when nothing was shown. The answer saved in the thread takes it, so a client
    # that saw the tokens gets that message, not a second one.
    message_id: str | None = None


class TextFilter(Protocol):
    """Rewrites streamed text before anyone sees it (e.g. citations.CitationFilter).

    Either method may be a coroutine: a filter that must look something up (an
    embedder scoring a sentence) holds the text back meanwhile.
    """

    def feed(self, text: str) -> str | Awaitable[str]:
        """What of the text so far can go out now (it may hold some back)."""
        ...

    def flush(self) -> str | Awaitable[str]:
        """What it held back, and anything to add at the end, once the model is done."""
        ...


async def _filtered(out: str | Awaitable[str]) -> str:
    return await out if inspect.isawaitable(out) else out


def _hidden(node: str) -> RunnableConfig:
    """The config of a model call that `messages` stream mode must not show."""
    return {"tags": [TAG_NOSTREAM], "run_name": node}


def chat_model(ctx: Context) -> ChatOpenAI:
    """The chat model for this context; one instance (and connection pool) per endpoint."""
    if not ctx.llm_configured:
        raise ConfigurationError(
            "no LLM configured: set OPENAI_API_KEY (and OPENAI_BASE_URL for DeepSeek, "
            "Qwen, vLLM or Ollama), or pass openai_api_key in the context (on LangGraph "
            "server: in the server's environment)"
        )
    assert ctx.model_name is not None  # filled by Context.__post_init__
    return _cached_model(
        ctx.model_name, ctx.openai_api_base, ctx.openai_api_key,
        ctx.llm_timeout_seconds, ctx.temperature,
    )


@lru_cache(maxsize=32)
def _cached_model(
    model: str, base_url: str | None, api_key: str | None, timeout: float, temperature: float
) -> ChatOpenAI:
    return ChatOpenAI(
        model=model,
        base_url=base_url,
        # Local servers (vLLM, Ollama) need no key, but the client insists on one.
        api_key=api_key or "not-needed",  # type: ignore[arg-type]
        timeout=timeout,
        max_retries=0,
        temperature=temperature,
        stream_usage=True,
        # A per-chunk asyncio.wait_for costs a task and a timer per token; a
        # stalled stream still hits the client's read timeout above.
        stream_chunk_timeout=None,
    )


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
    if isinstance(exc, openai.APITimeoutError | asyncio.TimeoutError | httpx.TimeoutException):
        fix = f"raise {timeout_setting} or check the server" if timeout_setting else (
            "check that the server is running and not overloaded")
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


def _usage(node: str, ctx: Context, message: AIMessage | None, started: float) -> LLMUsage:
    meta = message.usage_metadata if message is not None else None
    usage = LLMUsage(
        node=node,
        model=ctx.model_name or "",
        input_tokens=meta["input_tokens"] if meta else 0,
        output_tokens=meta["output_tokens"] if meta else 0,
        seconds=round(time.perf_counter() - started, 4),
    )
    logger.debug("llm call %s", usage)
    return usage


async def complete(ctx: Context, prompt: Prompt, *, node: str,
                   max_tokens: int | None = None) -> LLMResult:
    """One non-streamed call through the limiter; never shown in `messages` stream mode
    (intent, planning, translations, summaries, partial reports, compression).

    `max_tokens` bounds the reply (default: `budget.answer_reserve`)."""
    model = chat_model(ctx)
    limit = max_tokens or answer_reserve(ctx)
    check_prompt(ctx, prompt, limit)  # never send what the window cannot hold
    async with limiter(ctx).slot():
        started = time.perf_counter()
        try:
            message = await model.ainvoke(list(prompt), config=_hidden(node),
                                          max_tokens=limit)
        except Exception as exc:
            raise translate_error(exc, ctx) from exc
    return LLMResult(text=message.text, usage=_usage(node, ctx, message, started))


async def stream(
    ctx: Context,
    prompt: Prompt,
    *,
    node: str,
    on_text: Callable[[str], None],
    on_reasoning: Callable[[str], None] | None = None,
    visible: bool = False,
    text_filter: TextFilter | None = None,
    max_tokens: int | None = None,
) -> LLMResult:
    """One streamed call through the limiter; `on_text` gets each piece as it goes out.

    `visible`: the answer the user reads; its text streams in `messages` stream mode
    too, as one message whose id is the result's `message_id`. Everything else stays
    hidden. `text_filter` rewrites the text before anyone sees it, so what streamed
    in any mode is exactly the result's `text`. A failure after text went out is
    fatal: retrying would repeat what the reader already saw.
    """
    model = chat_model(ctx)
    limit = max_tokens or answer_reserve(ctx)
    check_prompt(ctx, prompt, limit)  # never send what the window cannot hold
    call = _StreamCall(ctx, model, prompt, node, on_text, on_reasoning, text_filter, limit)
    message_id = None
    async with limiter(ctx).slot():
        started = time.perf_counter()
        if visible:
            message_id = await call.relay()
        else:
            async for _ in call.pieces():
                pass
    return LLMResult(
        text=call.text,
        usage=_usage(node, ctx, call.last_usage, started),
        reasoning="".join(call.reasoning),
        message_id=message_id,
    )


class _Unanswered(Exception):
    """The model gave only whitespace: the visible run ends showing no message."""


class _StreamCall:
    """One streamed model call (hidden) and the text it shows the reader."""

    def __init__(self, ctx: Context, model: ChatOpenAI, prompt: Prompt, node: str,
                 on_text: Callable[[str], None], on_reasoning: Callable[[str], None] | None,
                 text_filter: TextFilter | None, max_tokens: int) -> None:
        self.ctx, self.model, self.prompt, self.node = ctx, model, prompt, node
        self.max_tokens = max_tokens
        self.on_text, self.on_reasoning, self.text_filter = on_text, on_reasoning, text_filter
        self.sent: list[str] = []
        # Leading whitespace waits for text: an answer of nothing but whitespace is an
        # empty answer (retried), and must not have shown a blank message first.
        self.held = ""
        self.reasoning: list[str] = []
        self.last_usage: AIMessageChunk | None = None

    @property
    def text(self) -> str:
        return "".join(self.sent) + self.held

    async def relay(self) -> str | None:
        """Stream through an `AnswerRelay` run; the id of the message it showed."""
        relay = AnswerRelay.of(self.ctx.model_name or "", self._shown())
        try:
            # Its input is only the question: the hidden call's trace has the whole prompt.
            message = await relay.ainvoke(list(self.prompt)[-1:],
                                          config={"run_name": self.node})
        except _Unanswered:
            return None
        return message.id

    async def _shown(self) -> AsyncIterator[str]:
        async for piece in self.pieces():
            yield piece
        if not self.sent:
            raise _Unanswered

    async def pieces(self) -> AsyncIterator[str]:
        """The text as the reader gets it, piece by piece; the model run itself is hidden."""
        filt = self.text_filter
        try:
            async for chunk in self.model.astream(list(self.prompt), config=_hidden(self.node),
                                                max_tokens=self.max_tokens):
                if chunk.usage_metadata:  # arrives once, in the last chunk
                    self.last_usage = chunk
                thought = chunk.additional_kwargs.get("reasoning_content")
                if thought and self.on_reasoning is not None:
                    self.reasoning.append(str(thought))
                    self.on_reasoning(str(thought))
                if (text := chunk.text) and (
                        piece := self._out(await _filtered(filt.feed(text)) if filt else text)):
                    yield piece
        except Exception as exc:
            error = translate_error(exc, self.ctx)
            if self.sent and isinstance(error, RetryableLLMError):
                raise FatalLLMError(f"the answer stream broke off: {error}") from exc
            raise error from exc
        if filt is not None and (piece := self._out(await _filtered(filt.flush()))):
            yield piece

    def _out(self, text: str) -> str:
        """`text` to send now (given to `on_text`), or "" while there is only whitespace."""
        if not self.sent and not (self.held + text).strip():
            self.held += text
            return ""
        piece, self.held = self.held + text, ""
        self.sent.append(piece)
        self.on_text(piece)
        return piece
