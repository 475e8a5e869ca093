"""An upload's files streamed to disk (scholarflow/server/uploads.py), in process: limits,
names, and requests cut off midway, each leaving nothing behind."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from scholarflow.server.uploads import UploadError, file_label, receive_files

BOUNDARY = "b0undary"
HEADERS = {"content-type": f"multipart/form-data; boundary={BOUNDARY}"}


def body(*parts: tuple[str, str | None, bytes], close: bool = True) -> bytes:
    out = b""
    for field, filename, data in parts:
        disposition = f'form-data; name="{field}"' + (
            f'; filename="{filename}"' if filename is not None else "")
        out += f"--{BOUNDARY}\r\nContent-Disposition: {disposition}\r\n\r\n".encode()
        out += data + b"\r\n"
    return out + (f"--{BOUNDARY}--\r\n".encode() if close else b"")


async def chunks(data: bytes, size: int = 1000) -> AsyncIterator[bytes]:
    for start in range(0, len(data), size):
        yield data[start:start + size]


async def receive(data: bytes, folder: Path, *, headers: dict[str, str] | None = None,
                  max_file: int = 10_000, max_request: int = 100_000) -> list[tuple[Path, str]]:
    return await receive_files(headers or HEADERS, chunks(data), folder, max_file=max_file,
                               max_request=max_request)


async def test_files_arrive_in_order_under_numbered_names(tmp_path: Path) -> None:
    folder = tmp_path / "job"
    data = body(("files", "a.md", b"# A\n\ntext a"), ("note", None, b"ignored"),
                ("other", "../../b.PDF", b"%PDF-1.4 fake"),
                ("files", "C:\\dir\\c.txt", b"c" * 5000))
    files = await receive(data, folder)
    assert [(p.name, label) for p, label in files] == [
        ("0000.md", "a.md"), ("0001.pdf", "b.PDF"), ("0002.txt", "c.txt")]
    assert [p.read_bytes() for p, _ in files] == [b"# A\n\ntext a", b"%PDF-1.4 fake", b"c" * 5000]
    assert sorted(p.name for p in folder.iterdir()) == ["0000.md", "0001.pdf", "0002.txt"]


@pytest.mark.parametrize(("raw", "label"), [
    ("../../../../etc/passwd", "passwd"), ("..\\..\\boot.ini", "boot.ini"),
    ("paper\u202egnp.md", "papergnp.md"), ("a\x00b\x1b[2J.md", "ab[2J.md"),
    ("x" * 300 + ".md", "x" * 200)])
def test_a_clients_name_is_only_a_label(raw: str, label: str) -> None:
    assert file_label(raw) == label


@pytest.mark.parametrize("raw", ["", "..", "dir/", "\u202e", "a/.."])
def test_a_name_with_nothing_left_is_refused(raw: str) -> None:
    with pytest.raises(UploadError, match="has no usable name"):
        file_label(raw)


async def test_rfc5987_names_are_read(tmp_path: Path) -> None:
    data = (f"--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"files\"; "
            "filename*=UTF-8''%E8%AE%BA%E6%96%87.md\r\n\r\n# \u8bba\u6587\r\n"
            f"--{BOUNDARY}--\r\n").encode()
    files = await receive(data, tmp_path / "job")
    assert [label for _p, label in files] == ["\u8bba\u6587.md"]


@pytest.mark.parametrize(("data", "status", "says", "limits"), [
    (body(("files", "a.md", b"x" * 20_000)), 413, "a.md is over the", {}),
    (body(("files", "a.md", b"x" * 5000), ("files", "b.md", b"y" * 5000)) * 12, 413,
     "over the", {"max_file": 100_000}),
    (body(("files", "a.md", b"x" * 5000), close=False), 400, "ended before its last part", {}),
    (body(("files", "a.md", b"x" * 5000))[:3000], 400, "ended before its last part", {}),
    (body(("field", None, b"no file")), 400, "holds no file", {}),
    (body(("field", None, b"v" * 70_000)), 413, "form fields are too large", {}),
    (b"not multipart at all", 400, "not valid multipart/form-data", {}),
])
async def test_a_refused_upload_leaves_nothing(
    tmp_path: Path, data: bytes, status: int, says: str, limits: dict[str, int]
) -> None:
    folder = tmp_path / "job"
    with pytest.raises(UploadError) as refused:
        await receive(data, folder, **limits)
    assert (refused.value.status, says in refused.value.detail) == (status, True), (
        refused.value.detail)
    assert "\n" not in refused.value.detail
    assert not folder.exists()


async def test_what_is_not_multipart_or_too_long_is_refused_before_reading(
    tmp_path: Path
) -> None:
    async def never() -> AsyncIterator[bytes]:
        raise AssertionError("the body was read")
        yield b""  # pragma: no cover

    folder = tmp_path / "job"
    for headers, status in [({"content-type": "application/json"}, 415),
                            ({**HEADERS, "content-length": str(10**9)}, 413)]:
        with pytest.raises(UploadError) as refused:
            await receive_files(headers, never(), folder, max_file=10, max_request=1000)
        assert refused.value.status == status
    assert not folder.exists()


async def test_a_client_that_goes_away_leaves_nothing(tmp_path: Path) -> None:
    class ClientDisconnect(Exception):  # what Starlette's stream raises, by name
        pass

    async def gone() -> AsyncIterator[bytes]:
        yield body(("files", "a.md", b"x" * 5000))[:4000]
        raise ClientDisconnect

    folder = tmp_path / "job"
    with pytest.raises(UploadError, match="cut off"):
        await receive_files(HEADERS, gone(), folder, max_file=10_000, max_request=100_000)
    assert not folder.exists()
