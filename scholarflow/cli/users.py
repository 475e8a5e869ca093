"""`scholarflow users add | revoke | list | groups`: the operator's list of a server's people.

Run on the server's machine, with the server's environment (its
`SCHOLARFLOW_HOME`, or `SCHOLARFLOW_DATABASE_URL` for PostgreSQL): the
records are the server's (scholarflow/storage/people.py). `add` prints the
new token once, in a JSON line; it is never stored, so a lost token is
revoked and the person added again. Every other line says nothing secret.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from scholarflow.printable import safe_json


def add_parser(sub: Any) -> None:
    users = sub.add_parser("users", help="the people of a server and their tokens (operator)")
    verbs = users.add_subparsers(dest="verb", required=True)
    add = verbs.add_parser("add", help="add a person; prints their token, once")
    add.add_argument("name", metavar="NAME")
    add.add_argument("--group", action="append", default=[], metavar="GROUP",
                     help="a group the person is in, for knowledge bases shared with it "
                          "(repeatable)")
    revoke = verbs.add_parser("revoke", help="revoke a person's token now")
    revoke.add_argument("name", metavar="NAME")
    verbs.add_parser("list", help="one JSON line per person (never a token)")
    groups = verbs.add_parser("groups", help="set the groups a person is in")
    groups.add_argument("name", metavar="NAME")
    groups.add_argument("groups", nargs="*", metavar="GROUP")


async def run(args: argparse.Namespace) -> int:
    from scholarflow.storage import people
    from scholarflow.storage.server_db import close_server_databases

    try:
        if args.verb == "add":
            token = await people.add_person(args.name, args.group)
            print(safe_json({"name": args.name, "groups": sorted(set(args.group)),
                             "token": token}), flush=True)
            print(f"note: this is {args.name}'s token; it is shown once and never stored",
                  file=sys.stderr)
        elif args.verb == "revoke":
            await people.revoke_person(args.name)
            print(safe_json({"name": args.name, "status": "revoked"}), flush=True)
        elif args.verb == "groups":
            await people.set_groups(args.name, args.groups)
            print(safe_json({"name": args.name, "groups": sorted(set(args.groups))}),
                  flush=True)
        else:
            for person in await people.list_people():
                print(safe_json({"name": person.name, "groups": list(person.groups),
                                 "active": person.active, "created_at": person.created_at,
                                 "revoked_at": person.revoked_at}), flush=True)
        return 0
    finally:
        await close_server_databases()
