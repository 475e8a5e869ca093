"""The one way to call the chat model, under the process-wide LLM cap.

Every LLM call goes through `complete` (no reader sees it as it comes) or
`stream`, which hold a slot of the process-wide `LLMLimiter` (llm/limiter.py)
for the whole call and give it back the moment the call ends; the limiter
adapts its limit to 429s and to latency (`Context.adaptive_llm_limit`). Every
call is streamed, so its timeout is on the first token and on the gaps between
tokens (llm/watch.py), never on a long reply; every call carries `max_tokens`.
Reasoning models' thoughts (llm/reasoning.py) go to thinking events, never into
the text. Errors come out typed (llm/errors.py): `RetryableLLMError` (429 as
its `RateLimitedLLMError`, 5xx, timeouts, dropped connections), retried by the
nodes' `LLM_RETRY` policy, and `FatalLLMError`. The client's own retries are
off so that the node policy is the only retry layer and a backoff never holds
a slot.

LangGraph's `messages` stream mode shows every chat model run of a node unless
the run is tagged `TAG_NOSTREAM`. So every model call here is tagged: the reader
is meant to see only the answer, `stream(..., visible=True)`, and that goes out
through `AnswerRelay` (llm/relay.py), a chat model run whose tokens are the text
as the reader gets it (after a `TextFilter`), so the streamed message adds up to
the answer saved in the thread (session_save gives it the same id).
"""

from __future__ import annotations

import inspect
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from langchain_core.messages import AIMessageChunk
from langchain_core.runnables import RunnableConfig
from langchain_openai import ChatOpenAI
from langgraph.constants import TAG_NOSTREAM
from langgraph.types import RetryPolicy

from scholarflow.context import MAX_CALLS_ENV, Context
from scholarflow.errors import (
    CutOffLLMError,
    FatalLLMError,
    RateLimitedLLMError,
    RetryableLLMError,
)
from scholarflow.events import Thinking
from scholarflow.llm import rates
from scholarflow.llm.budget import answer_reserve
from scholarflow.llm.errors import translate_api_error as translate_api_error  # re-exported
from scholarflow.llm.errors import translate_error
from scholarflow.llm.limiter import LLMLimiter as LLMLimiter  # re-exported
from scholarflow.llm.limiter import Slot
from scholarflow.llm.model import chat_model as chat_model  # re-exported
from scholarflow.llm.model import endpoint_key
from scholarflow.llm.prompt_guard import check_prompt
from scholarflow.llm.reasoning import Split, ThinkSplitter, saw_thought, thinks
from scholarflow.llm.relay import AnswerRelay
from scholarflow.llm.watch import StallWatch
from scholarflow.settings import DEFAULT_MAX_CONCURRENT_LLM_CALLS
from scholarflow.state import LLMUsage
from scholarflow.tokens import count_message_tokens, count_tokens

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


def _usage(node: str, ctx: Context, call: _StreamCall, started: float) -> LLMUsage:
    meta = call.last_usage.usage_metadata if call.last_usage is not None else None
    if meta:
        given, taken = meta["input_tokens"], meta["output_tokens"]
    else:  # servers that do not report usage when streaming (llama-cpp-python): count
        given = count_message_tokens([content for _, content in call.prompt])
        taken = count_tokens(call.text + "".join(call.reasoning))
    usage = LLMUsage(node=node, model=ctx.model_name or "", input_tokens=given,
                     output_tokens=taken, seconds=round(time.perf_counter() - started, 4))
    logger.debug("llm call %s", usage)
    return usage


async def complete(ctx: Context, prompt: Prompt, *, node: str, max_tokens: int | None = None,
                   on_reasoning: Callable[[str], None] | None = None,
                   temperature: float | None = None) -> LLMResult:
    """One call whose text no reader sees as it comes (intent, planning, translations,
    summaries, partial reports, compression); never shown in `messages` stream mode.

    It is streamed all the same, so its timeouts are on the first token and the gaps
    (llm/watch.py). `max_tokens` bounds the reply (default: `budget.answer_reserve`).
    The model's reasoning goes to `on_reasoning`, by default the node's thinking events.
    `temperature` overrides the context's for this call.
    """
    thinking = on_reasoning or Thinking(ctx.show_thinking, node).stream
    return await stream(ctx, prompt, node=node, on_text=_ignore, on_reasoning=thinking,
                        max_tokens=max_tokens, temperature=temperature)


