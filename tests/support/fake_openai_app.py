"""The Starlette app of the fake OpenAI server: the OpenAI routes and the admin routes."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import math
import re
import struct
import time
import uuid
from collections import deque
from collections.abc import AsyncIterator
from typing import Any

from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import Message, Receive, Scope, Send

from scholarflow.tokens import count_message_tokens, count_tokens
from tests.support.fake_openai_state import (
    CJK_RANGES,
    ChatDecision,
    ConfigError,
    FakeState,
    content_text,
)

MODEL_ID = "fake-model"
EMBEDDING_DIM = 64
# A piece is one CJK char or one other word, each with its trailing whitespace;
# together the pieces rebuild the text exactly.
_PIECE = re.compile(rf"[{CJK_RANGES}]\s*|[^\s{CJK_RANGES}]+\s*|\s+")
_WORDS_PER_CHUNK = 3

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    404: "not_found_error",
    429: "rate_limit_exceeded",
}


def error_response(status: int, message: str, retry_after: str = "0") -> JSONResponse:
    kind = _ERROR_TYPES.get(status, "server_error")
    body = {"error": {"message": message, "type": kind, "param": None, "code": kind}}
    # Retry-After 0 by default lets clients that do retry go again at once, keeping
    # tests fast; the `retry_after` config sets another value.
    headers = {"Retry-After": retry_after} if status == 429 else None
    return JSONResponse(body, status_code=status, headers=headers)


def usage(messages: list[Any], reply: str) -> dict[str, int]:
    prompt = count_message_tokens(content_text(m) for m in messages)
    completion = count_tokens(reply)
    return {"prompt_tokens": prompt, "completion_tokens": completion,
            "total_tokens": prompt + completion}


def split_chunks(text: str) -> list[str]:
    pieces = _PIECE.findall(text)
    return ["".join(pieces[i:i + _WORDS_PER_CHUNK])
            for i in range(0, len(pieces), _WORDS_PER_CHUNK)]


def completion(model: str, reply: str, messages: list[Any]) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "system_fingerprint": None,
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": reply, "refusal": None},
            "logprobs": None,
            "finish_reason": "stop",
        }],
        "usage": usage(messages, reply),
    }


async def sse_events(
    model: str, reply: str, messages: list[Any], include_usage: bool,
    tokens_per_second: float = 0.0, reasoning: str = "", cut: bool = False,
    top_logprobs: int | None = None, logprobs: dict[str, float] | None = None,
    reasoning_field: str = "reasoning_content",
) -> AsyncIterator[str]:
    base: dict[str, Any] = {
        "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "system_fingerprint": None,
    }
    if include_usage:
        base["usage"] = None  # OpenAI sends null usage on every chunk but the last

    def event(delta: dict[str, Any], finish: str | None = None,
              alternatives: dict[str, Any] | None = None) -> str:
        choice = {"index": 0, "delta": delta, "logprobs": alternatives, "finish_reason": finish}
        return f"data: {json.dumps({**base, 'choices': [choice]})}\n\n"

    yield event({"role": "assistant", "content": ""})
    for chunk in split_chunks(reasoning) if reasoning else []:
        yield event({"content": None, reasoning_field: chunk})
    for n, chunk in enumerate(split_chunks(reply)):
        if tokens_per_second > 0:  # the model writes as it goes
            await asyncio.sleep(count_tokens(chunk) / tokens_per_second)
        first = n == 0 and top_logprobs is not None
        yield event({"content": chunk},
                    alternatives=first_token_logprobs(chunk, logprobs, top_logprobs or 0)
                    if first else None)
    if cut:
        return
    yield event({}, "stop")
    if include_usage:
        tail = {**base, "choices": [], "usage": usage(messages, reply)}
        yield f"data: {json.dumps(tail)}\n\n"
    yield "data: [DONE]\n\n"


def first_token_logprobs(piece: str, scripted: dict[str, float] | None, top: int
                         ) -> dict[str, Any]:
    """OpenAI's `logprobs` of a chunk: its first token and `top` alternatives, from a
    rule's scripted probabilities, else the piece itself at probability 1."""
    chances = scripted or {piece: 1.0}
    ranked = sorted(chances.items(), key=lambda item: -item[1])[:max(top, 1)]
    listed = [{"token": t, "logprob": math.log(p), "bytes": None} for t, p in ranked]
    return {"content": [{**listed[0], "top_logprobs": listed if top else []}]}


