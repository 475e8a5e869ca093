"""An empty answer from the model is a failure of the run, not a silent success."""

from __future__ import annotations

from scholarflow.context import Context
from scholarflow.errors import FatalLLMError, RetryableLLMError


class EmptyAnswerError(RetryableLLMError):
    """The model answered with nothing but whitespace; the node's retry policy tries once more."""


def require_text(ctx: Context, text: str, *, first_attempt: bool, what: str = "answer") -> str:
    """`text` if it has any; else EmptyAnswerError on a first attempt, a fatal error after.

    One retry: a model that answers nothing twice will not answer a third time.
    """
    if text.strip():
        return text
    message = (f"the model {ctx.model_name!r} returned an empty {what}: try again, or check "
               "SCHOLARFLOW_MODEL and the endpoint (OPENAI_BASE_URL)")
    if first_attempt:
        raise EmptyAnswerError(message)
    raise FatalLLMError(message)
