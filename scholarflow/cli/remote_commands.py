"""The commands a server runs for `--server URL` (cli/remote.py): which one, and `kb` and
`sessions`, whose output is what they print on this machine.

`kb list | docs | remove | share` go to the library routes (`GET /kbs`,
`/kbs/{name}/documents`, `/kbs/{name}/shares`; a knowledge base another person
shares is `OWNER/NAME`, `?owner=OWNER` there). `sessions list | show | delete`
are the person's threads, through langgraph_sdk: `list` one line per thread,
newest first, with the statistics of its `session` value; `show` one line per
message of its state; `delete` the thread. Another person's thread is missing
to them, as one that does not exist.
"""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any
from urllib.parse import quote

import httpx

from scholarflow.cli.remote import Remote, check_thread_id, kb_route, no_session
from scholarflow.errors import InputError
from scholarflow.printable import safe_json

_PAGE = 100  # threads per search request
AskInput = Callable[[argparse.Namespace], Awaitable[dict[str, Any]]]


async def run(server: str, args: argparse.Namespace, *, ask_input: AskInput) -> int:
    """The parsed command, on `server`; `ask_input` builds an `ask`'s graph input."""
    from scholarflow.cli.files import check_text_args

    check_text_args(args)
    async with Remote(server) as remote:
        if args.command == "ingest":
            from scholarflow.cli.remote_ingest import ingest

            return await ingest(remote, args.paths, args.kb)
        if args.command in ("ask", "resume"):
            from scholarflow.cli import remote_run

            if args.command == "ask":
                return await remote_run.ask(remote, await ask_input(args), args)
            return await remote_run.resume(remote, args)
        if args.command == "kb":
            return await _library(remote, args)
        return await _sessions(remote, args)


async def _library(remote: Remote, args: argparse.Namespace) -> int:
    """`kb list | docs | remove | share`, printing what they print on this machine."""
    if args.verb == "list":
        for row in await remote.request("GET", "/kbs"):
            print(safe_json({k: row.get(k) for k in (
                "name", "documents", "chunks", "backend", "owner", "writable")}), flush=True)
        return 0
    hint = f"`scholarflow kb list {remote.hint()}` lists those you may read"
    if args.verb == "docs":
        path, params = kb_route(args.kb, "/documents")
        for doc in await remote.request("GET", path, params=params):
            print(safe_json(doc), flush=True)
        return 0
    if args.verb == "remove":
        path, params = kb_route(args.kb, f"/documents/{quote(args.doc_id, safe='')}")
        try:
            done = await remote.request("DELETE", path, params=params)
        except InputError as exc:
            if "has no document" not in str(exc):
                raise
            raise InputError(f"knowledge base {args.kb!r} has no document {args.doc_id!r}; "
                             f"`scholarflow kb docs {args.kb} {remote.hint()}` lists its "
                             "documents") from None
        print(safe_json(done), flush=True)
        return 0
    path, params = kb_route(args.kb, "/shares")
    body = {"people": args.people, "groups": args.groups, "revoke": args.revoke}
    shared = await remote.request("POST", path, params=params, json=body,
                                  missing=f"no knowledge base {args.kb!r} of yours; {hint}")
    print(safe_json(shared), flush=True)
    return 0


async def _sessions(remote: Remote, args: argparse.Namespace) -> int:
    """`sessions list | show | delete`: the person's threads on the server."""
    if args.verb == "list":
        for row in await _session_rows(remote):
            print(safe_json(row), flush=True)
        return 0
    thread = check_thread_id(remote, args.session_id)
    try:
        if args.verb == "show":
            state = await remote.sdk.threads.get_state(thread)
        else:
            await remote.sdk.threads.delete(thread)
    except httpx.HTTPStatusError as exc:
        if exc.response.status_code == 404:
            raise no_session(remote, thread) from None
        if exc.response.status_code == 409:  # deleted under a live run
            raise InputError(f"a run is in progress on session {thread}; delete it once that "
                             "run has finished") from None
        raise remote.failure(exc) from None
    except (httpx.HTTPError, OSError) as exc:
        raise remote.failure(exc) from None
    if args.verb == "delete":
        print(safe_json({"deleted": thread}), flush=True)
        return 0
    values: Any = dict(state).get("values") or {}
    for line in _message_lines(values.get("messages") or [] if isinstance(values, dict) else []):
        print(safe_json(line), flush=True)
    return 0


async def _session_rows(remote: Remote) -> list[dict[str, Any]]:
    """One line per thread of the person's, newest first, as `sessions list` prints them."""
    rows: list[dict[str, Any]] = []
    while True:
        try:
            page = await remote.sdk.threads.search(
                limit=_PAGE, offset=len(rows), sort_by="updated_at", sort_order="desc",
                select=["thread_id", "created_at", "updated_at"],
                extract={"session": "values.session"})
        except (httpx.HTTPError, OSError) as exc:
            raise remote.failure(exc) from None
        for thread in page:
            row: dict[str, Any] = dict(thread)
            rows.append(_session_row(row, (row.get("extracted") or {}).get("session")))
        if len(page) < _PAGE:
            return rows


def _session_row(thread: dict[str, Any], session: Any) -> dict[str, Any]:
    thread_id = str(thread["thread_id"])
    if isinstance(session, dict):
        return {"session_id": thread_id, "title": session.get("title", ""),
                "message_count": session.get("message_count", 0),
                "total_token_count": session.get("total_token_count", 0),
                "created_at": session.get("created_at"), "updated_at": session.get("updated_at")}
    # No run has reached request_init yet: the thread's own times stand in.
    return {"session_id": thread_id, "title": "", "message_count": 0, "total_token_count": 0,
            "created_at": _timestamp(thread.get("created_at")),
            "updated_at": _timestamp(thread.get("updated_at"))}


def _timestamp(value: Any) -> float | None:
    try:
        return datetime.fromisoformat(str(value)).timestamp()
    except ValueError:
        return None


def _message_lines(raw: list[Any]) -> list[dict[str, Any]]:
    """The thread's messages (as the server sends them) as `sessions show` prints them."""
    from langchain_core.messages import messages_from_dict

    from scholarflow.sessions.conversation import as_session_messages, message_type

    known = [m for m in raw if isinstance(m, dict) and m.get("type") in ("human", "ai", "system")]
    messages = messages_from_dict([{"type": m["type"], "data": m} for m in known])
    shown = [m for m in messages if message_type(m) is not None]  # as as_session_messages
    return [{"id": message.id, "type": view.type.value, "token_count": view.token_count,
             "compressed": view.compressed, "created_at": view.created_at or None,
             "content": view.content}
            for message, view in zip(shown, as_session_messages(messages), strict=True)]
