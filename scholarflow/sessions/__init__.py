"""Sessions: the message model, history windows, where compression cuts, and the
document-summary cache. The sessions themselves are LangGraph threads
(scholarflow/conversation.py, scholarflow/checkpoints.py)."""

from scholarflow.sessions.cache import (
    DEFAULT_TTL_SECONDS,
    SqliteSummaryCache,
    SummaryCache,
    default_summary_cache,
    summary_cache_key,
)
from scholarflow.sessions.compression import compression_split
from scholarflow.sessions.history import (
    SUMMARY_PREFIX,
    Stage,
    history_for,
    split_rounds,
    to_chat_messages,
)
from scholarflow.sessions.models import Message, MessageType, check_session_id, make_title
from scholarflow.sessions.paths import database_path, home_dir
from scholarflow.sessions.postgres_cache import PostgresSummaryCache
from scholarflow.sessions.postgres_db import PostgresDatabase
from scholarflow.sessions.redis_cache import RedisSummaryCache

__all__ = [
    "DEFAULT_TTL_SECONDS",
    "SUMMARY_PREFIX",
    "Message",
    "MessageType",
    "PostgresDatabase",
    "PostgresSummaryCache",
    "RedisSummaryCache",
    "SqliteSummaryCache",
    "Stage",
    "SummaryCache",
    "check_session_id",
    "compression_split",
    "database_path",
    "default_summary_cache",
    "history_for",
    "home_dir",
    "make_title",
    "split_rounds",
    "summary_cache_key",
    "to_chat_messages",
]
