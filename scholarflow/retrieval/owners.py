"""Whose a knowledge base is, and who may read or change it (docs/architecture.md#ownership).

Everyone who uses scholarflow without a server's authentication (the command
line, Python, a server run with `SCHOLARFLOW_AUTH=off`) is the local person,
`local`: their knowledge bases are stored under their plain names, and they
may read and change every knowledge base of the data folder, as they may
its files. On a server with authentication, a person's knowledge base "lab"
is stored as "<person>.lab" (a '.' no name may hold), so two people's "lab"
are two knowledge bases and nobody reaches another's by naming it. A person
names their own knowledge bases plainly and another's, shared with them,
"<owner>/<name>"; only the owner changes a knowledge base, and one that is
neither theirs nor shared with them is, to them, missing: the error says
"no knowledge base", never that it exists.

The local person's knowledge bases (made with `scholarflow ingest` on the
server's machine) are shared the same way, and others name them "local/<name>".
Shares live in the server's database (scholarflow/storage/server_db.py): a
stored name and a grantee, `person:NAME` or `group:NAME`; groups are the
operator's (`scholarflow users add NAME --group G`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scholarflow.errors import InputError
from scholarflow.retrieval.index import check_kb_ref, check_stored_name
from scholarflow.retrieval.kb import KnowledgeBaseNotFoundError
from scholarflow.storage.people import LOCAL_PERSON, check_person_name, groups_of
from scholarflow.storage.server_db import ServerDatabase, server_database

STORED_SEP = "."
REF_SEP = "/"


class ReadOnlyKnowledgeBaseError(InputError):
    """A person asked to change a knowledge base that is shared with them for reading."""


@dataclass(frozen=True, slots=True)
class Person:
    name: str

    @property
    def is_local(self) -> bool:
        return self.name == LOCAL_PERSON


LOCAL = Person(LOCAL_PERSON)


def person_of(config: Mapping[str, Any] | None) -> Person:
    """The person a run is for: the server's authenticated user (`langgraph_auth_user` in
    the run's configuration), else local. An identity that is no person's name is refused,
    never taken for local."""
    user = ((config or {}).get("configurable") or {}).get("langgraph_auth_user")
    if user is None:
        return LOCAL
    identity = getattr(user, "identity", None)
    if identity is None and isinstance(user, Mapping):
        identity = user.get("identity")
    if identity == LOCAL_PERSON:
        return LOCAL
    try:
        return Person(check_person_name(str(identity)))
    except InputError:
        raise InputError("this server's user is not one of its people; ask the operator "
                         "for a token (`scholarflow users add NAME`)") from None


def stored_name(owner: str, name: str) -> str:
    return name if owner == LOCAL_PERSON else f"{owner}{STORED_SEP}{name}"


def split_stored(stored: str) -> tuple[str, str]:
    """(owner, name) of a stored name."""
    owner, sep, name = stored.partition(STORED_SEP)
    return (owner, name) if sep else (LOCAL_PERSON, stored)


def parse_ref(person: Person, ref: str) -> tuple[str, str]:
    """(owner, name) a person means by `ref`: their own `name`, or `owner/name`."""
    check_kb_ref(ref)
    owner, sep, name = ref.partition(REF_SEP)
    return (owner, name) if sep else (person.name, ref)


def shown_name(person: Person, stored: str) -> str:
    """How `person` names the stored knowledge base: plainly if theirs, else owner/name."""
    owner, name = split_stored(stored)
    return name if owner == person.name else f"{owner}{REF_SEP}{name}"


def missing(ref: str) -> KnowledgeBaseNotFoundError:
    return KnowledgeBaseNotFoundError(
        f"no knowledge base {ref!r} among yours and those shared with you; the server's "
        "GET /kbs (`scholarflow --server URL kb list`) lists them")


def _grantees(person: Person, groups: Sequence[str]) -> list[str]:
    return [f"person:{person.name}", *(f"group:{g}" for g in groups)]


async def may_read(person: Person, stored: str, db: ServerDatabase | None = None) -> bool:
    """Whether `person` may read the knowledge base stored as `stored` (existing or not)."""
    check_stored_name(stored)
    owner, _name = split_stored(stored)
    if person.is_local or owner == person.name:
        return True
    db = db or server_database()
    grantees = _grantees(person, await groups_of(person.name, db))
    marks = ", ".join(["%s"] * len(grantees))
    rows = await db.fetch(f"SELECT 1 FROM scholarflow_kb_shares WHERE kb = %s "
                          f"AND grantee IN ({marks})", (stored, *grantees))
    return bool(rows)


async def readable(person: Person, ref: str) -> str:
    """The stored name of the knowledge base `person` means by `ref`, if they may read it;
    else the error a missing one gets."""
    owner, name = parse_ref(person, ref)
    stored = stored_name(owner, name)
    if not await may_read(person, stored):
        raise missing(ref)
    return stored


async def writable(person: Person, ref: str) -> str:
    """The stored name of the knowledge base `person` may change: their own (local: any)."""
    owner, name = parse_ref(person, ref)
    stored = stored_name(owner, name)
    if person.is_local or owner == person.name:
        return stored
    if await may_read(person, stored):
        raise ReadOnlyKnowledgeBaseError(
            f"knowledge base {ref!r} is shared with you for reading; only {owner} changes it")
    raise missing(ref)


async def shared_with(person: Person, db: ServerDatabase | None = None) -> list[str]:
    """Stored names of the knowledge bases shared with `person` (existing or not)."""
    db = db or server_database()
    grantees = _grantees(person, await groups_of(person.name, db))
    marks = ", ".join(["%s"] * len(grantees))
    rows = await db.fetch(f"SELECT DISTINCT kb FROM scholarflow_kb_shares "
                          f"WHERE grantee IN ({marks}) ORDER BY kb", tuple(grantees))
    return [str(r[0]) for r in rows]


def visible(person: Person, stored_names: Sequence[str], shared: Sequence[str]) -> list[str]:
    """Of the stored names there are, those `person` may see: their own and those shared
    with them (local: all); never the scratch index of documents given directly."""
    shares = set(shared)
    return [s for s in stored_names
            if not split_stored(s)[1].startswith("_")
            and (person.is_local or split_stored(s)[0] == person.name or s in shares)]


async def shares_of(stored: str, db: ServerDatabase | None = None) -> list[str]:
    """Who may read `stored` besides its owner: `person:NAME` and `group:NAME`, sorted."""
    db = db or server_database()
    rows = await db.fetch("SELECT grantee FROM scholarflow_kb_shares WHERE kb = %s "
                          "ORDER BY grantee", (stored,))
    return [str(r[0]) for r in rows]


async def share(stored: str, people: Sequence[str] = (), groups: Sequence[str] = (), *,
                revoke: bool = False, db: ServerDatabase | None = None) -> list[str]:
    """Let `people` and `groups` read `stored` (or, with `revoke`, no longer); who may now."""
    grantees = ([f"person:{check_person_name(p)}" for p in people]
                + [f"group:{check_person_name(g, 'group')}" for g in groups])
    owner, _name = split_stored(check_stored_name(stored))
    if f"person:{owner}" in grantees:
        raise InputError(f"{owner} owns this knowledge base already; share it with others")
    db = db or server_database()
    for grantee in grantees:
        if revoke:
            await db.execute("DELETE FROM scholarflow_kb_shares WHERE kb = %s AND grantee = %s",
                             (stored, grantee))
        else:
            await db.execute("INSERT INTO scholarflow_kb_shares (kb, grantee) VALUES (%s, %s) "
                             "ON CONFLICT (kb, grantee) DO NOTHING", (stored, grantee))
    return await shares_of(stored, db)
