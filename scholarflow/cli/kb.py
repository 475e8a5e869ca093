"""The knowledge-base commands: `ingest`, `search` and `kb` (cli/library.py).

`ingest` prints one JSON line per document on stdout and one `error:` line
per failed file on stderr, with a progress bar on stderr when it is a
terminal. `search` prints the recalled chunks as JSON lines, best first.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scholarflow.cli import library as cli_library
from scholarflow.context import Context
from scholarflow.errors import InputError
from scholarflow.printable import safe_json, safe_text
from scholarflow.retrieval.index import DEFAULT_KB

if TYPE_CHECKING:  # the ingest modules load tiktoken: only `ingest` and `search` pay for it
    from scholarflow.ingest.pipeline import IngestResult
    from scholarflow.retrieval.kb import KnowledgeBase, RecallParams

EXIT_SOME_FAILED = 1
EXIT_ALL_BAD = 2
SCORE_DIGITS = 4
PLAIN_EVERY = 10.0  # seconds between progress lines when stderr is not a terminal


def add_parsers(sub: Any) -> None:
    """The `ingest` and `search` subcommands, on the CLI's subparsers."""
    ingest = sub.add_parser("ingest", help="add PDF, Markdown and text files to a knowledge base")
    ingest.add_argument("paths", nargs="+", metavar="PATH",
                        help="a file, or a directory to ingest recursively")
    ingest.add_argument("--kb", default=DEFAULT_KB,
                        help=f"knowledge base name (default: {DEFAULT_KB})")

    search = sub.add_parser("search", help="print the chunks recall finds, best first")
    search.add_argument("query")
    search.add_argument("--kb", default=DEFAULT_KB,
                        help=f"knowledge base name (default: {DEFAULT_KB})")
    search.add_argument("--doc", action="append", default=[], metavar="ID",
                        help="only this document (repeatable)")
    default_top_n = Context.__dataclass_fields__["top_n"].default
    search.add_argument("--top-n", type=_positive_int, default=None, metavar="N",
                        help=f"chunks to print (default: {default_top_n})")
    search.add_argument("--no-translate", action="store_true",
                        help="search with the query alone (by default, when an LLM is "
                             "configured, its translation into the other language is searched "
                             "too, as the workflow does)")
    add_llm_timeout(search)
    cli_library.add_parser(sub)


async def library(args: argparse.Namespace) -> int:
    """`scholarflow kb list | docs | remove` (cli/library.py)."""
    return await cli_library.run(args)


def add_llm_timeout(parser: argparse.ArgumentParser) -> None:
    """`--llm-timeout SECONDS`: Context.llm_timeout_seconds (a value given wins over the
    environment's SCHOLARFLOW_LLM_TIMEOUT)."""
    parser.add_argument("--llm-timeout", type=_positive_seconds, default=None, metavar="SECONDS",
                        help="seconds one LLM call may take (default: $SCHOLARFLOW_LLM_TIMEOUT, "
                             "else 120)")


