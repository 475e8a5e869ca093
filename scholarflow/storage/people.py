"""The people of a server and their tokens (the operator's `scholarflow users` commands).

A token is 32 random bytes (URL-safe base64, prefixed `sf_`), shown once when
the person is added and never stored: the table keeps its sha256. A request's
token is hashed and looked up; the stored hash is compared with
`hmac.compare_digest`. Revoking clears the hash, so the old token matches
nobody from the next request on; adding a revoked person again gives them a
new token, and their sessions and knowledge bases are theirs again.

Names and groups are 1-32 lower-case letters, digits, '_' or '-', starting with
a letter: they are part of knowledge bases' stored names and of log lines, so
nothing else is allowed. `local` is the name of whoever uses scholarflow without
a server's authentication (the command line, a server with auth off): no
person may take it.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from scholarflow.errors import InputError
from scholarflow.storage.server_db import ServerDatabase, server_database

LOCAL_PERSON = "local"
TOKEN_PREFIX = "sf_"
TOKEN_BYTES = 32
_NAME = re.compile(r"[a-z][a-z0-9_-]{0,31}")
# What a token can look like: anything else is refused before it is hashed.
_TOKEN = re.compile(r"sf_[A-Za-z0-9_-]{43}")


class PersonError(InputError):
    """A person or group name the operator cannot use, or a person who is not there."""


@dataclass(frozen=True, slots=True)
class PersonRecord:
    """One line of `scholarflow users list`: never the token, nor its hash."""

    name: str
    groups: tuple[str, ...]
    created_at: str
    revoked_at: str | None

    @property
    def active(self) -> bool:
        return self.revoked_at is None


def check_person_name(name: str, what: str = "person") -> str:
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise PersonError(f"invalid {what} name {name!r}: use 1-32 lower-case letters, digits, "
                          "'_' or '-', starting with a letter, e.g. 'ada'")
    if name == LOCAL_PERSON:
        raise PersonError(f"{LOCAL_PERSON!r} is the name of whoever uses scholarflow without "
                          "authentication; choose another name")
    return name


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def new_token() -> str:
    raw = secrets.token_bytes(TOKEN_BYTES)
    return TOKEN_PREFIX + base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def looks_like_token(token: str) -> bool:
    return bool(_TOKEN.fullmatch(token))


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _groups(text: str) -> tuple[str, ...]:
    return tuple(g for g in text.split(",") if g)


async def add_person(name: str, groups: Sequence[str] = (),
                     db: ServerDatabase | None = None) -> str:
    """Add `name` (or give a revoked person a new token) and return the token, once."""
    check_person_name(name)
    for group in groups:
        check_person_name(group, "group")
    db = db or server_database()
    token = new_token()
    rows = await db.fetch("SELECT revoked_at FROM scholarflow_people WHERE name = %s", (name,))
    joined = ",".join(sorted(set(groups)))
    if rows and rows[0][0] is None:
        raise PersonError(f"{name!r} is already a person of this server; `scholarflow users "
                          f"revoke {name}` first to give them a new token")
    if rows:
        await db.execute("UPDATE scholarflow_people SET token_hash = %s, groups = %s, "
                         "revoked_at = NULL WHERE name = %s", (token_hash(token), joined, name))
    else:
        await db.execute("INSERT INTO scholarflow_people (name, token_hash, groups, created_at) "
                         "VALUES (%s, %s, %s, %s)", (name, token_hash(token), joined, _now()))
    return token


async def revoke_person(name: str, db: ServerDatabase | None = None) -> None:
    """Revoke `name`'s token now; what they own stays (and is nobody else's)."""
    check_person_name(name)
    db = db or server_database()
    changed = await db.execute("UPDATE scholarflow_people SET token_hash = NULL, revoked_at = %s "
                               "WHERE name = %s AND revoked_at IS NULL", (_now(), name))
    if not changed:
        raise PersonError(f"no active person {name!r}; `scholarflow users list` lists them")


async def set_groups(name: str, groups: Sequence[str], db: ServerDatabase | None = None) -> None:
    check_person_name(name)
    for group in groups:
        check_person_name(group, "group")
    db = db or server_database()
    changed = await db.execute("UPDATE scholarflow_people SET groups = %s WHERE name = %s",
                               (",".join(sorted(set(groups))), name))
    if not changed:
        raise PersonError(f"no person {name!r}; `scholarflow users list` lists them")


async def list_people(db: ServerDatabase | None = None) -> list[PersonRecord]:
    db = db or server_database()
    rows = await db.fetch("SELECT name, groups, created_at, revoked_at FROM scholarflow_people "
                          "ORDER BY name")
    return [PersonRecord(r[0], _groups(r[1]), r[2], r[3]) for r in rows]


async def person_by_token(token: str, db: ServerDatabase | None = None
                          ) -> tuple[str, tuple[str, ...]] | None:
    """(name, groups) of the active person whose token this is; None for any other string."""
    if not looks_like_token(token):
        return None
    wanted = token_hash(token)
    db = db or server_database()
    rows = await db.fetch("SELECT name, groups, token_hash FROM scholarflow_people "
                          "WHERE token_hash = %s AND revoked_at IS NULL", (wanted,))
    for name, groups, stored in rows:
        if stored is not None and hmac.compare_digest(str(stored), wanted):
            return str(name), _groups(str(groups))
    return None


async def groups_of(name: str, db: ServerDatabase | None = None) -> tuple[str, ...]:
    """The groups of an active person; none for anyone else (a revoked person included)."""
    db = db or server_database()
    rows = await db.fetch("SELECT groups FROM scholarflow_people "
                          "WHERE name = %s AND revoked_at IS NULL", (name,))
    return _groups(str(rows[0][0])) if rows else ()
