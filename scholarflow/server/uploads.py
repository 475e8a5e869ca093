"""An upload's files, streamed from a multipart/form-data request to the server's disk.

Every part with a file name is one file, whatever its field is called; other
fields are ignored (and may hold at most `MAX_FIELD_BYTES`). A file is written
as it arrives to `<folder>/<n><suffix>`, never under the name the client
sent: that name is only a label (its last path segment, without control
characters), so no name can reach outside the folder. Limits: the request's
Content-Length and its bytes as they arrive (`SCHOLARFLOW_UPLOAD_MAX_REQUEST_BYTES`),
each file (`SCHOLARFLOW_UPLOAD_MAX_BYTES`), `MAX_FILES` files. Any failure, a
request cut off midway included, removes the folder: nothing half received is
kept, and no job starts.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import unicodedata
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any
from urllib.parse import unquote

from python_multipart.multipart import MultipartParser, parse_options_header

MAX_FILES = 1000
MAX_FIELD_BYTES = 64 * 1024
MAX_NAME_CHARS = 200
_FILENAME_STAR = re.compile(rb"filename\*\s*=\s*([^;]+)", re.IGNORECASE)


class UploadError(Exception):
    """An upload refused: an HTTP status and one line."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail


@dataclass
class _Part:
    headers: dict[bytes, bytes] = field(default_factory=dict)
    name: str | None = None  # the label of a file part; None for a plain field
    path: Path | None = None
    handle: IO[bytes] | None = None
    size: int = 0


def file_label(raw: str) -> str:
    """The name a client gave a file, made safe to show and store as a label: its last path
    segment (either slash), without control or format characters, at most MAX_NAME_CHARS."""
    last = raw.replace("\\", "/").rsplit("/", 1)[-1]
    shown = "".join(c for c in last if unicodedata.category(c)[0] != "C").strip()
    if shown in ("", ".", ".."):
        raise UploadError(400, f"a file has no usable name ({raw[:80]!r}); name it, e.g. "
                               "paper.pdf")
    return shown[:MAX_NAME_CHARS]


def _filename(disposition: bytes) -> str | None:
    _kind, options = parse_options_header(disposition)
    if b"filename" in options:
        return options[b"filename"].decode("utf-8", "replace")
    star = _FILENAME_STAR.search(disposition)
    if star is None:
        return None
    value = star.group(1).strip().strip(b'"').decode("ascii", "replace")
    _charset, _, encoded = value.partition("''")
    return unquote(encoded or value, encoding="utf-8", errors="replace")


class _Receiver:
    """The python-multipart callbacks: each file part into its own file in `folder`."""

    def __init__(self, folder: Path, max_file: int) -> None:
        self.folder = folder
        self.max_file = max_file
        self.files: list[tuple[Path, str]] = []
        self.part = _Part()
        self.header_name = b""
        self.header_value = b""
        self.ended = False
        self.pending: list[tuple[IO[bytes], bytes]] = []
        self.field_bytes = 0

    def callbacks(self) -> Any:
        return {"on_part_begin": self.begin, "on_header_field": self.header_field,
                "on_header_value": self.header_value_cb, "on_header_end": self.header_end,
                "on_headers_finished": self.headers_finished, "on_part_data": self.data,
                "on_part_end": self.part_end, "on_end": self.end}

    def begin(self) -> None:
        self.part = _Part()

    def header_field(self, data: bytes, start: int, end: int) -> None:
        self.header_name += data[start:end]

    def header_value_cb(self, data: bytes, start: int, end: int) -> None:
        self.header_value += data[start:end]

    def header_end(self) -> None:
        self.part.headers[self.header_name.lower()] = self.header_value
        self.header_name = self.header_value = b""

    def headers_finished(self) -> None:
        raw = _filename(self.part.headers.get(b"content-disposition", b""))
        if raw is None:
            return
        if len(self.files) >= MAX_FILES:
            raise UploadError(413, f"more than {MAX_FILES} files in one upload; send them "
                                   "in several")
        label = file_label(raw)
        suffix = Path(label).suffix.lower()
        suffix = suffix if re.fullmatch(r"\.[a-z0-9]{1,8}", suffix) else ""
        self.part.name = label
        self.part.path = self.folder / f"{len(self.files):04d}{suffix}"
        self.part.handle = self.part.path.open("wb")
        self.files.append((self.part.path, label))

    def data(self, data: bytes, start: int, end: int) -> None:
        if self.part.handle is None:
            self.field_bytes += end - start
            if self.field_bytes > MAX_FIELD_BYTES:
                raise UploadError(413, "the upload's form fields are too large; send files only")
            return
        self.part.size += end - start
        if self.part.size > self.max_file:
            raise UploadError(413, f"{self.part.name} is over the {_mb(self.max_file)} limit "
                                   "for one file (SCHOLARFLOW_UPLOAD_MAX_BYTES); nothing of "
                                   "this upload was stored")
        self.pending.append((self.part.handle, data[start:end]))

    def part_end(self) -> None:
        if self.part.handle is not None:
            self.pending.append((self.part.handle, b""))  # b"": close it once written

    def end(self) -> None:
        self.ended = True

    def flush(self) -> None:
        """Write what the last chunk brought (in a worker thread: disk I/O)."""
        for handle, data in self.pending:
            if data:
                handle.write(data)
            else:
                handle.close()
        self.pending.clear()


