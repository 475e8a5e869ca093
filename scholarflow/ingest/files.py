"""What a list of paths names: the files to read, and each file's outcome.

A folder gives the PDF, Markdown and text files under it; what could hang a
reader (a FIFO, a device) or cannot be stored (a name that is not UTF-8) is a
"skipped" result, never opened.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from scholarflow.ingest.extract import SUPPORTED_SUFFIXES
from scholarflow.printable import has_surrogates, safe_text

__all__ = ["IngestResult", "Status", "collect_files"]

# "skipped": a file in a folder that is no regular file or has a name that is not UTF-8;
# a warning, not a failure: the folder's other files go in.
Status = Literal["added", "unchanged", "error", "skipped"]


@dataclass(frozen=True, slots=True)
class IngestResult:
    source: str
    status: Status
    doc_id: str | None = None
    title: str | None = None
    chunks: int = 0
    tokens: int = 0
    error: str | None = None  # one line naming the file, when status is "error" or "skipped"
    replaced: tuple[str, ...] = ()  # doc_ids of this file's earlier versions, now removed
    # A PDF's pages read by OCR, and those that could not be read (left out), 1-based.
    ocr_pages: tuple[int, ...] = ()
    unreadable_pages: tuple[int, ...] = ()

    @property
    def ok(self) -> bool:
        return self.status != "error"

    def as_json(self) -> dict[str, Any]:
        if self.status in ("error", "skipped"):
            return {"source": self.source, "status": self.status, "error": self.error}
        out: dict[str, Any] = {"doc_id": self.doc_id, "title": self.title, "chunks": self.chunks,
               "tokens": self.tokens, "source": self.source, "status": self.status}
        if self.replaced:
            out["replaced"] = list(self.replaced)
        if self.ocr_pages:
            out["ocr_pages"] = list(self.ocr_pages)
        if self.unreadable_pages:
            out["unreadable_pages"] = list(self.unreadable_pages)
        return out


def collect_files(paths: Sequence[str | Path]) -> list[Path | IngestResult]:
    """Each path, or for a directory the supported files under it; errors for the rest.

    A file named directly is always tried (its content decides the format);
    in a directory only PDF, Markdown and text files are picked, hidden ones left
    out, and those that cannot be read safely are "skipped" results (see `_walk`).
    """
    out: list[Path | IngestResult] = []
    for raw in paths:
        path = Path(raw).expanduser()
        if not path.is_dir():
            out.append(path)  # a missing file gets its error when it is read
            continue
        found = _walk(path)
        if found:
            out.extend(found)
        else:
            out.append(IngestResult(str(raw), "error", error=(
                f"{safe_text(raw)} holds no PDF, Markdown or text files "
                f"({', '.join(sorted(SUPPORTED_SUFFIXES))}); give files, or a folder that "
                "holds some")))
    return out


def _walk(root: Path) -> list[Path | IngestResult]:
    found: list[Path | IngestResult] = []
    for folder, dirs, names in os.walk(root):  # no symlinked folders: they can loop
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        found.extend(_candidate(root, Path(folder) / name) for name in sorted(names)
                     if not name.startswith(".")
                     and Path(name).suffix.lower() in SUPPORTED_SUFFIXES)
    return found


def _candidate(root: Path, path: Path) -> Path | IngestResult:
    """`path`, or a "skipped" result when reading it could hang or its name cannot be stored.

    Checked with `stat` (symlinks followed), never by opening: opening a FIFO
    blocks until a writer comes, and /dev/zero never ends.
    """
    def skipped(why: str) -> IngestResult:
        return IngestResult(str(path), "skipped", error=f"skipped {safe_text(path)}: {why}")

    if has_surrogates(str(path.relative_to(root))):
        return skipped("its name is not valid UTF-8; rename it to ingest it")
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return skipped("symlink loop; fix the link to ingest it")
        if os.path.islink(path):
            return skipped("a symlink to a missing file; fix or remove the link")
        return path  # reading it reports the error
    if not stat.S_ISREG(mode):
        return skipped("not a regular file (a FIFO, device or socket); only files are read")
    return path
