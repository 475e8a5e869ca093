"""Ingestion pipeline: files -> extract -> chunk -> `KnowledgeBase.add`, one file at a time.

Each document goes in with one atomic `add`, so a killed ingest leaves
whole documents or none. A file that cannot be read is reported and the
others still go in. Extracting and chunking the next file (a worker thread)
overlaps with storing the current one (embedding, mostly).
"""

from __future__ import annotations

import asyncio
import hashlib
import os
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from scholarflow.ingest.chunking import ChunkedDocument, chunk_document
from scholarflow.ingest.documents import Document, DocumentError, read_document_bytes
from scholarflow.ingest.extract import (
    ExtractedDocument,
    Kind,
    extract_file,
    extracted_from_text,
)
from scholarflow.ingest.files import IngestResult, collect_files
from scholarflow.printable import safe_text
from scholarflow.retrieval.kb import DocumentNotFoundError, KnowledgeBase, StoredDocument

__all__ = [
    "IngestResult",
    "add_document",
    "collect_files",
    "ingest_files",
    "ingest_paths",
    "prepare_file",
]


@dataclass(frozen=True, slots=True)
class Prepared:
    extracted: ExtractedDocument
    chunked: ChunkedDocument

    def stored(self) -> StoredDocument:
        doc, extracted = self.extracted.document, self.extracted
        return StoredDocument(doc_id=doc.doc_id, title=doc.title, source=doc.source,
                              content_hash=doc.content_hash, tokens=self.chunked.tokens,
                              chunks=len(self.chunked.chunks), authors=extracted.authors,
                              year=extracted.year, doi=extracted.doi,
                              pages=extracted.page_count)


OnResult = Callable[[IngestResult], None]


async def ingest_paths(
    paths: Sequence[str | Path],
    kb_name: str,
    *,
    on_result: OnResult | None = None,
    on_files: Callable[[int], None] | None = None,
    names: Sequence[str] | None = None,
    keep_open: bool = False,
) -> list[IngestResult]:
    """Ingest files and directories (their supported files, recursively, sorted) into `kb_name`.

    `on_result` gets each result as soon as it is known; `on_files` gets the
    number of files once the paths are expanded (for a progress bar).
    Creates the knowledge base when it does not exist, with its first
    document: when every file fails, no empty knowledge base is left behind.
    `names`: as for `ingest_files`, when every path is a file. `keep_open`: leave
    the knowledge base open for the process's other users (a server's runs).
    """
    from scholarflow.retrieval.kb import KnowledgeBaseNotFoundError
    from scholarflow.retrieval.kb_registry import open_knowledge_base

    collected = await asyncio.to_thread(collect_files, paths)
    files = [item for item in collected if isinstance(item, Path)]
    if on_files is not None:
        on_files(len(files))
    results: list[IngestResult] = []

    def report(result: IngestResult) -> None:
        results.append(result)
        if on_result is not None:
            on_result(result)

    for item in collected:
        if isinstance(item, IngestResult):
            report(item)  # a path that named nothing ingestible
    if not files:
        return results
    kb: KnowledgeBase | None
    try:  # also checks the name before any file is read
        kb = await open_knowledge_base(kb_name)
    except KnowledgeBaseNotFoundError:
        kb = None

    async def target() -> KnowledgeBase:
        nonlocal kb
        if kb is None:
            kb = await open_knowledge_base(kb_name, create=True)
        return kb

    try:
        await _ingest(target, files, report, existing=kb, names=names)
    finally:
        if kb is not None and not keep_open:
            await kb.close()
    return results


async def ingest_files(
    kb: KnowledgeBase, files: Sequence[str | Path], *, on_result: OnResult | None = None,
    names: Sequence[str] | None = None,
) -> list[IngestResult]:
    """Ingest these files into an open knowledge base, in order; one result per file.

    `names` (one per file): what each is called instead of its path, in the results,
    their errors and the stored `source` (an upload's file name, not where the server
    keeps it meanwhile); a file of the same name replaces its earlier version."""

    async def target() -> KnowledgeBase:
        return kb

    return await _ingest(target, files, on_result, existing=kb, names=names)


async def _ingest(
    target: Callable[[], Awaitable[KnowledgeBase]],
    files: Sequence[str | Path],
    on_result: OnResult | None,
    *,
    existing: KnowledgeBase | None = None,
    names: Sequence[str] | None = None,
) -> list[IngestResult]:
    """`ingest_files`, asking `target` for the knowledge base only once a file has to be stored.

    A file stored before with the same bytes (`existing` has it) is "unchanged"
    without being read beyond its hash: a rerun after a kill skips what is done.
    """
    results: list[IngestResult] = []
    pending: asyncio.Task[_Read] | None = None
    versions = await _Versions.of(existing) if existing is not None else _Versions({})

    def name(index: int) -> str | None:
        return names[index] if names is not None else None

    def read(index: int) -> asyncio.Task[_Read]:
        return asyncio.create_task(
            asyncio.to_thread(_read_file, files[index], versions, name(index)))

    try:
        for index, file in enumerate(files):
            current = pending or read(index)
            prepared, file_hash = await current
            pending = read(index + 1) if index + 1 < len(files) else None
            shown = name(index) or str(file)
            if isinstance(prepared, DocumentError):
                message = str(prepared).replace(str(file), shown)
                result = IngestResult(shown, "error", error=_naming(shown, DocumentError(message)))
            elif isinstance(prepared, StoredDocument):
                result = IngestResult(shown, "unchanged", doc_id=prepared.doc_id,
                                      title=prepared.title, chunks=prepared.chunks,
                                      tokens=prepared.tokens)
            else:
                result = await _store(await target(), shown, prepared, versions=versions,
                                      path=file, file_hash=file_hash, name=name(index))
            results.append(result)
            if on_result is not None:
                on_result(result)
    finally:
        if pending is not None:
            pending.cancel()  # the thread finishes on its own; its result is dropped
    return results


