"""Context compression (seed 004 §6.1): fold the oldest messages into one summary.

When a session's active tokens pass `max_context_tokens * ratio`, the oldest
70% of its active messages (any earlier summary included, so summaries fold
into one) become one COMPRESSION message; the newest 30% stay as they are.

Where exactly to cut: 70% of the count, rounded half up, clamped so at
least one message is compressed and one kept. A cut that would separate a
question from its reply moves back to the start of that round (we keep a
little more rather than less); if that leaves nothing worth compressing it
moves forward to the next round; only a session whose active conversation
is a single round gets that round split.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Sequence

from scholarflow.sessions.models import Message, MessageType
from scholarflow.sessions.store import (
    CompressionConflictError,
    SessionNotFoundError,
    SessionStore,
)

Summarize = Callable[[Sequence[Message]], Awaitable[str]]


def compression_split(messages: Sequence[Message], keep_fraction: float = 0.3) -> int:
    """How many of the oldest active `messages` to compress; 0 when compressing is pointless."""
    n = len(messages)
    if n < 2:
        return 0
    cut = math.floor(n * (1 - keep_fraction) + 0.5)
    cut = min(max(cut, 1), n - 1)

    def worth(b: int) -> bool:
        # Re-summarising only the previous summary would gain nothing.
        return any(m.type != MessageType.COMPRESSION for m in messages[:b])

    def starts_round(b: int) -> bool:
        return messages[b].type == MessageType.USER

    for b in range(cut, 0, -1):
        if starts_round(b) and worth(b):
            return b
    for b in range(cut + 1, n):
        if starts_round(b) and worth(b):
            return b
    return cut if worth(cut) else 0


async def maybe_compress(
    store: SessionStore,
    session_id: str,
    *,
    max_context_tokens: int,
    summarize: Summarize,
    ratio: float = 0.8,
    keep_fraction: float = 0.3,
) -> Message | None:
    """Compress the session when its active tokens exceed `max_context_tokens * ratio`.

    Returns the new COMPRESSION message, or None when nothing was done
    (below the threshold, too few messages, or another compression of the
    same session got there first). `summarize` gets the messages to fold, in
    order; if it raises, the store is unchanged and the exception propagates.
    """
    if max_context_tokens <= 0:
        raise ValueError("max_context_tokens must be positive")
    if not 0 < ratio <= 1:
        raise ValueError("ratio must be in (0, 1]")
    if not 0 < keep_fraction < 1:
        raise ValueError("keep_fraction must be in (0, 1)")

    info = await store.get(session_id)
    if info is None:
        raise SessionNotFoundError(session_id)
    if info.total_token_count <= max_context_tokens * ratio:
        return None

    active = await store.messages(session_id, active_only=True)
    split = compression_split(active, keep_fraction)
    if split == 0:
        return None
    oldest = active[:split]
    summary = await summarize(oldest)
    try:
        return await store.compress(session_id, [m.id for m in oldest], summary)
    except CompressionConflictError:
        # A concurrent run compressed these messages already; its summary stands.
        return None
