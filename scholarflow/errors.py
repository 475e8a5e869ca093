"""Typed errors. Each message is one line a person can act on.

`RetryableLLMError` is what node retry policies retry on; everything else is
fatal for the node that raised it.
"""

from __future__ import annotations


class ScholarflowError(RuntimeError):
    """An error whose message is meant for the person running scholarflow.

    A RuntimeError: LangGraph server shows the message of a RuntimeError (or ValueError)
    in a failed run's error event and hides every other's; ours are one scrubbed line."""


class InputError(ScholarflowError):
    """The request itself is wrong (empty question, bad mode, unknown session)."""


class ConfigurationError(ScholarflowError):
    """A setting the command needs is missing or wrong; the message names it."""


class BackendUnavailableError(ConfigurationError):
    """A configured PostgreSQL or Redis could not be reached; the message names the variable."""


class NotSupportedError(ScholarflowError):
    """A capability that is not built yet."""


class LLMError(ScholarflowError):
    """A call to the language model failed."""


class RetryableLLMError(LLMError):
    """429, 5xx, timeouts and dropped connections: worth another attempt."""


class FatalLLMError(LLMError):
    """Bad key, unknown model, rejected request: retrying cannot help."""


class RateLimitedLLMError(RetryableLLMError):
    """A 429: retryable, and the signal the adaptive LLM limit backs off on."""

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after  # seconds the server asked to wait, if it said


class CutOffLLMError(RateLimitedLLMError):
    """A reply the server ended before the model finished, as a server does that drops a
    request for a newer one: a sign of too many calls at once, so it backs off like a 429."""


class InternalError(ScholarflowError):
    """A node failed with an exception of no scholarflow type (a bug or a library's error):
    re-raised as this, one scrubbed line, so no secret it quoted is stored."""


class CorruptDataError(ConfigurationError):
    """A file scholarflow keeps its data in is unreadable; the message names it and says
    how to move it aside (nothing is deleted or overwritten)."""


class InvalidRequestError(InputError, ValueError):
    """A request its schema refuses (a field's name, type or value), before any run.
    A ValueError too: LangGraph server shows a ValueError's message and hides others'."""


class InvalidContextError(ConfigurationError, ValueError):
    """A run context with an unknown field or a wrong value; a ValueError for the same reason."""
