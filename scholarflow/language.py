"""Which language a question is in, so the answer can follow it; and the one
definition of the CJK character ranges every module uses (inside a regex `[...]`)."""

from __future__ import annotations

import re

# Han ideographs: Extension A, the unified block, and the compatibility block
# (some of whose characters are unified ideographs with no other code point).
HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
# Hiragana and katakana: Japanese, which is written without spaces too.
KANA = "\u3040-\u30ff"
# Scripts written without spaces between words: a "word" has to be guessed from characters.
CJK = KANA + HAN

HAN_CHAR = re.compile(f"[{HAN}]")  # one Han character
_LATIN_WORD = re.compile(r"[A-Za-z]{2,}")


def is_chinese(text: str) -> bool:
    """True when Chinese carries the text: a CJK character outweighs a Latin word."""
    cjk = len(HAN_CHAR.findall(text))
    # A Chinese question often quotes English terms ("Transformer 的注意力是什么"):
    # one CJK character carries about as much as one English word.
    return cjk > 0 and cjk >= len(_LATIN_WORD.findall(text))


def answer_language(text: str) -> str:
    """The language name a prompt should ask the answer to be written in."""
    return "Chinese (简体中文)" if is_chinese(text) else "English"

