"""Sessions: the message model, the session store, history windows,
context compression and the document-summary cache."""

from scholarflow.sessions.cache import (
    DEFAULT_TTL_SECONDS,
    SqliteSummaryCache,
    SummaryCache,
    content_hash,
    default_summary_cache,
    summary_cache_key,
)
from scholarflow.sessions.compression import compression_split, maybe_compress
from scholarflow.sessions.history import (
    SUMMARY_PREFIX,
    Stage,
    history_for,
    split_rounds,
    to_chat_messages,
)
from scholarflow.sessions.models import Message, MessageType, SessionInfo
from scholarflow.sessions.paths import database_path, home_dir
from scholarflow.sessions.postgres import PostgresSessionStore
from scholarflow.sessions.postgres_cache import PostgresSummaryCache
from scholarflow.sessions.postgres_db import PostgresDatabase
from scholarflow.sessions.redis_cache import RedisSummaryCache
from scholarflow.sessions.sqlite import SqliteSessionStore
from scholarflow.sessions.store import (
    CompressionConflictError,
    SessionNotFoundError,
    SessionStore,
    default_session_store,
)

__all__ = [
    "DEFAULT_TTL_SECONDS",
    "SUMMARY_PREFIX",
    "CompressionConflictError",
    "Message",
    "MessageType",
    "PostgresDatabase",
    "PostgresSessionStore",
    "PostgresSummaryCache",
    "RedisSummaryCache",
    "SessionInfo",
    "SessionNotFoundError",
    "SessionStore",
    "SqliteSessionStore",
    "SqliteSummaryCache",
    "Stage",
    "SummaryCache",
    "compression_split",
    "content_hash",
    "database_path",
    "default_session_store",
    "default_summary_cache",
    "history_for",
    "home_dir",
    "maybe_compress",
    "split_rounds",
    "summary_cache_key",
    "to_chat_messages",
]