class ServeSlots:
    """At most K calls served at once, the others wait their turn in arrival order,
    as llama.cpp (`--parallel K`) and Ollama (`OLLAMA_NUM_PARALLEL=K`) do."""

    def __init__(self) -> None:
        self.k = 0
        self.serving = 0
        self.waiting: deque[asyncio.Future[None]] = deque()

    def try_acquire(self, k: int) -> bool:
        self.k = k  # the latest configuration rules
        if self.serving < k and not self.waiting:
            self.serving += 1
            return True
        return False

    async def acquire(self, k: int) -> None:
        if self.try_acquire(k):
            return
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.waiting.append(turn)
        try:
            await turn
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled():
                self.release()  # handed over just as its client left
            elif turn in self.waiting:
                self.waiting.remove(turn)
            raise

    def release(self) -> None:
        self.serving -= 1
        while self.waiting and self.serving < self.k:
            turn = self.waiting.popleft()
            if not turn.done():
                self.serving += 1
                turn.set_result(None)


async def _client_gone(receive: Receive) -> None:
    """Returns when the client hangs up (the body was read already)."""
    while (await receive())["type"] != "http.disconnect":
        pass


class ChatEndpoint:
    """A raw ASGI endpoint, so in-flight ends only when the response (or stream) is sent.

    Wrapping the whole send in try/finally also covers a client that hangs up
    mid-stream, which a generator's own finally would only see at GC time.
    """

    def __init__(self, state: FakeState) -> None:
        self.state = state
        self.slots = ServeSlots()

    async def _turn(self, k: int, receive: Receive) -> bool:
        """Wait to be served; False if the client hung up first (a timeout), as real
        servers drop a queued request whose connection closed."""
        if self.slots.try_acquire(k):
            return True
        waiting = asyncio.ensure_future(self.slots.acquire(k))
        self.state.queue_changed(+1)
        since = time.monotonic()
        gone = asyncio.ensure_future(_client_gone(receive))
        try:
            await asyncio.wait({waiting, gone}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            gone.cancel()
            if not waiting.done():
                waiting.cancel()
            self.state.queue_changed(-1, time.monotonic() - since)
        try:
            await waiting
        except asyncio.CancelledError:
            return False
        return True

    def _prefill(self, body: dict[str, Any], decision: ChatDecision) -> float:
        """Seconds before the first token: the latency, plus reading the prompt."""
        if decision.prefill_tokens_per_second <= 0:
            return decision.latency
        tokens = count_message_tokens(content_text(m) for m in body["messages"])
        return decision.latency + tokens / decision.prefill_tokens_per_second

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        try:
            body = await request.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            body = None
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            await error_response(400, "body must be a JSON object with 'messages'")(
                scope, receive, send)
            return
        decision = self.state.begin_chat(body)
        ended = served = False

        def end() -> None:
            nonlocal ended
            if not ended:
                ended = True
                if served:
                    self.slots.release()
                self.state.end_chat(decision)

        async def send_last_ended(message: Message) -> None:
            # The call ends before its last bytes go out: a client that reads them
            # may start its next call at once, and must not be counted twice.
            if message["type"] == "http.response.body" and not message.get("more_body"):
                end()
            await send(message)

        try:
            # Injected faults are answered at once, as a gateway in front of the queue would.
            if decision.status is None and decision.serve_at_most:
                served = await self._turn(decision.serve_at_most, receive)
                if not served:
                    return
            delay = self._prefill(body, decision) if decision.status is None else decision.latency
            if decision.status is None and not body.get("stream") and decision.tokens_per_second:
                delay += count_tokens(decision.reply) / decision.tokens_per_second  # all, then sent
            if delay > 0:
                await asyncio.sleep(delay)
            response = self._respond(body, decision)
            await response(scope, receive, send_last_ended)
        except (OSError, ClientDisconnect):
            pass  # the client hung up mid-reply
        finally:
            end()

    @staticmethod
    def _respond(body: dict[str, Any], decision: ChatDecision) -> Response:
        reply, status = decision.reply, decision.status
        if status is not None:
            if status == 429:
                return error_response(
                    429, "Rate limit reached (injected by fake-openai)", decision.retry_after)
            return error_response(status, f"Injected failure {status} (fake-openai)")
        model = str(body.get("model") or MODEL_ID)
        messages: list[Any] = body["messages"]
        if not body.get("stream"):
            return JSONResponse(completion(model, reply, messages))
        options = body.get("stream_options") or {}
        include_usage = bool(isinstance(options, dict) and options.get("include_usage"))
        return StreamingResponse(
            sse_events(model, reply, messages, include_usage, decision.tokens_per_second,
                       decision.reasoning, decision.cut,
                       int(body.get("top_logprobs") or 0) if body.get("logprobs") else None,
                       decision.logprobs, decision.reasoning_field),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache"},
        )


def embed(text: str, dim: int = EMBEDDING_DIM) -> list[float]:
    """A deterministic, L2-normalised signed hash of the text's character 2- and 3-grams.

    blake2b rather than `hash()`: Python salts str hashes per process, and
    vectors must agree between the server process and its clients.
    """
    vec = [0.0] * dim
    padded = f" {' '.join(text.lower().split())} "
    for n in (2, 3):
        for i in range(len(padded) - n + 1):
            digest = hashlib.blake2b(padded[i:i + n].encode(), digest_size=8).digest()
            h = int.from_bytes(digest, "little")
            vec[h % dim] += 1.0 if (h >> 32) & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in vec))
    if norm == 0.0:
        vec[0], norm = 1.0, 1.0  # a unit vector even for empty text, so cosine is defined
    return [v / norm for v in vec]


