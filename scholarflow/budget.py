"""What a prompt can hold: budgets refused before any LLM call, and texts capped to fit.

A prompt may use `max_context_tokens - reserved_answer_tokens`; of that,
`system_tokens_estimate` goes to instructions and the rest to the question,
history and material. A budget or a question that leaves less than
MIN_MATERIAL_TOKENS for material is refused in request_init, so no run
answers "from" nothing or spends calls it cannot use.
"""

from __future__ import annotations

from scholarflow.context import Context
from scholarflow.errors import ConfigurationError, InputError
from scholarflow.tokens import count_tokens, encoding

# A few paragraphs: less material than this and an answer would not be grounded in it.
MIN_MATERIAL_TOKENS = 256
TRUNCATION_MARK = " […]"


def answer_reserve(ctx: Context) -> int:
    """Tokens an answer may take: every call's `max_tokens` unless it asks for fewer."""
    return ctx.reserved_answer_tokens


def prompt_budget(ctx: Context) -> int:
    """The most tokens any one prompt may have."""
    return ctx.max_context_tokens - ctx.reserved_answer_tokens


def material_room(ctx: Context) -> int:
    """Tokens a prompt has for the question, history and material."""
    return prompt_budget(ctx) - ctx.system_tokens_estimate


def max_question_tokens(ctx: Context) -> int:
    """The longest question that still leaves the minimum material room."""
    return material_room(ctx) - MIN_MATERIAL_TOKENS


def check_budget(ctx: Context, *, query_tokens: int) -> None:
    """Refuse, before any LLM call, a context or question that leaves no room for material."""
    room = material_room(ctx)
    if room < MIN_MATERIAL_TOKENS:
        left = "no room" if room <= 0 else f"only {room} tokens"
        least = ctx.reserved_answer_tokens + ctx.system_tokens_estimate + MIN_MATERIAL_TOKENS
        raise ConfigurationError(
            f"max_context_tokens={ctx.max_context_tokens} leaves {left} for documents after "
            f"reserved_answer_tokens={ctx.reserved_answer_tokens} and "
            f"system_tokens_estimate={ctx.system_tokens_estimate}: raise max_context_tokens "
            f"to at least {least} or lower reserved_answer_tokens"
        )
    if query_tokens > (most := max_question_tokens(ctx)):
        raise InputError(
            f"the question is too long: {query_tokens} tokens, and at most {most} fit "
            f"max_context_tokens={ctx.max_context_tokens}: shorten the question, or give the "
            "long text as a document (--file)"
        )


def cap_tokens(text: str, max_tokens: int, *, keep_end: bool = False) -> str:
    """`text` within `max_tokens`, marked where it was cut; `keep_end` keeps its end instead."""
    if max_tokens <= 0:
        return ""
    if len(text.encode()) <= max_tokens:
        return text  # a token is at least one byte: a short text needs no counting
    ids = encoding().encode(text, disallowed_special=())
    if len(ids) <= max_tokens:
        return text
    # Decoding a cut can re-tokenise a little differently: keep a small margin.
    keep = max_tokens - count_tokens(TRUNCATION_MARK) - 2
    if keep <= 0:
        return ""
    if keep_end:
        return TRUNCATION_MARK.strip() + " " + encoding().decode(ids[-keep:])
    return encoding().decode(ids[:keep]) + TRUNCATION_MARK
