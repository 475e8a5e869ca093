"""What the command line checks before a run: its text arguments, files and request.

A request rejected here is exit 2 and leaves nothing behind: no session is
created and no scratch index is touched. The graph checks the same things
again (`request_init`, `document_check`) for callers that bypass the CLI.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, BinaryIO

from scholarflow.errors import InputError
from scholarflow.printable import safe_text, undecodable

__all__ = ["MAX_DIRECT_BYTES", "check_request", "check_text_args", "load_documents",
           "stdin_questions"]

# A file given directly is held in the request (and each checkpoint of its run) and, when
# it needs recall, indexed in the scratch knowledge base at ~6x its size: beyond this,
# a knowledge base (`scholarflow ingest`) is the right tool.
MAX_DIRECT_BYTES = 20_000_000

# How each text argument is named in its error; file paths are checked as files are read.
_TEXT_ARGS = {"question": "the question", "query": "the query", "session": "--session",
              "session_id": "the session id", "kb": "--kb", "doc": "--doc", "mode": "--mode"}


def check_text_args(args: argparse.Namespace) -> None:
    """InputError when an argument held bytes that are not UTF-8 (argv keeps them as lone
    surrogates, which fail much later: on storing, or on printing)."""
    for name, label in _TEXT_ARGS.items():
        value = getattr(args, name, None)
        for text in value if isinstance(value, list) else [value]:
            if isinstance(text, str) and (why := undecodable(text)) is not None:
                raise InputError(f"{label} is not valid UTF-8 ({why}): give it as UTF-8 text, "
                                 "or check the terminal's encoding")


def stdin_questions(stream: BinaryIO) -> Iterator[tuple[str, str | None]]:
    """One question per line of `stream`: (text, None), or ("", why) for a line that is not
    UTF-8, so the lines around it are still answered."""
    for number, raw in enumerate(stream):
        line = raw.rstrip(b"\n")
        if number == 0 and line.startswith(b"\xef\xbb\xbf"):  # a BOM some editors write
            line = line[3:]
        try:
            yield line.decode("utf-8"), None
        except UnicodeDecodeError as exc:
            yield "", (f"the question is not valid UTF-8 (byte 0x{line[exc.start]:02x} at "
                       f"position {exc.start}); save the questions as UTF-8")


async def load_documents(paths: Sequence[str]) -> dict[str, str]:
    """`--file` paths as {doc_id: text}: files, and the supported files of folders.

    A folder's file that is no regular file or has a non-UTF-8 name is skipped
    with a warning, as `ingest` does; a file named directly must be readable.
    """
    from scholarflow.ingest.documents import DocumentError
    from scholarflow.ingest.extract import load_document_file

    contents: dict[str, str] = {}
    for path in await asyncio.to_thread(_expand, paths):
        # A large PDF takes a while to extract: keep the event loop free meanwhile.
        doc = await asyncio.to_thread(load_document_file, path, max_bytes=MAX_DIRECT_BYTES)
        size = len(doc.content.encode("utf-8", "surrogatepass"))
        if size > MAX_DIRECT_BYTES:  # a PDF's text, known only once extracted
            from scholarflow.ingest.documents import too_large

            raise DocumentError(too_large(safe_text(path), size, MAX_DIRECT_BYTES))
        contents.setdefault(doc.doc_id, doc.content)
    return contents


def _expand(paths: Iterable[str]) -> list[str | Path]:
    out: list[str | Path] = []
    for path in paths:
        if not os.path.isdir(path):  # isdir never raises: a bad path is reported on reading
            out.append(path)
            continue
        from scholarflow.ingest.pipeline import collect_files  # only folders need the walker

        found = len(out)
        for item in collect_files([path]):
            if isinstance(item, Path):
                out.append(item)
            elif item.status == "skipped":
                print(f"warning: {safe_text(item.error)}", file=sys.stderr, flush=True)
            else:
                raise InputError(safe_text(item.error))
        if len(out) == found:  # every file skipped: the question would go without documents
            raise InputError(f"{safe_text(path)} holds no PDF, Markdown or text file that can "
                             "be read (see the warnings above); fix or rename those files, or "
                             "give other files")
    return out


async def check_request(payload: dict[str, Any]) -> None:
    """What the graph would reject in request_init or document_check, checked before a
    session exists: the knowledge base's name and presence, the documents named by id,
    and a question with words to search for when there are documents."""
    from scholarflow.retrieval.access import open_kb
    from scholarflow.retrieval.index import DEFAULT_KB, check_kb_name
    from scholarflow.retrieval.index.tokenize import has_words
    from scholarflow.retrieval.kb import DocumentNotFoundError

    kb_name: str | None = payload.get("kb")
    contents = payload.get("document_contents") or {}
    wanted = [d for d in dict.fromkeys(payload.get("doc_ids") or []) if d not in contents]
    if kb_name is not None:
        check_kb_name(kb_name)
    if (contents or kb_name or wanted) and not has_words(payload["query"]):
        raise InputError("the question has no words to search for: ask something, "
                         "e.g. 'what method does this paper propose?'")
    if kb_name or wanted:
        kb = await open_kb(kb_name or DEFAULT_KB)
        known = {d.doc_id for d in await kb.documents(wanted)} if wanted else set()
        if missing := [d for d in wanted if d not in known]:
            raise DocumentNotFoundError(
                f"no document {', '.join(map(safe_text, missing))} in knowledge base "
                f"{kb.name!r}; see `scholarflow search QUERY --kb {kb.name}`")
