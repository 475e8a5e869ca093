"""What a prompt can hold: budgets refused before any LLM call, and texts capped to fit.

The window is `max_context_tokens` when the caller or $SCHOLARFLOW_MAX_CONTEXT_TOKENS
set it, else what the model's server reported (llm/window.py), else 128000.
A prompt may use `window - answer_reserve`, the answer the rest: every call's
`max_tokens` is answer_reserve, so no prompt plus its answer passes the window.
Of the prompt, `system_reserve` goes to instructions and the rest to the
question, history and material. A budget or a question that leaves less than
MIN_MATERIAL_TOKENS for material is refused in request_init, so no run answers
"from" nothing or spends calls it cannot use.

The two reserves scale with the window unless given (see answer_reserve and
system_reserve): 8000 / 2000 at 128k (docs/architecture.md#budget), and still room for documents
at 4k, where a fixed 10000 would leave none.
"""

from __future__ import annotations

from scholarflow.context import DEFAULT_MAX_CONTEXT_TOKENS, MAX_CONTEXT_ENV, Context
from scholarflow.errors import ConfigurationError, InputError
from scholarflow.llm.window import reported_window
from scholarflow.tokens import count_tokens, encoding

# A few paragraphs: less material than this and an answer would not be grounded in it.
MIN_MATERIAL_TOKENS = 256
TRUNCATION_MARK = " […]"
# The answer: an eighth of the window, between a full answer of a few paragraphs
# (~700 English words, ~600 Chinese characters) and the 8000 of 128k (reached at 64k).
ANSWER_SHARE, MIN_ANSWER_TOKENS, MAX_ANSWER_TOKENS = 8, 1024, 8000
# Instructions: a sixteenth, between the longest system template (~250 tokens) and
# the 2000 of 128k (reached at 32k). Prompts count their real templates; this is the
# estimate request_init admits documents against.
SYSTEM_SHARE, MIN_SYSTEM_TOKENS, MAX_SYSTEM_TOKENS = 16, 256, 2000
# How error messages name the window's settings.
WINDOW_SETTINGS = f"max_context_tokens (--max-context, {MAX_CONTEXT_ENV})"


def window(ctx: Context) -> int:
    """The model's context window: the context's (caller or environment), else the
    server's report, else DEFAULT_MAX_CONTEXT_TOKENS."""
    if ctx.max_context_tokens is not None:
        return ctx.max_context_tokens
    return reported_window(ctx) or DEFAULT_MAX_CONTEXT_TOKENS


def window_words(ctx: Context) -> str:
    """`max_context_tokens=N`, saying when N is the server's report rather than a setting."""
    size = window(ctx)
    reported = ctx.max_context_tokens is None and reported_window(ctx) is not None
    return f"max_context_tokens={size}" + (" (the window the server reports)" if reported else "")


def answer_reserve(ctx: Context) -> int:
    """Tokens an answer may take: every call's `max_tokens` unless it asks for fewer."""
    if ctx.reserved_answer_tokens is not None:
        return ctx.reserved_answer_tokens
    return min(MAX_ANSWER_TOKENS, max(MIN_ANSWER_TOKENS, window(ctx) // ANSWER_SHARE))


def system_reserve(ctx: Context) -> int:
    """Tokens set aside for system prompts."""
    if ctx.system_tokens_estimate is not None:
        return ctx.system_tokens_estimate
    return min(MAX_SYSTEM_TOKENS, max(MIN_SYSTEM_TOKENS, window(ctx) // SYSTEM_SHARE))


def prompt_budget(ctx: Context) -> int:
    """The most tokens any one prompt may have."""
    return window(ctx) - answer_reserve(ctx)


def material_room(ctx: Context) -> int:
    """Tokens a prompt has for the question, history and material."""
    return prompt_budget(ctx) - system_reserve(ctx)


def max_question_tokens(ctx: Context) -> int:
    """The longest question that still leaves the minimum material room."""
    return material_room(ctx) - MIN_MATERIAL_TOKENS


def check_budget(ctx: Context, *, query_tokens: int) -> None:
    """Refuse, before any LLM call, a context or question that leaves no room for material."""
    room = material_room(ctx)
    if room < MIN_MATERIAL_TOKENS:
        left = "no room" if room <= 0 else f"only {room} tokens"
        least = answer_reserve(ctx) + system_reserve(ctx) + MIN_MATERIAL_TOKENS
        raise ConfigurationError(
            f"{window_words(ctx)} leaves {left} for documents after "
            f"reserved_answer_tokens={answer_reserve(ctx)} and "
            f"system_tokens_estimate={system_reserve(ctx)}: raise {WINDOW_SETTINGS} "
            f"to at least {least} (and the model server's window with it) or lower "
            "reserved_answer_tokens"
        )
    if query_tokens > (most := max_question_tokens(ctx)):
        raise InputError(
            f"the question is too long: {query_tokens} tokens, and at most {most} fit "
            f"{window_words(ctx)}: shorten the question, or give the long text as a "
            "document (--file)"
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