def _ignore(_: str) -> None:
    pass


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
    temperature: float | None = None,
) -> LLMResult:
    """One streamed call through the limiter; `on_text` gets each piece as it goes out.

    `visible`: the answer the user reads; its text streams in `messages` stream mode
    too, as one message whose id is the result's `message_id`. Everything else stays
    hidden. `text_filter` rewrites the text before anyone sees it, so what streamed
    in any mode is exactly the result's `text`. Reasoning (`<think>` blocks and
    `reasoning_content`) goes to `on_reasoning` only. A failure after text went out to
    a reader (`visible`, or an `on_text` of the caller's) is fatal: retrying would
    repeat what the reader already saw; a `complete` call is simply retried.
    `temperature` overrides the context's for this call.
    """
    model = chat_model(ctx, temperature)
    limit = max_tokens or answer_reserve(ctx)
    if thinks(endpoint_key(ctx)):  # its thought counts against max_tokens: a short bound
        limit = max(limit, answer_reserve(ctx))  # would leave no room for the reply
    prompt_tokens = check_prompt(ctx, prompt, limit)  # never send what the window cannot hold
    call = _StreamCall(ctx, model, prompt, node, on_text, on_reasoning, text_filter, limit)
    message_id = None
    async with limiter(ctx).slot(prompt_tokens=prompt_tokens) as slot:
        started = time.perf_counter()
        with StallWatch(endpoint_key(ctx), ctx.llm_timeout_seconds, prompt_tokens,
                        on_first=slot.first_token) as watch:
            call.watch = watch
            if visible:
                message_id = await call.relay()
            else:
                async for _ in call.pieces():
                    pass
        _measure(ctx, call, slot, prompt_tokens)
    return LLMResult(
        text=call.text,
        usage=_usage(node, ctx, call, started),
        reasoning="".join(call.reasoning),
        message_id=message_id,
    )


def _measure(ctx: Context, call: _StreamCall, slot: Slot, prompt_tokens: int) -> None:
    """Add the call's speed to its endpoint's record (llm/rates.py), on the limiter's
    clock, which stands still while the event loop runs late."""
    if slot.first_token_at is None:
        return
    reply = count_tokens(call.text + "".join(call.reasoning))
    rates.record(endpoint_key(ctx), rates.Sample(
        prompt_tokens=prompt_tokens, reading_seconds=slot.first_token_at - slot.started,
        reply_tokens=reply, writing_seconds=slot.clock() - slot.first_token_at,
        alone=slot.load == 1))


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
        self.watch: StallWatch | None = None
        self.splitter = ThinkSplitter(endpoint_key(ctx))
        self.sent: list[str] = []
        # Leading whitespace waits for text: an answer of nothing but whitespace is an
        # empty answer (retried), and must not have shown a blank message first.
        self.held = ""
        self.reasoning: list[str] = []
        self.last_usage: AIMessageChunk | None = None
        self.finished = False  # a chunk said why the model stopped (finish_reason)
        # Someone saw the text as it came: a retry would repeat it, so a failure after
        # text is fatal. A hidden call (`complete`) is simply tried again.
        self.seen = on_text is not _ignore

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
        assert self.watch is not None
        chunks = aiter(self.model.astream(list(self.prompt), config=_hidden(self.node),
                                          max_tokens=self.max_tokens))
        try:
            while True:
                try:
                    chunk = await self.watch.next(chunks)
                except StopAsyncIteration:
                    break
                if chunk.usage_metadata:  # arrives once, in the last chunk
                    self.last_usage = chunk
                if chunk.response_metadata.get("finish_reason"):
                    self.finished = True
                if thought := chunk.additional_kwargs.get("reasoning_content"):
                    self._think(str(thought))
                if (text := chunk.text) and (
                        piece := await self._answer(self.splitter.feed(text))):
                    yield piece
            if not self.finished:
                # The connection closed before the model said it was done: a server that
                # drops a request for a newer one (llama-cpp-python's interrupt_requests),
                # a proxy that timed out. What came is not the whole reply.
                raise CutOffLLMError(
                    f"the reply of model {self.ctx.model_name!r} broke off before it finished "
                    "(the server ended the stream): if the server serves one request at a "
                    f"time and drops one for the next, lower {MAX_CALLS_ENV} to 1")
            if piece := await self._answer(self.splitter.flush(), last=True):
                yield piece
        except RetryableLLMError as exc:
            if self.sent and self.seen:
                raise FatalLLMError(f"the answer stream broke off: {exc}") from exc
            raise
        except Exception as exc:
            error = translate_error(exc, self.ctx)
            if self.sent and self.seen and isinstance(error, RetryableLLMError):
                raise FatalLLMError(f"the answer stream broke off: {error}") from exc
            raise error from exc

    def _think(self, thought: str) -> None:
        saw_thought(endpoint_key(self.ctx))
        self.reasoning.append(thought)
        if self.on_reasoning is not None:
            self.on_reasoning(thought)

    async def _answer(self, split: Split, *, last: bool = False) -> str:
        """What of the model's answer text goes out now, its thought set apart."""
        if split.restart:  # what went out so far was thought (see llm/reasoning.py)
            self._think(self.text)
            self.sent, self.held = [], ""
        if split.thought:
            self._think(split.thought)
        filt = self.text_filter
        text = await _filtered(filt.feed(split.answer)) if filt and split.answer else split.answer
        if last and filt is not None:
            text += await _filtered(filt.flush())
        return self._out(text) if text else ""

    def _out(self, text: str) -> str:
        """`text` to send now (given to `on_text`), or "" while there is only whitespace."""
        if not self.sent and not (self.held + text).strip():
            self.held += text
            return ""
        piece, self.held = self.held + text, ""
        self.sent.append(piece)
        self.on_text(piece)
        return piece