# What reading a file gave: the stored document when its bytes are unchanged, else it
# prepared (or why not); and the hash of its bytes, when they could be read.
_Read = tuple[Prepared | StoredDocument | DocumentError, str | None]


def _read_file(path: str | Path, versions: _Versions, name: str | None = None) -> _Read:
    """Blocking: hash the file; extract and chunk it unless it is stored with these bytes."""
    try:
        digest = "sha256:" + hashlib.sha256(read_document_bytes(path)).hexdigest()
    except DocumentError:
        digest = None  # reading it again below reports why
    if digest is not None and (known := versions.unchanged(name or _absolute(path), digest)):
        return known, digest
    return _prepare_or_error(path), digest


class _Versions:
    """Which stored documents came from which file: a changed file replaces its old version.

    A file is known by its absolute path (`StoredDocument.source`); read once
    per ingest (one listing), not once per file, then kept up to date.
    """

    def __init__(self, by_source: dict[str, list[str]],
                 by_bytes: dict[tuple[str, str], StoredDocument] | None = None) -> None:
        self._by_source = by_source
        self._by_bytes = by_bytes or {}  # (source, file hash) -> the document stored from it

    @classmethod
    async def of(cls, kb: KnowledgeBase) -> _Versions:
        by_source: dict[str, list[str]] = {}
        by_bytes: dict[tuple[str, str], StoredDocument] = {}
        for document in await kb.documents():
            if document.source:
                by_source.setdefault(document.source, []).append(document.doc_id)
                if document.file_hash:
                    by_bytes[(document.source, document.file_hash)] = document
        return cls(by_source, by_bytes)

    def unchanged(self, source: str, file_hash: str) -> StoredDocument | None:
        """The document stored from this very file with these very bytes, if any."""
        return self._by_bytes.get((source, file_hash))

    def of_file(self, source: str, given: str, doc_id: str) -> tuple[str, ...]:
        """The doc_ids stored from this file other than `doc_id` (older knowledge bases
        stored the path as given, not absolute)."""
        found = self._by_source.get(source, []) + self._by_source.get(given, [])
        return tuple(d for d in dict.fromkeys(found) if d != doc_id)

    def stored(self, source: str, given: str, doc_id: str) -> None:
        self._by_source.pop(given, None)
        self._by_source[source] = [doc_id]


async def add_document(
    kb: KnowledgeBase, document: Document, *, kind: Kind = "markdown"
) -> IngestResult:
    """Chunk a document already in memory (`content`, `document_contents`) and add it.

    Its `doc_id` is kept as given; "unchanged" when the knowledge base has it.
    Form feeds in its text are page breaks (`extracted_from_text`).
    """
    extracted = extracted_from_text(document, kind)
    chunked = await asyncio.to_thread(chunk_document, extracted)  # CPU: a big text takes ms
    return await _store(kb, document.source or document.doc_id, Prepared(extracted, chunked))


def prepare_file(path: str | Path) -> Prepared:
    """Extract and chunk one file (blocking: file I/O and CPU)."""
    extracted = extract_file(path)
    return Prepared(extracted, chunk_document(extracted))


def _prepare_or_error(path: str | Path) -> Prepared | DocumentError:
    try:
        return prepare_file(path)
    except DocumentError as exc:
        return exc


async def _store(
    kb: KnowledgeBase, source: str, prepared: Prepared, *,
    versions: _Versions | None = None, path: str | Path | None = None,
    file_hash: str | None = None, name: str | None = None,
) -> IngestResult:
    """Add a prepared document; with `versions`, the earlier versions of the file at `path`
    (or called `name`) are removed in the same `add`."""
    stored = prepared.stored()
    if name is not None:  # an upload's title falls back on its name, not the staged file's
        stored = replace(stored, title=_renamed_title(stored.title, path, name))
    replaces: tuple[str, ...] = ()
    if versions is not None and path is not None:
        absolute = name or _absolute(path)
        stored = replace(stored, source=absolute, file_hash=file_hash)
        replaces = versions.of_file(absolute, str(path), stored.doc_id)
    # Checked first so an unchanged file costs no embedding; `add` says so too
    # (another process may have added it in between).
    added = not await _has_document(kb, stored.doc_id) and await kb.add(
        stored, prepared.extracted.document.content, prepared.chunked.chunks, replaces=replaces)
    if added and versions is not None and stored.source is not None:
        versions.stored(stored.source, str(path), stored.doc_id)
    extracted = prepared.extracted
    return IngestResult(source, "added" if added else "unchanged", doc_id=stored.doc_id,
                        title=stored.title, chunks=stored.chunks, tokens=stored.tokens,
                        replaced=replaces if added else (), ocr_pages=extracted.ocr_pages,
                        unreadable_pages=extracted.unreadable_pages)


def _renamed_title(title: str, path: str | Path | None, name: str) -> str:
    """A title taken from the staged file's name becomes the upload's name."""
    return Path(name).stem or title if path is not None and title == Path(path).stem else title


def _absolute(path: str | Path) -> str:
    return os.path.abspath(path)  # no file I/O: the working directory only


async def _has_document(kb: KnowledgeBase, doc_id: str) -> bool:
    try:
        return any(d.doc_id == doc_id for d in await kb.documents([doc_id]))
    except DocumentNotFoundError:
        return False


def _naming(source: str, error: DocumentError) -> str:
    """The error as one line that names the file."""
    message = " ".join(str(error).split())
    shown = safe_text(source)
    return message if shown in message or source in message else f"{shown}: {message}"