def _embedding_inputs(raw: Any) -> list[str] | None:
    if isinstance(raw, str):
        return [raw]
    if isinstance(raw, list) and raw and all(isinstance(x, int) for x in raw):
        return [" ".join(map(str, raw))]  # one pre-tokenised input
    if isinstance(raw, list) and raw:
        texts = [x if isinstance(x, str) else " ".join(map(str, x)) if isinstance(x, list)
                 else None for x in raw]
        return None if None in texts else [t for t in texts if t is not None]
    return None


def build_app(state: FakeState) -> Starlette:
    async def embeddings(request: Request) -> Response:
        try:
            body = await request.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            body = None
        texts = _embedding_inputs(body.get("input")) if isinstance(body, dict) else None
        if not isinstance(body, dict) or texts is None:
            return error_response(400, "'input' must be a string or a non-empty list")
        state.count_embedding_call()
        dim = int(body.get("dimensions") or EMBEDDING_DIM)
        as_base64 = body.get("encoding_format") == "base64"  # the openai client's default
        data: list[dict[str, Any]] = []
        for i, text in enumerate(texts):
            vector = embed(text, dim)
            encoded: Any = vector
            if as_base64:
                encoded = base64.b64encode(struct.pack(f"<{dim}f", *vector)).decode()
            data.append({"object": "embedding", "index": i, "embedding": encoded})
        tokens = sum(count_tokens(t) for t in texts)
        return JSONResponse({
            "object": "list",
            "data": data,
            "model": str(body.get("model") or MODEL_ID),
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        })

    async def models(request: Request) -> Response:
        model = {"id": MODEL_ID, "object": "model", "created": 0, "owned_by": "scholarflow"}
        return JSONResponse({"object": "list", "data": [model]})

    async def admin_config(request: Request) -> Response:
        try:
            body = await request.json()
            if not isinstance(body, dict):
                raise ConfigError("config must be a JSON object")
            state.configure(**body)
        except (json.JSONDecodeError, ConfigError, TypeError, ValueError) as exc:
            return error_response(400, str(exc))
        return JSONResponse({"ok": True})

    async def admin_reset(request: Request) -> Response:
        state.reset()
        return JSONResponse({"ok": True})

    async def admin_stats(request: Request) -> Response:
        return JSONResponse(state.stats().to_dict())

    return Starlette(routes=[
        Route("/v1/chat/completions", ChatEndpoint(state), methods=["POST"]),
        Route("/v1/embeddings", embeddings, methods=["POST"]),
        Route("/v1/models", models, methods=["GET"]),
        Route("/_admin/config", admin_config, methods=["POST"]),
        Route("/_admin/reset", admin_reset, methods=["POST"]),
        Route("/_admin/stats", admin_stats, methods=["GET"]),
    ])