def _mb(size: int) -> str:
    return f"{size / 1e6:,.0f} MB"


async def receive_files(
    headers: dict[str, str], stream: AsyncIterator[bytes], folder: Path, *,
    max_file: int, max_request: int,
) -> list[tuple[Path, str]]:
    """The upload's files, each (where it is now, its label), in the order sent; or
    UploadError, with `folder` removed."""
    kind, options = parse_options_header(headers.get("content-type", ""))
    boundary = options.get(b"boundary")
    if kind != b"multipart/form-data" or not boundary:
        raise UploadError(415, "send the files as multipart/form-data, one part per file "
                               "(e.g. curl -F files=@paper.pdf)")
    length = headers.get("content-length", "")
    if length.isdigit() and int(length) > max_request:
        raise UploadError(413, f"the upload is {_mb(int(length))}, over the "
                               f"{_mb(max_request)} limit for one upload "
                               "(SCHOLARFLOW_UPLOAD_MAX_REQUEST_BYTES); send fewer files at once")
    receiver = _Receiver(folder, max_file)
    try:
        await asyncio.to_thread(folder.mkdir, parents=True, exist_ok=False)
        parser = MultipartParser(boundary, receiver.callbacks())
        received = 0
        async for chunk in stream:
            received += len(chunk)
            if received > max_request:
                raise UploadError(413, f"the upload is over the {_mb(max_request)} limit for "
                                       "one upload (SCHOLARFLOW_UPLOAD_MAX_REQUEST_BYTES); send "
                                       "fewer files at once")
            parser.write(chunk)
            if receiver.pending:
                await asyncio.to_thread(receiver.flush)
        parser.finalize()
        await asyncio.to_thread(receiver.flush)
        if not receiver.ended:
            raise UploadError(400, "the upload ended before its last part did (cut off?); "
                                   "nothing of it was stored: send it again")
        if not receiver.files:
            raise UploadError(400, "the upload holds no file: send each file as a part with "
                                   "a file name (e.g. curl -F files=@paper.pdf)")
        return receiver.files
    except BaseException as exc:
        for handle, _data in receiver.pending:
            handle.close()
        if receiver.part.handle is not None:
            receiver.part.handle.close()
        await asyncio.shield(asyncio.to_thread(shutil.rmtree, folder, True))
        if isinstance(exc, UploadError | asyncio.CancelledError):
            raise
        if type(exc).__name__ == "ClientDisconnect":
            raise UploadError(400, "the upload was cut off; nothing of it was stored") from None
        if type(exc).__module__.startswith("python_multipart"):
            raise UploadError(400, "the upload is not valid multipart/form-data; nothing of "
                                   "it was stored") from None
        raise
