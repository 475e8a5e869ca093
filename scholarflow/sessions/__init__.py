"""Sessions: the message model, history windows and where compression cuts
(docs/architecture.md#sessions). The sessions themselves are LangGraph threads: the
conversation is a view of the thread's messages (conversation.py), kept by the
checkpointer (scholarflow/storage/checkpoints.py)."""

from scholarflow.sessions.compression import compression_split
from scholarflow.sessions.history import (
    SUMMARY_PREFIX,
    Stage,
    history_for,
    split_rounds,
    to_chat_messages,
)
from scholarflow.sessions.models import Message, MessageType, check_session_id, make_title

__all__ = [
    "SUMMARY_PREFIX",
    "Message",
    "MessageType",
    "Stage",
    "check_session_id",
    "compression_split",
    "history_for",
    "make_title",
    "split_rounds",
    "to_chat_messages",
]
