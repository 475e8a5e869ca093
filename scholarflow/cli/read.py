"""`scholarflow read FILE... [--json]`: how a paper is read, without storing or embedding it.

It runs the very path `ingest` runs (`scholarflow.ingest.pipeline.prepare_file`:
extraction, cleanup, OCR where a page needs it, structure, chunking), so what
it shows is what `ingest` stores: per file its outcome, what the paper says of
itself (title, authors, year, DOI), its pages, the pages read by OCR or not
read at all, and its chunks with their page, heading and kind (body, caption,
references). A person can see why an answer cites what it cites.

Text mode prints a short header a file and its chunks; `--json` prints one JSON
object a file (`file`, `outcome` "ok" or "refused", `message`, `title`,
`authors`, `year`, `doi`, `pages`, `ocr_pages`, `unreadable_pages`, `chunks`
of `page`, `heading`, `kind`, `text`).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from scholarflow.printable import safe_json, safe_lines, safe_text

if TYPE_CHECKING:  # the ingest modules load tiktoken: only commands that read pay for it
    from scholarflow.ingest.pipeline import Prepared
    from scholarflow.retrieval.kb import Chunk

__all__ = ["add_parser", "chunk_kind", "describe", "read"]

EXIT_SOME_REFUSED = 1
EXIT_ALL_REFUSED = 2
ChunkShown = Literal["body", "caption", "references"]


def add_parser(sub: Any) -> None:
    """The `read` subcommand, on the CLI's subparsers."""
    read_ = sub.add_parser(
        "read", help="show how files are read (text, pages, chunks) without storing them")
    read_.add_argument("paths", nargs="+", metavar="FILE",
                       help="a PDF, Markdown or text file, or a directory of them")
    read_.add_argument("--json", action="store_true",
                       help="one JSON object a file: outcome, title, authors, year, doi, "
                            "pages, chunks")


async def read(args: argparse.Namespace) -> int:
    """Read each file as `ingest` would; print what was read; the exit code."""
    from scholarflow.errors import InputError
    from scholarflow.ingest.ocr import ocr_progress, progress_printer
    from scholarflow.ingest.pipeline import IngestResult, collect_files

    ocr_progress.set(progress_printer(_to_stderr))  # this command's context: OCR is slow
    collected = await asyncio.to_thread(collect_files, args.paths)
    refused = shown = 0
    for item in collected:
        if isinstance(item, IngestResult):  # a folder without papers, a FIFO in a folder
            if item.status == "skipped":
                print(f"warning: {safe_text(item.error)}", file=sys.stderr)
                continue
            record = _refused(item.source, item.error or "cannot be read")
        else:
            record = await asyncio.to_thread(_read_one, item)
        shown += 1
        refused += record["outcome"] == "refused"
        if args.json:
            print(safe_json(record), flush=True)
        else:
            _print_text(record)
    if shown == 0:
        raise InputError("nothing was read: every file was skipped (see the warnings above); "
                         "fix or rename those files and read them again")
    if refused == 0:
        return 0
    return EXIT_ALL_REFUSED if refused == shown else EXIT_SOME_REFUSED


def _to_stderr(line: str) -> None:
    print(safe_text(line), file=sys.stderr, flush=True)


def _read_one(path: Path) -> dict[str, Any]:
    from scholarflow.ingest.documents import DocumentError
    from scholarflow.ingest.pipeline import prepare_file

    try:
        return describe(str(path), prepare_file(path))
    except DocumentError as exc:
        return _refused(str(path), " ".join(str(exc).split()))


def describe(file: str, prepared: Prepared) -> dict[str, Any]:
    """What was read of one file, as `read --json` prints it."""
    extracted = prepared.extracted
    return {
        "file": file, "outcome": "ok", "message": _message(
            extracted.ocr_pages, extracted.unreadable_pages, extracted.ocr_note),
        "title": extracted.document.title, "authors": list(extracted.authors),
        "year": extracted.year, "doi": extracted.doi, "pages": extracted.page_count,
        "ocr_pages": list(extracted.ocr_pages),
        "unreadable_pages": list(extracted.unreadable_pages),
        "chunks": [{"page": chunk.page, "heading": chunk.heading, "kind": chunk_kind(chunk),
                    "text": chunk.text} for chunk in prepared.chunked.chunks],
    }


def chunk_kind(chunk: Chunk) -> ChunkShown:
    """A chunk's kind as shown: a reference list, a figure or table caption, or body text.

    A caption's chunk is stored as body text headed by its label (chunking.py),
    so its heading's last part is a caption label ("Figure 3", "Table 2").
    """
    from scholarflow.ingest.sections import CAPTION, HEADING_SEPARATOR

    if chunk.kind == "references":
        return "references"
    last = (chunk.heading or "").rsplit(HEADING_SEPARATOR, 1)[-1]
    if last and len(last) <= 32 and CAPTION.match(last + ".") and chunk.text.startswith(
            last.split()[0]):
        return "caption"
    return "body"


def _message(ocr: Iterable[int], unreadable: Iterable[int], note: str = "") -> str:
    from scholarflow.ingest.pages import page_ranges

    parts = []
    if ocr := list(ocr):
        parts.append(f"page(s) {page_ranges(ocr)} read by OCR")
    if unreadable := list(unreadable):
        parts.append(f"page(s) {page_ranges(unreadable)} could not be read and are left out")
    if note:
        parts.append(note)
    return "; ".join(parts)


def _refused(file: str, message: str) -> dict[str, Any]:
    return {"file": file, "outcome": "refused", "message": message, "title": None,
            "authors": [], "year": None, "doi": None, "pages": None, "ocr_pages": [],
            "unreadable_pages": [], "chunks": []}


def _print_text(record: dict[str, Any]) -> None:
    name = safe_text(record["file"])
    if record["outcome"] == "refused":
        print(f"{name}: refused: {safe_text(record['message'])}", flush=True)
        return
    chunks = record["chunks"]
    pages = f"{record['pages']} pages, " if record["pages"] else ""
    print(f"{name}: ok, {pages}{len(chunks)} chunks")
    print(f"  title:   {safe_text(record['title'])}")
    print(f"  authors: {safe_text(', '.join(record['authors'])) or '-'}")
    print(f"  year:    {record['year'] or '-'}")
    print(f"  doi:     {safe_text(record['doi'] or '-')}")
    if record["message"]:
        print(f"  note:    {safe_text(record['message'])}")
    for number, chunk in enumerate(chunks, start=1):
        where = [f"p. {chunk['page']}"] if chunk["page"] else []
        where.append(chunk["kind"])
        if chunk["heading"]:
            where.append(safe_text(chunk["heading"]))
        print(f"\n  [{number}] {' | '.join(where)}")
        for line in safe_lines(chunk["text"]).splitlines():
            print(f"    {line}")
    print(flush=True)
