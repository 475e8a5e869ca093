"""Context compression (docs/architecture.md#sessions): where to cut. session_save does the folding.

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
from collections.abc import Sequence

from scholarflow.sessions.models import Message, MessageType


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
