"""The model's context window as its server reports it: asked once per (endpoint, model).

Used when neither the caller nor $SCHOLARFLOW_MAX_CONTEXT_TOKENS set the
window (budget.window). request_init asks, before its budget check; every
node then reads the answer from this process's cache. Three servers say it:

- llama.cpp's llama-server: `GET {root}/props` -> default_generation_settings.n_ctx,
  the window of one slot (README of ggml-org/llama.cpp tools/server, "GET /props").
- vLLM: `GET {base}/models` -> data[i].max_model_len of the model's entry
  (vllm/entrypoints/openai/protocol.py, ModelCard).
- Ollama: `POST {root}/api/show {"model": name}` (ollama/ollama docs/api.md, "Show
  Model Information"): `num_ctx` in its `parameters` text when the Modelfile sets it,
  else the loaded model's `context_length` in `GET {root}/api/ps` (newer versions),
  else OLLAMA_DEFAULT_NUM_CTX; never more than model_info["<arch>.context_length"],
  the window it was trained for.

llama-cpp-python's server (`python -m llama_cpp.server`, ../shared/tools/local-llm.sh)
reports no window: its /v1/models has id, object, owned_by and permissions only; nor
do LM Studio or hosted APIs here. Unknown then, and budget.window falls back to
128000: set --max-context or $SCHOLARFLOW_MAX_CONTEXT_TOKENS for those.

The probes go to the chat endpoint's own host only, with the Authorization header
the chat calls send, redirects not followed; each gets PROBE_TIMEOUT_SECONDS and
no retry. Any failure means "unknown", logged at debug level only.
"""

from __future__ import annotations

import asyncio
import logging
import math
import re
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # httpx is imported when a probe runs: most commands never probe
    import httpx

    from scholarflow.context import Context

logger = logging.getLogger(__name__)

PROBE_TIMEOUT_SECONDS = 2.0
# Ollama's window when nothing sets num_ctx: 2048 in older versions, 4096 or more by
# VRAM in newer ones (docs/context-length.mdx), and OLLAMA_CONTEXT_LENGTH can change it
# unseen. The smallest: over the real window Ollama silently drops the prompt's start
# (the documents), under it an answer only gets less material.
OLLAMA_DEFAULT_NUM_CTX = 2048
# Above any model's window: a larger number is a malformed answer, not a window.
MAX_PLAUSIBLE_WINDOW = 100_000_000

_reported: dict[tuple[str, str], int | None] = {}


def _key(ctx: Context) -> tuple[str, str] | None:
    """The cache key; None for the OpenAI API itself (no base URL), which reports nothing."""
    if not ctx.openai_api_base or not ctx.model_name:
        return None
    return ctx.openai_api_base.strip().rstrip("/"), ctx.model_name


def reported_window(ctx: Context) -> int | None:
    """The window the server reported for this endpoint and model, if it was asked and said."""
    key = _key(ctx)
    return _reported.get(key) if key is not None else None


async def probe_window(ctx: Context, *, transport: httpx.AsyncBaseTransport | None = None
                       ) -> int | None:
    """Ask the server for the model's window, once per process for each endpoint and
    model, unless the context set it; None when unknown. Never raises."""
    key = _key(ctx)
    if ctx.max_context_tokens is not None or key is None:
        return None
    if key in _reported:
        return _reported[key]
    try:
        window = await _probe(key[0], key[1], ctx.openai_api_key, transport)
    except Exception as exc:  # a probe must never fail a run: unknown
        logger.debug("context window probe of %s failed: %r", key[1], exc)
        window = None
    _reported[key] = window
    logger.debug("context window of %s: %s", key[1], window or "unknown")
    return window


def forget_windows() -> None:
    """Drop every cached report (tests; a server restarted with another window)."""
    _reported.clear()


