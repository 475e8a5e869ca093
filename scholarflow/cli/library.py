"""`scholarflow kb list | docs KB | remove KB DOC_ID | share KB`: managing a library.

Each prints JSON lines on stdout, as the other commands do: `list` one per
knowledge base, `docs` one per document in the order added, `remove` one
for the document removed, `share` one with who may now read it (on a
server: retrieval/owners.py). A wrong name or id is one `error:` line.
"""

from __future__ import annotations

import argparse
from typing import Any

from scholarflow.printable import safe_json


def add_parser(sub: Any) -> None:
    """The `kb` command and its verbs, on the CLI's subparsers."""
    kb = sub.add_parser("kb", help="list knowledge bases, their documents; remove a document")
    verbs = kb.add_subparsers(dest="verb", required=True)
    verbs.add_parser("list", help="one JSON line per knowledge base: name, documents, chunks, "
                                  "backend")
    docs = verbs.add_parser("docs", help="one JSON line per document of a knowledge base")
    docs.add_argument("kb", metavar="KB")
    remove = verbs.add_parser("remove", help="remove a document (its text and chunks)")
    remove.add_argument("kb", metavar="KB")
    remove.add_argument("doc_id", metavar="DOC_ID")
    share = verbs.add_parser("share", help="let people or groups of a server read a knowledge "
                                           "base (PERSON/NAME for a person's)")
    share.add_argument("kb", metavar="KB")
    share.add_argument("--with", dest="people", action="append", default=[], metavar="PERSON")
    share.add_argument("--group", dest="groups", action="append", default=[], metavar="GROUP")
    share.add_argument("--revoke", action="store_true", help="take the reading back")


async def run(args: argparse.Namespace) -> int:
    from scholarflow.retrieval.kb_registry import close_all

    try:
        if args.verb == "list":
            return await _list()
        if args.verb == "docs":
            return await _docs(args.kb)
        if args.verb == "share":
            return await _share(args)
        return await _remove(args.kb, args.doc_id)
    finally:
        await close_all()


async def _list() -> int:
    from scholarflow.retrieval.kb_registry import describe_knowledge_bases

    for info in await describe_knowledge_bases():
        print(safe_json({"name": info.name, "documents": info.documents,
                         "chunks": info.chunks, "backend": info.backend}), flush=True)
    return 0


async def _docs(name: str) -> int:
    from scholarflow.retrieval.kb_registry import open_knowledge_base

    kb = await open_knowledge_base(name)
    for doc in await kb.documents():
        print(safe_json({"doc_id": doc.doc_id, "title": doc.title, "year": doc.year,
                         "pages": doc.pages, "chunks": doc.chunks, "added": doc.added,
                         "authors": list(doc.authors), "doi": doc.doi, "source": doc.source}),
              flush=True)
    return 0


async def _remove(name: str, doc_id: str) -> int:
    from scholarflow.retrieval.kb import DocumentNotFoundError
    from scholarflow.retrieval.kb_registry import open_knowledge_base

    kb = await open_knowledge_base(name)
    try:
        await kb.remove(doc_id)
    except DocumentNotFoundError:
        raise DocumentNotFoundError(
            f"knowledge base {name!r} has no document {doc_id!r}; "
            f"`scholarflow kb docs {name}` lists its documents") from None
    print(safe_json({"doc_id": doc_id, "kb": name, "status": "removed"}), flush=True)
    return 0


async def _share(args: argparse.Namespace) -> int:
    from scholarflow.retrieval.owners import LOCAL, share, writable
    from scholarflow.storage.server_db import close_server_databases

    try:
        stored = await writable(LOCAL, args.kb)
        readers = await share(stored, args.people, args.groups, revoke=args.revoke)
    finally:
        await close_server_databases()
    print(safe_json({"kb": args.kb, "readers": readers}), flush=True)
    return 0
