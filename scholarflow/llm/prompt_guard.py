"""The last line before the model: no prompt larger than the context window is sent.

Nodes fit their prompts to `budget.window - budget.answer_reserve`;
this guard in `llm.complete` / `llm.stream` catches any that did not, so an
oversized prompt costs nothing and fails with a line that says what to do.
"""

from __future__ import annotations

from collections.abc import Sequence

from scholarflow.context import Context
from scholarflow.errors import FatalLLMError
from scholarflow.llm.budget import WINDOW_SETTINGS, window_words
from scholarflow.llm.budget import window as context_window
from scholarflow.tokens import MESSAGE_OVERHEAD_TOKENS, count_message_tokens


class PromptTooLargeError(FatalLLMError):
    """A prompt that does not fit the model's window: not sent, and not retried."""


def check_prompt(ctx: Context, prompt: Sequence[tuple[str, str]],
                 max_tokens: int | None = None) -> int:
    """Raise PromptTooLargeError when `prompt` (plus `max_tokens` of answer) exceeds the window.

    Returns the prompt's tokens: counted, or when counting was not needed, estimated
    (a third of its bytes: about right for English, and for Chinese).
    """
    window = context_window(ctx) - (max_tokens or 0)
    contents = [content for _, content in prompt]
    # A token is at least one byte, so a prompt of fewer bytes fits without counting.
    size = sum(len(c.encode()) + MESSAGE_OVERHEAD_TOKENS for c in contents)
    if size <= window:
        return size // 3
    tokens = count_message_tokens(contents)
    if tokens > window:
        answer = f" plus max_tokens={max_tokens}" if max_tokens else ""
        raise PromptTooLargeError(
            f"a prompt of {tokens} tokens{answer} does not fit "
            f"{window_words(ctx)} and was not sent: shorten the question or the documents, "
            f"or raise {WINDOW_SETTINGS} if the model's window is larger"
        )
    return tokens