def _positive_seconds(value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {value!r}") from None
    if not 0 < seconds < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {value!r}")
    return seconds


def _positive_int(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {value!r}") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {number}")
    return number


async def ingest(args: argparse.Namespace) -> int:
    from scholarflow.ingest.ocr import ocr_progress, progress_printer
    from scholarflow.ingest.pipeline import ingest_paths
    from scholarflow.retrieval.embeddings import embedding_progress
    from scholarflow.retrieval.kb_registry import close_all

    progress = _Progress()
    embedding_progress.set(progress.embedded)  # this command's context only
    ocr_progress.set(progress_printer(lambda line: _plain_write(safe_text(line), sys.stderr)))
    try:
        results = await ingest_paths(args.paths, args.kb, on_result=progress.result,
                                     on_files=progress.start)
    finally:
        progress.close()
        await close_all()
    failed = sum(1 for r in results if not r.ok)
    stored = sum(1 for r in results if r.status in ("added", "unchanged"))
    if failed == 0 and stored == 0:  # only skipped files: say so, or it looks like success
        raise InputError("nothing was ingested: every file was skipped (see the warnings "
                         "above); fix or rename those files and ingest again")
    if failed == 0:
        return 0
    return EXIT_ALL_BAD if stored == 0 else EXIT_SOME_FAILED


async def search(args: argparse.Namespace) -> int:
    from scholarflow.retrieval.access import recall_params
    from scholarflow.retrieval.index.tokenize import has_words
    from scholarflow.retrieval.kb import (
        DocumentNotFoundError,
        RecalledChunk,
        best_per_chunk,
    )
    from scholarflow.retrieval.kb_registry import close_all, open_knowledge_base

    query = args.query.strip()
    if not has_words(query):  # checked before opening anything: nothing to look up
        raise InputError("the query has no words to search for: give some words, "
                         "e.g. 'sparse attention memory'")
    timeout = getattr(args, "llm_timeout", None)
    ctx = Context(**({"llm_timeout_seconds": timeout} if timeout else {}))
    params = recall_params(ctx, [query], top_n=args.top_n)
    kb = await open_knowledge_base(args.kb)
    try:
        doc_ids = list(dict.fromkeys(args.doc)) or None
        if doc_ids:
            known = {d.doc_id for d in await kb.documents(doc_ids)}
            missing = [d for d in doc_ids if d not in known]
            if missing:
                raise DocumentNotFoundError(
                    f"knowledge base {args.kb!r} has no document {missing[0]!r}; "
                    "`scholarflow ingest` prints the ids")
        queries = [query]
        if ctx.llm_configured and not args.no_translate:
            queries += await _translation(ctx, query)
        hits: list[RecalledChunk] = []
        for text in queries:
            hits += await kb.search(text, doc_ids=doc_ids, params=params)
        found = best_per_chunk(hits, params.top_n)  # as the workflow's recall step
        if not found:  # exit 0 all the same: finding nothing is an answer, not an error
            print(f"note: {await _why_nothing(kb, args.kb, params, bool(doc_ids))}",
                  file=sys.stderr)
    finally:
        await close_all()
    for chunk in found:
        print(safe_json({
            "doc_id": chunk.doc_id, "chunk_id": chunk.chunk_id,
            "score": round(chunk.score, SCORE_DIGITS), "text": chunk.text,
            "title": chunk.title, "heading": chunk.heading, "page": chunk.page,
            "kind": chunk.kind,
        }), flush=True)
    return 0


async def _why_nothing(kb: KnowledgeBase, name: str, params: RecallParams, some: bool) -> str:
    """Why a search found nothing (`some`: only some documents were searched)."""
    if not some and not await kb.documents():  # left by an ingest of an older version
        return (f"knowledge base {name!r} has no documents; add some with "
                f"`scholarflow ingest FILE --kb {name}`")
    return (f"no chunk scored above similarity_threshold {params.similarity_threshold:g}; "
            + ("try other words, or search more documents" if some else "try other words"))


async def _translation(ctx: Context, query: str) -> list[str]:
    """The query in the other language, by the configured LLM; [] (and a note) if it fails.

    Search still works without it: the index translates word by word itself
    (retrieval/index/crosslingual.py); a whole-sentence translation adds what a
    dictionary misses.
    """
    from scholarflow.errors import LLMError
    from scholarflow.language import is_chinese
    from scholarflow.llm import calls as llm
    from scholarflow.prompts import QUERY_TRANSLATION_PROMPT

    language = "English" if is_chinese(query) else "Simplified Chinese"
    system = QUERY_TRANSLATION_PROMPT.format(language=language)
    try:
        result = await llm.complete(ctx, [("system", system), ("user", query)],
                                    node="query_translation")
    except LLMError as exc:
        print(f"note: the query was not translated ({safe_text(exc)}); searching with it alone",
              file=sys.stderr)
        return []
    lines = [line.strip() for line in result.text.strip().splitlines() if line.strip()]
    translation = lines[0] if lines else ""
    return [translation] if translation and translation != query else []


class _Progress:
    """A tqdm bar on stderr when it is a terminal, else a progress line on stderr at most every
    PLAIN_EVERY seconds (a CI log, a notebook, nohup); result lines either way."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._bar: Any = None
        self._write: Callable[..., None] = _plain_write
        self._chunks = 0  # embedded, for the bar
        self._clock = clock
        self._started = self._last_line = clock()
        self._files = self._done = 0
        self._stored = self._embedding = 0  # chunks of the files added; of the file under way
        self._plain = False

    def start(self, files: int) -> None:
        self._files = files
        if not sys.stderr.isatty():
            self._plain = files > 0
            return
        if files < 1:
            return
        # Lazy: only a terminal run draws a bar. tqdm ships no types; types-tqdm may be there.
        from tqdm import tqdm  # type: ignore[import-untyped, unused-ignore]

        self._bar = tqdm(total=files, unit="file", file=sys.stderr, leave=False,
                         dynamic_ncols=True)
        self._write = tqdm.write  # prints above the bar instead of through it

    def result(self, result: IngestResult) -> None:
        # File names are anyone's text: escaped, so a name cannot drive the terminal.
        if result.status == "skipped":
            self._write(f"warning: {safe_text(result.error)}", file=sys.stderr)
        elif result.ok:
            self._write(safe_json(result.as_json()), file=sys.stdout)
        else:
            self._write(f"error: {safe_text(result.error)}", file=sys.stderr)
        if result.status != "skipped":
            self._done += 1
        if result.status == "added":
            self._stored += result.chunks
        self._embedding = 0
        if self._bar is not None:
            self._bar.set_postfix_str(safe_text(Path(result.source).name)[:40], refresh=False)
            self._bar.update(1)
        self._plain_line()

    def embedded(self, passages: int) -> None:
        """Chunks embedded so far: a large file moves the bar's text, not just its end."""
        self._chunks += passages
        self._embedding += passages
        if self._bar is not None:
            self._bar.set_postfix_str(f"{self._chunks} chunks embedded")
        self._plain_line()

    def _plain_line(self) -> None:
        """`ingest: 12/85 files, 830 chunks, 9.8 chunks/s, about 7 min left`, when due."""
        now = self._clock()
        if not self._plain or now - self._last_line < PLAIN_EVERY:
            return
        self._last_line = now
        elapsed = max(now - self._started, 1e-9)
        chunks = self._stored + self._embedding
        left = (f"about {_duration(elapsed / self._done * (self._files - self._done))} left"
                if self._done else "time left not known yet")
        print(f"ingest: {self._done}/{self._files} files, {chunks} chunks, "
              f"{chunks / elapsed:.1f} chunks/s, {left}", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _plain_write(line: str, file: Any = None) -> None:
    print(line, file=file, flush=True)