async def _probe(base: str, model: str, api_key: str | None,
                 transport: httpx.AsyncBaseTransport | None) -> int | None:
    import httpx

    root = base[:-3] if base.endswith("/v1") else base  # llama.cpp and Ollama: no /v1
    headers = {"Authorization": f"Bearer {api_key or 'not-needed'}"}  # as llm.chat_model
    async with httpx.AsyncClient(headers=headers, timeout=PROBE_TIMEOUT_SECONDS,
                                 follow_redirects=False, transport=transport) as client:
        # At once: a server answers one of them, the others fail fast (404) or time out.
        llama, vllm, ollama = await asyncio.gather(
            _bounded(_llama_cpp(client, root)),
            _bounded(_vllm(client, base, model)),
            _bounded(_ollama(client, root, model)),
        )
    return llama or vllm or ollama


async def _bounded(probe: Awaitable[int | None]) -> int | None:
    """`probe`'s answer within PROBE_TIMEOUT_SECONDS (a server that trickles bytes could
    outlast httpx's per-read timeout), else None."""
    try:
        return await asyncio.wait_for(probe, PROBE_TIMEOUT_SECONDS)
    except Exception as exc:  # unreachable, timed out, not JSON: unknown
        logger.debug("context window probe: %r", exc)
        return None


async def _json(client: httpx.AsyncClient, method: str, url: str,
                body: dict[str, Any] | None = None) -> Any:
    response = await client.request(method, url, json=body)
    if response.status_code != 200:
        return None
    return response.json()


async def _llama_cpp(client: httpx.AsyncClient, root: str) -> int | None:
    props = await _json(client, "GET", f"{root}/props")
    settings = props.get("default_generation_settings") if isinstance(props, dict) else None
    return _tokens(settings.get("n_ctx")) if isinstance(settings, dict) else None


async def _vllm(client: httpx.AsyncClient, base: str, model: str) -> int | None:
    listing = await _json(client, "GET", f"{base}/models")
    entries = listing.get("data") if isinstance(listing, dict) else None
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and entry.get("id") == model:
            return _tokens(entry.get("max_model_len"))
    return None


async def _ollama(client: httpx.AsyncClient, root: str, model: str) -> int | None:
    shown = await _json(client, "POST", f"{root}/api/show", {"model": model})
    if not isinstance(shown, dict) or not ({"parameters", "model_info"} & shown.keys()):
        return None  # not Ollama (or no such model there)
    info = shown.get("model_info")
    info = info if isinstance(info, dict) else {}
    trained = _tokens(info.get(f"{info.get('general.architecture')}.context_length"))
    parameters = shown.get("parameters")
    found = re.search(r"^\s*num_ctx\s+(\d+)\s*$", parameters, re.MULTILINE) \
        if isinstance(parameters, str) else None
    runtime = _tokens(int(found.group(1))) if found else await _ollama_loaded(client, root, model)
    runtime = runtime or OLLAMA_DEFAULT_NUM_CTX
    return min(runtime, trained) if trained else runtime


async def _ollama_loaded(client: httpx.AsyncClient, root: str, model: str) -> int | None:
    """The window Ollama loaded the model with (/api/ps), when it is loaded and says."""
    try:
        running = await _json(client, "GET", f"{root}/api/ps")
    except Exception:  # an older Ollama, or none: the default
        return None
    models = running.get("models") if isinstance(running, dict) else None
    names = {model, model if ":" in model else f"{model}:latest"}  # as Ollama lists it
    for entry in models if isinstance(models, list) else []:
        listed = [entry.get(k) for k in ("name", "model")] if isinstance(entry, dict) else []
        if any(isinstance(name, str) and name in names for name in listed):
            return _tokens(entry.get("context_length"))
    return None


def _tokens(value: Any) -> int | None:
    """`value` when it is a plausible window (a whole number of tokens), else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if not math.isfinite(value) or value != int(value):
        return None
    return int(value) if 1 <= value <= MAX_PLAUSIBLE_WINDOW else None
