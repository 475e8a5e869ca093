"""Exit codes and the command line's own error, shared by its commands."""

from __future__ import annotations

from scholarflow.errors import ScholarflowError

EXIT_RUN_FAILED = 1
EXIT_BAD_INPUT = 2


class CliError(ScholarflowError):
    """A bad request caught before the graph runs."""


class RunFailedError(ScholarflowError):
    """A command that failed without the request being wrong: a server that could not be
    reached, or failed (exit 1)."""
