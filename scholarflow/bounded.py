"""One bound for every loop that calls a model.

A loop whose exit depends on what a model wrote (merge rounds, retries on an
unusable reply) can run forever when that exit is never reached: with a paid
API that is real money. Such loops iterate `bounded_rounds`, which stops them
with a typed, fatal error instead; a loop through graph nodes checks each round
with `require_round`.
"""

from __future__ import annotations

from collections.abc import Iterator

from scholarflow.errors import ScholarflowError


class LoopLimitError(ScholarflowError):
    """A loop that calls the model reached its bound without finishing (fatal, not retried)."""


def bounded_rounds(limit: int, what: str, *, fix: str = "report this as a bug") -> Iterator[int]:
    """Rounds 1..`limit`; asking for one more raises LoopLimitError naming `what` and `fix`.

    A loop that ends by `return` or `break` never sees the error.
    """
    if limit < 1:
        raise ValueError("bounded_rounds needs a limit of at least 1")
    yield from range(1, limit + 1)
    require_round(limit + 1, limit, what, fix=fix)  # raises: one past the last round


def require_round(round_: int, limit: int, what: str, *, fix: str = "report this as a bug"
                  ) -> None:
    """`bounded_rounds` for a loop whose rounds are graph steps, not one Python loop: round
    `round_` (from 1) of at most `limit` passes, and one past it raises the same error."""
    if limit < 1:
        raise ValueError("require_round needs a limit of at least 1")
    if round_ > limit:
        raise LoopLimitError(f"{what} did not finish within {limit} rounds: {fix}")


def require_progress(before: int, after: int, what: str, *, fix: str) -> None:
    """A round of a converging loop must strictly shrink its work, else it could repeat."""
    if after >= before:
        raise LoopLimitError(f"{what} made no progress ({before} -> {after} items): {fix}")
