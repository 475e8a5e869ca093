"""The server's own records: people and their tokens, knowledge-base shares, ingest jobs.

One small database, chosen as the other stores are: PostgreSQL when
`SCHOLARFLOW_DATABASE_URL` is set (every server process behind one address
reads the same people, shares and jobs), else the SQLite file
`<SCHOLARFLOW_HOME>/server.db`. The statements are the same for both (written
with `%s` marks; SQLite gets `?`). Nothing here decides who may do what: that
is `scholarflow.retrieval.owners` and `scholarflow.server`.

Tables:
- `scholarflow_people`: name, sha256 of the token (never the token), groups
  (comma-separated), when added and, once revoked, when.
- `scholarflow_kb_shares`: a knowledge base's stored name and who may read it
  (`person:NAME` or `group:NAME`).
- `scholarflow_ingest_jobs`: one row per upload: its owner, knowledge base,
  status, progress and results (JSON), and when it last moved.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from scholarflow.extras import require
from scholarflow.settings import get_settings
from scholarflow.storage.paths import home_path
from scholarflow.storage.postgres_db import PostgresDatabase
from scholarflow.storage.services import DATABASE_URL_ENV
from scholarflow.storage.sqlite import SqliteDatabase, transaction

SERVER_DB_FILENAME = "server.db"

_TABLES = (
    """CREATE TABLE IF NOT EXISTS scholarflow_people (
        name TEXT PRIMARY KEY,
        token_hash TEXT UNIQUE,
        groups TEXT NOT NULL DEFAULT '',
        created_at TEXT NOT NULL,
        revoked_at TEXT)""",
    """CREATE TABLE IF NOT EXISTS scholarflow_kb_shares (
        kb TEXT NOT NULL,
        grantee TEXT NOT NULL,
        PRIMARY KEY (kb, grantee))""",
    """CREATE TABLE IF NOT EXISTS scholarflow_ingest_jobs (
        job_id TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        kb TEXT NOT NULL,
        status TEXT NOT NULL,
        total INTEGER NOT NULL,
        done INTEGER NOT NULL,
        results TEXT NOT NULL,
        error TEXT,
        created_at DOUBLE PRECISION NOT NULL,
        updated_at DOUBLE PRECISION NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS scholarflow_ingest_jobs_by_owner "
    "ON scholarflow_ingest_jobs (owner, created_at)",
)
_LAST = "scholarflow_ingest_jobs_by_owner"

Row = tuple[Any, ...]


class ServerDatabase(Protocol):
    """What the server's records need of a database: statements with `%s` marks."""

    async def fetch(self, sql: str, params: Sequence[Any] = ()) -> list[Row]: ...

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run one statement in its own transaction; the number of rows it changed."""
        ...

    async def close(self) -> None: ...


class SqliteServerDatabase:
    def __init__(self, path: Path) -> None:
        self._db = SqliteDatabase(path, ";\n".join(_TABLES) + ";")

    @property
    def path(self) -> Path:
        return self._db.path

    async def fetch(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        query = sql.replace("%s", "?")
        return await self._db.run(lambda c: [tuple(r) for r in c.execute(query, params)])

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        query = sql.replace("%s", "?")

        def work(conn: sqlite3.Connection) -> int:
            with transaction(conn):
                return conn.execute(query, params).rowcount

        return await self._db.run(work)

    async def close(self) -> None:
        await self._db.close()


class PostgresServerDatabase:
    def __init__(self, url: str) -> None:
        self._db = PostgresDatabase(url)

    async def _ready(self) -> None:
        await self._db.ensure("server", _TABLES, _LAST)

    async def fetch(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        await self._ready()
        async with self._db.connection() as conn:
            cur = await conn.execute(sql, tuple(params))
            return [tuple(r) for r in await cur.fetchall()]

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        await self._ready()
        async with self._db.connection() as conn:
            cur = await conn.execute(sql, tuple(params))
            return cur.rowcount

    async def close(self) -> None:
        await self._db.close()


_open: dict[tuple[str, str], ServerDatabase] = {}


def server_database() -> ServerDatabase:
    """The process's server database for the current configuration (opened lazily, shared)."""
    if url := get_settings().database_url:
        require("postgres", DATABASE_URL_ENV)
        return _one(("postgresql", url), lambda: PostgresServerDatabase(url))
    path = home_path() / SERVER_DB_FILENAME
    return _one(("sqlite", str(path.absolute())), lambda: SqliteServerDatabase(path))


def _one(key: tuple[str, str], make: Callable[[], ServerDatabase]) -> ServerDatabase:
    if key not in _open:
        _open[key] = make()
    return _open[key]


async def close_server_databases() -> None:
    """Close every server database this process opened."""
    for db in _open.values():
        await db.close()
    _open.clear()
