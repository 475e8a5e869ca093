"""The chat model: `ChatOpenAI`, keeping what OpenAI-compatible servers add.

`ChatOpenAI` drops the fields it does not know (its own docstring says so), so
DeepSeek's and vLLM's `reasoning_content`, and the `reasoning` of Ollama and
OpenRouter, would never be seen. `ReasoningChatOpenAI` copies them into the
chunk's `additional_kwargs["reasoning_content"]`, where llm/calls.py reads them.

It also sends the reply bound as `max_tokens` to servers other than OpenAI:
ChatOpenAI renames it `max_completion_tokens`, which OpenAI wants but which
older llama.cpp, Ollama and DeepSeek releases ignore, leaving replies unbounded.
"""

from __future__ import annotations

from typing import Any

import httpx
from langchain_core.messages import AIMessageChunk
from langchain_core.outputs import ChatGenerationChunk
from langchain_openai import ChatOpenAI

from scholarflow.context import Context
from scholarflow.errors import ConfigurationError
from scholarflow.llm.loop_cache import per_loop

REASONING_FIELDS = ("reasoning_content", "reasoning")


class ReasoningChatOpenAI(ChatOpenAI):
    """ChatOpenAI that keeps streamed reasoning and bounds replies on any server."""

    def _convert_chunk_to_generation_chunk(
        self, chunk: dict[str, Any], default_chunk_class: type,
        base_generation_info: dict[str, Any] | None,
    ) -> ChatGenerationChunk | None:
        generation = super()._convert_chunk_to_generation_chunk(
            chunk, default_chunk_class, base_generation_info)
        choices = chunk.get("choices") or []
        delta = choices[0].get("delta") if choices and isinstance(choices[0], dict) else None
        if generation is not None and isinstance(delta, dict):
            thought = next((delta[f] for f in REASONING_FIELDS
                            if isinstance(delta.get(f), str) and delta[f]), None)
            if thought and isinstance(generation.message, AIMessageChunk):
                generation.message.additional_kwargs["reasoning_content"] = thought
        return generation

    def _get_request_payload(self, input_: Any, *, stop: list[str] | None = None,
                             **kwargs: Any) -> dict[str, Any]:
        payload: dict[str, Any] = super()._get_request_payload(input_, stop=stop, **kwargs)
        if self.openai_api_base and "max_completion_tokens" in payload:
            payload["max_tokens"] = payload.pop("max_completion_tokens")
        return payload


def chat_model(ctx: Context, temperature: float | None = None) -> ChatOpenAI:
    """The chat model for this context (at `temperature`, else the context's); one
    instance (and connection pool) per endpoint, temperature and event loop: its async
    HTTP client cannot serve another loop (llm/loop_cache.py)."""
    if not ctx.llm_configured:
        raise ConfigurationError(
            "no LLM configured: set OPENAI_API_KEY (and OPENAI_BASE_URL for DeepSeek, "
            "Qwen, vLLM or Ollama), or pass openai_api_key in the context (on LangGraph "
            "server: in the server's environment)"
        )
    assert ctx.model_name is not None  # filled by Context.__post_init__
    key = (ctx.model_name, ctx.openai_api_base, ctx.openai_api_key, ctx.llm_timeout_seconds,
           ctx.temperature if temperature is None else temperature)
    return per_loop(("chat_model", key), lambda: _new_model(*key))


def _new_model(
    model: str, base_url: str | None, api_key: str | None, timeout: float, temperature: float
) -> ChatOpenAI:
    return ReasoningChatOpenAI(
        model=model,
        base_url=base_url,
        # Local servers (vLLM, Ollama) need no key, but the client insists on one.
        api_key=api_key or "not-needed",  # type: ignore[arg-type]
        # Only connecting has a client timeout: the first token and the gaps between
        # tokens are watched per call (llm/watch.py), so a long reply or a wait in a
        # busy server's queue is not cut off.
        timeout=httpx.Timeout(None, connect=timeout),
        max_retries=0,
        temperature=temperature,
        stream_usage=True,
        # llm_watch.StallWatch watches the gaps; a per-chunk wait_for costs a task each.
        stream_chunk_timeout=None,
    )


def endpoint_key(ctx: Context) -> str:
    """Which server and model a call goes to: calls to one share its queue."""
    return f"{ctx.openai_api_base or 'openai'}|{ctx.model_name}"
