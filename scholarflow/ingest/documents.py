"""Documents given directly: a file from `--file`, `content`, or `document_contents`.

Every document, however it arrives, goes through `document_from_text`, so the
same text always gets the same `doc_id` and `content_hash` (newlines and a
leading BOM are normalised first). `content_hash` here is the canonical one;
the summary cache keys on it, so there must be only one definition.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from scholarflow.errors import InputError
from scholarflow.printable import safe_text, undecodable

__all__ = [
    "Document",
    "DocumentError",
    "check_document_file",
    "content_hash",
    "document_from_bytes",
    "document_from_text",
    "documents_from_mapping",
    "is_pdf",
    "open_document_file",
    "read_document_bytes",
    "too_large",
]

DOC_ID_LENGTH = 16
MAX_TITLE_CHARS = 120
# Binary sniffing looks at the start only: enough to recognise a binary format
# without scanning a large file twice.
_SNIFF_BYTES = 8192
# Text never has this many control characters; binary formats usually do.
_MAX_CONTROL_RATIO = 0.10
# Control bytes that do occur in real text files (tab, newlines, form feed,
# backspace, and ESC from coloured terminal logs).
_TEXT_CONTROLS = frozenset(b"\t\n\r\f\b\x1b")
_CONTROL_BYTES = bytes(b for b in range(32) if b not in _TEXT_CONTROLS) + b"\x7f"
# A title is looked for near the top only: a heading deep in a plain-text file
# ("## References") is a section name, not the document's title.
_TITLE_SCAN_CHARS = 16384
_TITLE_SCAN_LINES = 40

_ATX_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
_EMPTY_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]*$")
_SETEXT_UNDERLINE = re.compile(r"^ {0,3}(?:=+|-+)[ \t]*$")
_FRONT_MATTER_TITLE = re.compile(r"^title:\s*(.+?)\s*$", re.IGNORECASE)


class DocumentError(InputError, ValueError):
    """A document that cannot be used; the message is one line a person can act on.

    It is an `InputError` so the CLI reports it like any other bad request, and
    a `ValueError` because that is what it is to plain Python callers.
    """


@dataclass(frozen=True, slots=True)
class Document:
    doc_id: str
    title: str
    content: str
    content_hash: str
    source: str | None = None


def content_hash(text: str) -> str:
    """Full sha256 hex of `text` as UTF-8: the key that says "this exact text"."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def read_document_bytes(path: str | Path, *, max_bytes: int | None = None) -> bytes:
    """The file's bytes, or `DocumentError` saying why they cannot be read and what to do.

    Only a regular file is opened: a FIFO, device or socket would block the
    read forever (or, like /dev/zero, never end). `max_bytes` refuses a larger
    file before reading it.
    """
    file = Path(path).expanduser()
    shown = safe_text(path)
    info = check_document_file(path)
    if max_bytes is not None and info.st_size > max_bytes:
        raise DocumentError(too_large(shown, info.st_size, max_bytes))
    try:
        return file.read_bytes()  # one read; everything after works on these bytes
    except OSError as exc:
        raise DocumentError(_os_error(exc, file, shown)) from None


def open_document_file(path: str | Path) -> BinaryIO:
    """The file opened for reading, once `check_document_file` has found it one to read;
    else `DocumentError` saying why not (an upload streams it from here)."""
    check_document_file(path)
    file = Path(path).expanduser()
    try:
        return file.open("rb")
    except OSError as exc:
        raise DocumentError(_os_error(exc, file, safe_text(path))) from None


def check_document_file(path: str | Path) -> os.stat_result:
    """The file's `stat` when it is a regular file with a UTF-8 name, without opening it;
    else `DocumentError` saying why it cannot be read and what to do."""
    shown = safe_text(path)
    info = _stat(Path(path).expanduser(), shown)
    if stat.S_ISDIR(info.st_mode):
        raise DocumentError(f"{shown} is a directory; give a PDF, Markdown or text file")
    if not stat.S_ISREG(info.st_mode):
        raise DocumentError(f"{shown} is {_kind(info.st_mode)}, not a regular file; "
                            "give a PDF, Markdown or text file")
    if undecodable(str(path)) is not None:
        raise DocumentError(f"the file name {shown} is not valid UTF-8; rename the file")
    return info


def too_large(shown: str, size: int, limit: int) -> str:
    """The error for a document given directly that is over `limit` bytes of text."""
    return (f"{shown} is {size / 1e6:.1f} MB, over the {limit // 1_000_000} MB limit for a "
            f"file given directly; ingest it into a knowledge base with `scholarflow ingest "
            f"FILE --kb NAME` and ask with --kb NAME")


def _stat(file: Path, shown: str) -> os.stat_result:
    """`os.stat` (symlinks followed) without opening the file; errors say what to do."""
    try:
        return os.stat(file)
    except OSError as exc:
        raise DocumentError(_os_error(exc, file, shown)) from None
    except ValueError:  # an embedded NUL byte: no file can have that name
        raise DocumentError(f"no such file: {shown}; check the path") from None


def _os_error(exc: OSError, file: Path, shown: str) -> str:
    code = exc.errno
    if code in (errno.ENOENT, errno.ENOTDIR):
        if os.path.islink(file):
            return (f"{shown} is a symlink to {safe_text(os.readlink(file))}, which does not "
                    "exist; fix or remove the link")
        return f"no such file: {shown}; check the path"
    if code in (errno.EACCES, errno.EPERM):
        return f"cannot read {shown}: permission denied; check its permissions"
    if code == errno.ELOOP:
        return f"cannot read {shown}: symlink loop; fix the link so it ends at a file"
    if code == errno.ENAMETOOLONG:
        return (f"cannot read {shown[:80]}...: the file name is too long for the file "
                "system; rename the file or give a shorter path")
    return f"cannot read {shown}: {exc.strerror or exc}; check the file and try again"


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "a special file"


