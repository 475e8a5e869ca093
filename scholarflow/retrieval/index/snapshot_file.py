"""`snapshot.npz`: a snapshot's arrays on disk, written atomically in a background thread.

The file holds one prefix of the knowledge base's chunks (everything up to
a rowid): vectors, BM25 postings (term frequencies, not scores: those are
recomputed from the statistics), chunk lengths, vocabulary and document
ranges. It is written to a temporary file and renamed over the old one, so
a reader, or a process killed mid-write (kill -9), sees the old file or the
new one, never half of one; a stray temporary file is harmless.

Writing ~300 MB (100k chunks) takes seconds, so it runs in a thread while
searches go on: everything handed to it is never modified again (the
snapshot replaces arrays instead of writing into them, and appends vectors
only past the rows saved). The thread is not a daemon, so a process that
exits waits for the file to be complete.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

CACHE_FORMAT = 3  # 3: the reference-list mask (`refs`)
_READ_STEP = 16 << 20  # bytes read at a time into the vector buffer


class SnapshotFile:
    """The background writer of one snapshot; at most one write at a time."""

    def __init__(self) -> None:
        self._thread: threading.Thread | None = None
        self.error: BaseException | None = None  # the last write's failure, if any

    def save(self, path: Path, header: dict[str, Any], arrays: dict[str, npt.NDArray[Any]]) -> None:
        """Start writing; a write already under way finishes first (a newer one replaces it)."""
        self.wait()
        payload = {"header": text_bytes(json.dumps({"format": CACHE_FORMAT, **header})), **arrays}
        self._thread = threading.Thread(target=self._write, args=(path, payload),
                                        name=f"snapshot-save {path.parent.name}")
        self._thread.start()

    def wait(self) -> None:
        """Until the file being written, if any, is complete."""
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    @property
    def busy(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _write(self, path: Path, payload: dict[str, npt.NDArray[Any]]) -> None:
        self.error = None
        tmp: str | None = None
        try:
            fd, tmp = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=path.parent)
            with os.fdopen(fd, "wb") as out:
                np.savez(out, allow_pickle=False, **payload)
            os.replace(tmp, path)
        except BaseException as exc:
            self.error = exc
            if tmp is not None:
                Path(tmp).unlink(missing_ok=True)
            if not isinstance(exc, OSError):
                raise
            # A cache: the next process rebuilds from SQLite (e.g. the folder was deleted).


def read(path: Path, *, embedder: str, dim: int, spare: float) -> dict[str, Any] | None:
    """The arrays and header of `path`, or None when missing, unreadable or for other vectors.

    The vectors land in a buffer with `spare` x their rows free behind them,
    so the first chunks added after loading need no copy of the whole matrix.
    """
    try:
        with np.load(path, allow_pickle=False) as z:
            header = json.loads(z["header"].tobytes())
            if (header.get("format"), header.get("embedder"), header.get("dim")) != (
                CACHE_FORMAT, embedder, dim
            ):
                return None
            out: dict[str, Any] = {name: z[name] for name in z.files
                                   if name not in ("header", "vectors")}
            out["header"] = header
            out["vectors"] = _read_rows(z.zip, "vectors.npy", spare)
    except (OSError, ValueError, KeyError, TypeError, EOFError, zipfile.BadZipFile,
            json.JSONDecodeError):
        return None  # a cache is disposable: rebuild it from SQLite
    return out


def _read_rows(archive: zipfile.ZipFile, name: str, spare: float) -> npt.NDArray[np.float32]:
    """A float32 matrix member read straight into a buffer with room for more rows."""
    with archive.open(name) as member:
        version = np.lib.format.read_magic(member)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(member)
        else:
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(member)
        if len(shape) != 2 or fortran or dtype != np.dtype(np.float32):
            raise ValueError("snapshot vectors are not a float32 matrix")
        rows, dim = shape
        buffer = np.empty((rows + max(int(rows * spare), 16), dim), np.float32)
        view = buffer[:rows].reshape(-1).view(np.uint8)
        at = 0
        while at < len(view):
            data = member.read(min(_READ_STEP, len(view) - at))
            if not data:
                raise EOFError("snapshot vectors are cut short")
            view[at:at + len(data)] = np.frombuffer(data, np.uint8)
            at += len(data)
    return buffer


def text_bytes(text: str) -> npt.NDArray[np.uint8]:
    """`text` as UTF-8, in an array `save` can store (read back: `.tobytes().decode()`)."""
    return np.frombuffer(text.encode(), np.uint8)
