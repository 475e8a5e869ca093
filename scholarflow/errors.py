"""Typed errors. Each message is one line a person can act on.

`RetryableLLMError` is what node retry policies retry on; everything else is
fatal for the node that raised it.
"""

from __future__ import annotations


class ScholarflowError(Exception):
    """An error whose message is meant for the person running scholarflow."""


class InputError(ScholarflowError):
    """The request itself is wrong (empty question, bad mode, unknown session)."""


class ConfigurationError(ScholarflowError):
    """A setting the command needs is missing or wrong; the message names it."""


class NotSupportedError(ScholarflowError):
    """A capability that is not built yet."""


class LLMError(ScholarflowError):
    """A call to the language model failed."""


class RetryableLLMError(LLMError):
    """429, 5xx, timeouts and dropped connections: worth another attempt."""


class FatalLLMError(LLMError):
    """Bad key, unknown model, rejected request: retrying cannot help."""