def is_pdf(path: str | Path, raw: bytes) -> bool:
    """A PDF by its content, or by its name unless it is empty (that gets the empty error)."""
    return raw.startswith(b"%PDF-") or (bool(raw) and Path(path).suffix.lower() == ".pdf")


def document_from_bytes(raw: bytes, shown: str) -> Document:
    """A Markdown or text file's bytes as a `Document`."""
    text = _decode(raw, shown)
    if not text or text.isspace():
        raise DocumentError(f"{shown} is empty; give a file with some text")
    return document_from_text(text, source=shown)


def document_from_text(
    content: str,
    *,
    doc_id: str | None = None,
    title: str | None = None,
    source: str | None = None,
) -> Document:
    """A `Document` from text already in memory; `doc_id` and `title` are derived when absent."""
    name = doc_id or source or "given directly"
    # Checked at run time too: contents often arrive from JSON, not typed code.
    if not isinstance(content, str):
        raise DocumentError(f"document {name}: content must be text, got {type(content).__name__}")
    text = _normalise(content)
    if not text or text.isspace():
        raise DocumentError(f"document {name} is empty; give it some text")
    if doc_id is not None and (not isinstance(doc_id, str) or not doc_id.strip()):
        raise DocumentError(f"document ids must be non-empty text, got {doc_id!r}")

    digest = content_hash(text)
    fallback = (Path(source).stem if source else "") or "Untitled"
    chosen = title.strip() if title is not None else ""
    return Document(
        doc_id=doc_id if doc_id is not None else digest[:DOC_ID_LENGTH],
        title=_clip(chosen) if chosen else (extract_title(text) or _clip(fallback)),
        content=text,
        content_hash=digest,
        source=source,
    )


def documents_from_mapping(contents: Mapping[str, str]) -> list[Document]:
    """Documents from `{doc_id: text}`, keeping the caller's doc_ids and order."""
    return [document_from_text(text, doc_id=key) for key, text in contents.items()]


def extract_title(text: str) -> str | None:
    """The first Markdown heading near the top, else the first non-empty line."""
    # Only the top of the text is split: a 50 MB file should not be split into lines.
    lines = text[:_TITLE_SCAN_CHARS].split("\n")
    start, front_title = _skip_front_matter(lines)
    if front_title:
        return _clip(front_title)

    first_line: str | None = None
    seen = 0
    previous = ""
    for line in lines[start:]:
        stripped = line.strip()
        heading = _ATX_HEADING.match(line)
        if heading and heading.group(1).strip():
            return _clip(heading.group(1).strip())
        # "Title\n=====" is a heading too; the underline names the line above it.
        underline = _SETEXT_UNDERLINE.match(line) is not None
        if previous and underline:
            return _clip(previous)
        # Markup alone ("#", "=====") is never a title, nor the line a setext names.
        if stripped and not underline and not _EMPTY_HEADING.match(line):
            first_line = first_line or stripped
            previous = stripped
        else:
            previous = ""
        if stripped:
            seen += 1
            if seen >= _TITLE_SCAN_LINES:
                break
    return _clip(first_line) if first_line else None


def _skip_front_matter(lines: list[str]) -> tuple[int, str | None]:
    """Index after a leading YAML front matter block, and its `title:` if it has one."""
    if not lines or lines[0].strip() != "---":
        return 0, None
    title: str | None = None
    for index, line in enumerate(lines[1:], start=1):
        if line.strip() in {"---", "..."}:
            return index + 1, title
        found = _FRONT_MATTER_TITLE.match(line)
        if found and title is None:
            title = found.group(1).strip("'\"").strip() or None
    return 0, None  # no closing fence: it was a rule, not front matter


def _clip(title: str) -> str:
    title = " ".join(title.split())  # tabs and runs of spaces would look broken in a listing
    if len(title) <= MAX_TITLE_CHARS:
        return title
    return title[: MAX_TITLE_CHARS - 1].rstrip() + "…"


def _normalise(text: str) -> str:
    if text.startswith("\ufeff"):
        text = text[1:]
    # Checked first so the common case (already \n) copies nothing.
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def _decode(raw: bytes, shown: str) -> str:
    """Bytes to text: UTF-8 (with or without BOM), or UTF-16 with a BOM."""
    # UTF-16 is full of NUL bytes, so its BOM must be recognised before sniffing.
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            text = raw.decode("utf-16")
        except UnicodeDecodeError:
            raise DocumentError(
                f"{shown} starts with a UTF-16 mark but is not valid UTF-16; save it as UTF-8"
            ) from None
        if "\x00" in text[:_SNIFF_BYTES]:  # a UTF-32 file also starts with FF FE
            raise DocumentError(f"{shown} looks binary; give a PDF, Markdown or text file")
        return text

    head = raw[:_SNIFF_BYTES]
    if b"\x00" in head or _control_ratio(head) > _MAX_CONTROL_RATIO:
        raise DocumentError(f"{shown} looks binary; give a PDF, Markdown or text file")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DocumentError(
            f"{shown} is not UTF-8 text (invalid byte at offset {exc.start}); "
            "save it as UTF-8 and try again"
        ) from None


def _control_ratio(head: bytes) -> float:
    if not head:
        return 0.0
    # bytes.translate with a delete table is a C loop: cheap even for the full 8 KB.
    controls = len(head) - len(head.translate(None, _CONTROL_BYTES))
    return controls / len(head)
