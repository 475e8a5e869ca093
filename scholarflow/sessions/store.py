"""The session store contract, shared by the SQLite and the PostgreSQL stores.

Kept small on purpose: everything else (history windows, compression policy)
is built on these calls, so a new backend only implements storage.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from types import TracebackType
from typing import Protocol, Self, runtime_checkable

from scholarflow.errors import InputError
from scholarflow.sessions.models import Message, MessageType, SessionInfo

MAX_SESSION_ID_CHARS = 200


def check_session_id(session_id: str) -> str:
    """The id when a store can keep it; else ValueError (every backend accepts the same ids)."""
    if not isinstance(session_id, str) or not session_id.strip():
        raise ValueError("a session id must be a non-empty string")
    if len(session_id) > MAX_SESSION_ID_CHARS:
        raise ValueError(f"a session id has at most {MAX_SESSION_ID_CHARS} characters")
    if "\x00" in session_id:
        raise ValueError("a session id cannot contain a NUL character")
    return session_id


def check_new_message(type: MessageType | str, content: object) -> MessageType:
    """The message's type when add_message() may store it; else ValueError/TypeError."""
    kind = MessageType(type)
    if kind is MessageType.COMPRESSION:
        raise ValueError("COMPRESSION messages are written by compress(), not add_message()")
    if not isinstance(content, str):
        raise TypeError(f"message content must be a str, not {builtins.type(content).__name__}")
    return kind


def check_compression(message_ids: Sequence[int], summary: str) -> set[int]:
    """The ids to compress when the arguments make sense; else ValueError (as every backend)."""
    ids = set(message_ids)
    if not ids:
        raise ValueError("compress() needs at least one message id")
    if not isinstance(summary, str) or not summary.strip():
        raise ValueError("compress() needs a non-empty summary")
    return ids


class SessionNotFoundError(InputError, LookupError):
    """The session id names no stored session.

    An InputError too, so the CLI and the graph report it as one line.
    """

    def __init__(self, session_id: str) -> None:
        super().__init__(f"no session {session_id!r}; see `scholarflow sessions list`")
        self.session_id = session_id


class CompressionConflictError(ValueError):
    """`compress` was given a message that is not an active message of the session.

    Usually another compression of the same session won a race; nothing was changed.
    """


class ClosesOnExit:
    """`async with` for a backend: leaving the block closes it (subclasses define close)."""

    async def close(self) -> None:
        raise NotImplementedError

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()


class AsyncClosable(Protocol):
    """What the session store and the summary cache share, so code can close either."""

    async def close(self) -> None: ...


@runtime_checkable
class SessionStore(AsyncClosable, Protocol):
    """Sessions and their messages. Every method is async and never blocks the event loop."""

    async def create(self, session_id: str | None = None) -> SessionInfo:
        """Create a session (a uuid4 hex id when None).

        Idempotent: creating an existing id returns it unchanged, so two
        requests racing to start the same session both succeed.
        """
        ...

    async def get(self, session_id: str) -> SessionInfo | None:
        """The session, or None when there is none."""
        ...

    async def list(self) -> builtins.list[SessionInfo]:
        """Every session, most recently updated first."""
        ...

    async def delete(self, session_id: str) -> bool:
        """Delete the session and its messages; False when there was none."""
        ...

    async def add_message(self, session_id: str, type: MessageType, content: str) -> Message:
        """Append a USER or ASSISTANT message and update the statistics in one transaction.

        Raises SessionNotFoundError; COMPRESSION messages come only from `compress`.
        """
        ...

    async def messages(
        self, session_id: str, *, active_only: bool = False
    ) -> builtins.list[Message]:
        """The messages in conversation order; `active_only` drops compressed originals.

        Raises SessionNotFoundError.
        """
        ...

    async def compress(
        self, session_id: str, message_ids: Sequence[int], summary: str
    ) -> Message:
        """Replace active messages by one COMPRESSION summary, in one transaction.

        The given messages are marked compressed; the summary is ordered
        before every message that stays active; total_token_count is
        recomputed. Raises SessionNotFoundError, CompressionConflictError when
        an id is not an active message of the session, ValueError when no id
        or a blank summary is given.
        """
        ...

    async def close(self) -> None:
        """Release the connection."""
        ...


def default_session_store() -> SessionStore:
    """A new SQLite store on `<SCHOLARFLOW_HOME>/scholarflow.db`; the caller closes it."""
    # Imported here: the SQLite module imports this one for the contract and errors.
    from scholarflow.sessions.paths import database_path
    from scholarflow.sessions.sqlite import SqliteSessionStore

    return SqliteSessionStore(database_path())
