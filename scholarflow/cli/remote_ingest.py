"""`scholarflow ingest PATH... --server URL`: files uploaded into a knowledge base of a server.

The paths are walked as `ingest` walks them on this machine
(`ingest.files.collect_files`: a folder's PDF, Markdown and text files,
hidden ones left out; a FIFO, a device or a name that is not UTF-8 skipped with
a warning), and each file is checked as it would be before reading it. The
files then go up as multipart uploads (`POST /kbs/{kb}/documents`) of at most
`BATCH_FILES` files and `BATCH_BYTES` bytes (a larger file goes alone), and
each upload's job is followed to its end (`GET /ingest-jobs/{id}`): each
file's result is printed as the server reports it, a JSON line on stdout for
a document added or unchanged and an `error:` line on stderr for a file that
failed, with a progress line on stderr now and then. The exit code is
`ingest`'s: 0; 1 when some files failed; 2 when none went in.

On a server a document is known by its file name, not by where it was on the
person's machine: a result's `source` is that name, and a file ingested again
under the same name replaces its earlier version. Two files of one ingest with
the same name would replace each other, so the later one is an error, to be
renamed.
"""

from __future__ import annotations

import asyncio
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import httpx

from scholarflow.cli.exits import RunFailedError
from scholarflow.cli.remote import Remote, detail_of, kb_route
from scholarflow.errors import InputError
from scholarflow.printable import safe_json, safe_text

BATCH_FILES = 50
BATCH_BYTES = 100_000_000
PROGRESS_EVERY = 10.0  # seconds between progress lines
POLL_FIRST = 0.3  # seconds; each poll waits longer, up to POLL_MAX
POLL_MAX = 2.0
EXIT_SOME_FAILED = 1
EXIT_ALL_BAD = 2


@dataclass
class _Tally:
    """What the results said so far: for the exit code, and the progress line."""

    stored: int = 0
    failed: int = 0
    total: int = 0  # files to upload
    done: int = 0  # files the server has a result for
    started: float = field(default_factory=time.monotonic)
    last_line: float = field(default_factory=time.monotonic)

    def show(self, result: dict[str, Any]) -> None:
        """One result, printed as `ingest` prints it."""
        status = result.get("status")
        if status == "skipped":
            print(f"warning: {safe_text(result.get('error'))}", file=sys.stderr, flush=True)
            return
        if status in ("added", "unchanged"):
            self.stored += 1
            print(safe_json(result), flush=True)
        else:
            self.failed += 1
            print(f"error: {safe_text(result.get('error') or result)}", file=sys.stderr,
                  flush=True)

    def progress(self) -> None:
        now = time.monotonic()
        if now - self.last_line >= PROGRESS_EVERY:
            self.last_line = now
            print(f"ingest: {self.done}/{self.total} files done on the server, "
                  f"{now - self.started:.0f} s", file=sys.stderr, flush=True)


async def ingest(remote: Remote, paths: list[str], kb: str) -> int:
    from scholarflow.ingest.pipeline import collect_files

    route, params = kb_route(kb, "/documents")
    tally = _Tally()
    files = _checked(await asyncio.to_thread(collect_files, paths), tally)
    if files:
        tally.total = len(files)
        size = sum(s for _p, s in files)
        print(f"ingest: uploading {len(files)} file(s), {size / 1e6:.1f} MB, to knowledge base "
              f"{safe_text(kb)!r} on {remote.url}", file=sys.stderr, flush=True)
        for batch in _batches(files):
            await _send(remote, route, params, batch, tally)
    if tally.failed == 0 and tally.stored == 0:  # only skipped files: not a success
        raise InputError("nothing was ingested: every file was skipped (see the warnings "
                         "above); fix or rename those files and ingest again")
    if tally.failed == 0:
        return 0
    return EXIT_ALL_BAD if tally.stored == 0 else EXIT_SOME_FAILED


def _checked(collected: list[Any], tally: _Tally) -> list[tuple[Path, int]]:
    """The files to upload, with their sizes; the paths that are none, and a file whose name
    an earlier one of this ingest has, are results (printed) instead."""
    from scholarflow.ingest.documents import DocumentError, check_document_file

    files: list[tuple[Path, int]] = []
    names: dict[str, Path] = {}
    for item in collected:
        if not isinstance(item, Path):  # a skipped file, or a folder holding none
            tally.show(item.as_json())
            continue
        try:
            size = check_document_file(item).st_size
        except DocumentError as exc:
            tally.show({"source": str(item), "status": "error", "error": str(exc)})
            continue
        if (earlier := names.setdefault(item.name, item)) is not item:
            tally.show({"source": str(item), "status": "error", "error": (
                f"{safe_text(item)} has the name of {safe_text(earlier)}, also in this ingest; "
                "on a server a document is known by its file name, so one would replace the "
                "other: rename one of them")})
            continue
        files.append((item, size))
    return files


