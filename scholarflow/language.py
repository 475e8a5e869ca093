"""Which language a question is in, so the answer can follow it."""

from __future__ import annotations

import re

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LATIN_WORD = re.compile(r"[A-Za-z]{2,}")


def is_chinese(text: str) -> bool:
    """True when Chinese carries the text: a CJK character outweighs a Latin word."""
    cjk = len(_CJK.findall(text))
    # A Chinese question often quotes English terms ("Transformer 的注意力是什么"):
    # one CJK character carries about as much as one English word.
    return cjk > 0 and cjk >= len(_LATIN_WORD.findall(text))


def answer_language(text: str) -> str:
    """The language name a prompt should ask the answer to be written in."""
    return "Chinese (简体中文)" if is_chinese(text) else "English"
