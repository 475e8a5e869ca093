"""Text that came from a user (file names, questions, messages quoting them), made safe to print.

A file name may hold ESC or OSC sequences that retitle or recolour the
terminal, a newline that splits an error over lines, bidi overrides that
reorder what is shown, or bytes that are not UTF-8 (Python keeps those as
lone surrogates, which fail to print). `safe_text` escapes all of them the
way `repr` does; `safe_json` escapes them inside JSON strings, so a JSON
line still decodes to the exact original text.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["has_surrogates", "safe_json", "safe_lines", "safe_text", "undecodable"]

# C0, DEL, C1, lone surrogates, line and paragraph separators, and the bidi
# controls (Trojan Source: LRM/RLM, ALM, embeddings, overrides, isolates).
_UNSAFE = re.compile(
    "[\x00-\x1f\x7f-\x9f\ud800-\udfff\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]"
)
# What json.dumps(ensure_ascii=False) leaves raw: everything above but C0, which it escapes.
_UNSAFE_IN_JSON = re.compile(
    "[\x7f-\x9f\ud800-\udfff\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]"
)
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    if char in _NAMED:
        return _NAMED[char]
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8 (surrogateescape): show the byte
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def safe_text(text: object) -> str:
    """`text` on one line with every control, bidi and undecodable character escaped."""
    return _UNSAFE.sub(_escape, str(text))


def safe_lines(text: str) -> str:
    """`safe_text` that keeps newlines and tabs: for streamed text shown as it is written."""
    return _UNSAFE.sub(lambda m: m.group() if m.group() in "\n\t" else _escape(m), text)


def safe_json(value: Any) -> str:
    """`json.dumps(value, ensure_ascii=False)` with what a terminal would act on escaped."""
    return _UNSAFE_IN_JSON.sub(lambda m: f"\\u{ord(m.group()):04x}",
                               json.dumps(value, ensure_ascii=False))


def has_surrogates(text: str) -> bool:
    """Whether `text` holds lone surrogates: bytes that were not UTF-8 (argv, file names)."""
    return any("\ud800" <= c <= "\udfff" for c in text)


def undecodable(text: str) -> str | None:
    """Why `text` is not valid UTF-8 (the first bad byte and where), or None when it is."""
    for index, char in enumerate(text):
        if "\udc80" <= char <= "\udcff":
            return f"byte 0x{ord(char) - 0xDC00:02x} at position {index}"
        if "\ud800" <= char <= "\udfff":
            return f"lone surrogate U+{ord(char):04X} at position {index}"
    return None