def _batches(files: list[tuple[Path, int]]) -> list[list[tuple[Path, int]]]:
    batches: list[list[tuple[Path, int]]] = [[]]
    size = 0
    for file, file_size in files:
        if batches[-1] and (len(batches[-1]) >= BATCH_FILES or size + file_size > BATCH_BYTES):
            batches.append([])
            size = 0
        batches[-1].append((file, file_size))
        size += file_size
    return [b for b in batches if b]


async def _send(remote: Remote, route: str, params: dict[str, str],
                batch: list[tuple[Path, int]], tally: _Tally) -> None:
    """Upload the batch and follow its job; a batch too large for the server's limits goes
    again file by file, and a file over them is that file's error."""
    from scholarflow.ingest.documents import DocumentError, open_document_file

    handles: list[tuple[Path, IO[bytes]]] = []
    try:
        for file, _size in batch:
            try:
                handles.append((file, await asyncio.to_thread(open_document_file, file)))
            except DocumentError as exc:
                tally.show({"source": str(file), "status": "error", "error": str(exc)})
        if not handles:
            return
        parts = [("files", (file.name, handle, "application/octet-stream"))
                 for file, handle in handles]
        try:
            response = await remote.http.post(route, params=params, files=parts,
                                              timeout=httpx.Timeout(300.0, connect=10.0))
        except (httpx.WriteError, httpx.ReadError, httpx.RemoteProtocolError) as exc:
            # The server closed the connection midway: it refused the upload (too large for
            # it?) before reading it all, or went away. It stores nothing of a cut upload.
            raise RunFailedError(
                f"the upload of {len(handles)} file(s) to {remote.url} was cut off "
                f"({' '.join(str(exc).split()) or type(exc).__name__}); nothing of it was "
                "stored: ingest again (what went in before is kept), or ask the operator "
                "about the upload limits (SCHOLARFLOW_UPLOAD_MAX_REQUEST_BYTES)") from None
        except (httpx.HTTPError, OSError) as exc:
            raise remote.failure(exc) from None
    finally:
        for _file, handle in handles:
            handle.close()
    if response.status_code == 413:
        if len(handles) > 1:
            for file, size in batch:
                await _send(remote, route, params, [(file, size)], tally)
            return
        tally.show({"source": handles[0][0].name, "status": "error",
                    "error": f"{safe_text(handles[0][0])}: {detail_of(response)}"})
        tally.done += 1
        return
    try:
        response.raise_for_status()
    except httpx.HTTPStatusError as exc:
        raise remote.failure(exc) from None
    try:
        job = response.json()
    except ValueError:
        raise RunFailedError(f"{remote.url} answered the upload with no job: is it a "
                             "scholarflow server?") from None
    await _follow(remote, job, tally)


async def _follow(remote: Remote, job: dict[str, Any], tally: _Tally) -> None:
    """Poll the job until it ends, printing each file's result as it comes."""
    shown = 0
    wait = POLL_FIRST
    before = tally.done
    try:
        while True:
            results = job.get("results") or []
            for result in results[shown:]:
                tally.show(result)
            shown = len(results)
            tally.done = before + shown
            status = job.get("status")
            if status == "done":
                return
            if status not in ("queued", "running"):
                raise RunFailedError(_ended(remote, job))
            tally.progress()
            await asyncio.sleep(wait)
            wait = min(wait * 1.5, POLL_MAX)
            job = await remote.request("GET", f"/ingest-jobs/{job['job_id']}")
    except asyncio.CancelledError:  # Ctrl-C: the server goes on
        print(f"note: the server goes on ingesting (job {job.get('job_id')}); `scholarflow "
              f"kb docs {safe_text(job.get('kb'))} {remote.hint()}` shows what went in",
              file=sys.stderr, flush=True)
        raise


def _ended(remote: Remote, job: dict[str, Any]) -> str:
    left = int(job.get("total") or 0) - len(job.get("results") or [])
    if job.get("status") == "interrupted":
        return (f"the server stopped ingesting this upload (restarted?) with {left} file(s) "
                "not done; what it stored is kept: ingest the same files again (those stored "
                "come back unchanged)")
    return (f"the server's ingest failed with {left} file(s) not done: "
            f"{safe_text(job.get('error') or job.get('status'))}")
