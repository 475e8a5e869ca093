"""The last line before the model: no prompt larger than the context window is sent.

Nodes fit their prompts to `max_context_tokens - reserved_answer_tokens`;
this guard in `llm.complete` / `llm.stream` catches any that did not, so an
oversized prompt costs nothing and fails with a line that says what to do.
"""

from __future__ import annotations

from collections.abc import Sequence

from scholarflow.context import Context
from scholarflow.errors import FatalLLMError
from scholarflow.tokens import MESSAGE_OVERHEAD_TOKENS, count_message_tokens


class PromptTooLargeError(FatalLLMError):
    """A prompt that does not fit the model's window: not sent, and not retried."""


def check_prompt(ctx: Context, prompt: Sequence[tuple[str, str]],
                 max_tokens: int | None = None) -> None:
    """Raise PromptTooLargeError when `prompt` (plus `max_tokens` of answer) exceeds the window."""
    window = ctx.max_context_tokens - (max_tokens or 0)
    contents = [content for _, content in prompt]
    # A token is at least one byte, so a prompt of fewer bytes fits without counting.
    if sum(len(c.encode()) + MESSAGE_OVERHEAD_TOKENS for c in contents) <= window:
        return
    tokens = count_message_tokens(contents)
    if tokens > window:
        answer = f" plus max_tokens={max_tokens}" if max_tokens else ""
        raise PromptTooLargeError(
            f"a prompt of {tokens} tokens{answer} does not fit "
            f"max_context_tokens={ctx.max_context_tokens} and was not sent: shorten the "
            "question or the documents, or raise max_context_tokens if the model's window "
            "is larger"
        )
