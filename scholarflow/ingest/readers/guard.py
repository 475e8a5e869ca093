"""Decompression bombs: a PDF whose streams would inflate past what a paper can hold.

PDFium inflates a whole stream in memory before it reads it, and aborts the
process when memory runs out, so a few kilobytes that inflate to gigabytes
must be refused before it sees them. Inflating every stream to measure it
would cost as much as reading the file twice; instead each Flate stream's
first `_PROBE_BYTES` are inflated, and its whole size is estimated from that
ratio and its compressed length. Deflate cannot do better than about 1032:1,
so a bomb needs megabytes of input per gigabyte, and the estimate sees it.
Streams compressed twice (`[/FlateDecode /FlateDecode]`) are probed layer by layer.
"""

from __future__ import annotations

import re
import zlib

from scholarflow.ingest.documents import DocumentError

__all__ = ["MAX_STREAM_BYTES", "check_inflation"]

# One stream, inflated. A paper's largest streams (Flate figures) inflate to a hundred MB
# or so; PDFium holds about twice a stream's size while it reads it.
MAX_STREAM_BYTES = 256 << 20
# Deflate's best ratio is about 1032:1: a shorter stream compressed once cannot reach
# the limit, and is not probed (most of a paper's streams; probing all costs seconds).
_DEFLATE_MAX_RATIO = 1100
_PROBE_BYTES = 1 << 14
_PROBE_OUTPUT = 1 << 25
_STREAM = re.compile(rb"stream\r?\n")
_FLATE = re.compile(rb"/(?:FlateDecode|Fl)\b")


def check_inflation(raw: bytes, shown: str) -> None:
    """Raise `DocumentError` when one of the file's streams would inflate past the limit."""
    for found in _STREAM.finditer(raw):
        start = found.end()
        end = raw.find(b"endstream", start)
        length = (end if end >= 0 else len(raw)) - start
        opened = raw.rfind(b"<<", max(0, found.start() - 2048), found.start())
        layers = len(_FLATE.findall(raw, opened, found.start())) if opened >= 0 else 0
        # Compressed once, a stream this short cannot reach the limit: not probed.
        if layers == 0 or (layers == 1 and length * _DEFLATE_MAX_RATIO < MAX_STREAM_BYTES):
            continue
        if _estimate(raw[start:start + _PROBE_BYTES], length, layers) > MAX_STREAM_BYTES:
            raise DocumentError(
                f"{shown} has a stream that would inflate to more than "
                f"{MAX_STREAM_BYTES >> 20:,} MB (a decompression bomb, or a damaged file): "
                "it is not read; re-export it as PDF, or give its text as a .txt or .md file")


def _estimate(head: bytes, length: int, layers: int) -> int:
    """The stream's inflated size: its length times each layer's ratio on its first bytes."""
    estimate = float(length)
    data = head
    for _ in range(min(layers, 4)):
        inflater = zlib.decompressobj()
        try:
            out = inflater.decompress(data, _PROBE_OUTPUT)
        except zlib.error:
            break  # not valid Flate: PDFium refuses it rather than inflating it
        used = len(data) - len(inflater.unconsumed_tail) - len(inflater.unused_data)
        if used <= 0 or not out:
            break
        estimate *= len(out) / used
        data = out[:_PROBE_BYTES]
    return int(estimate)
