"""Whether a page's text is text: the share of its letters that spell words.

A PDF font may map its glyphs to no real characters (old TeX with Type 3
fonts, some print drivers): every engine then returns symbol soup
("-/.!021#3547680:9<;=?>A@CB") or a shifted alphabet ("QRSO \\ TaWRQ"), which
looks like letters but spells nothing. Stored, it would be served by recall
as if the paper said it; such a page is to be read by OCR or left out.

The measure, per page: letters in runs that are words (a run that is one
token of the tokenizer's vocabulary, which holds the common words of English
and other languages; any Han character) are good; letters in runs that are not
words, and symbols a text rarely has (`<>?@#$&*^{|}~\\` and Latin-1 signs), are
bad. Single letters, all-capital runs, short mixed-case runs and digits are neither: tables of
codes ("H100D", "GGGLEQLES"), gene names ("piRNA"), acronyms and numbers are
real text without being words. A page
is garbage when good / (good + bad) is under `MIN_WORD_SHARE`; a page with too
little text to tell takes the verdict of the rest of its document.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from scholarflow.language import HAN_CHAR

__all__ = ["MIN_JUDGED", "MIN_WORD_SHARE", "garbage_pages", "is_word", "word_share"]

# Under this share of word letters a page's text is glyphs mapped to no characters.
# Any value between the highest such page and the lowest real page of a tuning half
# of old and new papers separates them (bench/reading.py measures both halves); it
# is taken near the garbage side, since a real page lost is text lost. Real pages of
# tables, formulas and code sit well above it, unmapped fonts well below.
MIN_WORD_SHARE = 0.3
# Letters and odd symbols a page needs before its share says anything.
MIN_JUDGED = 40
_SHORT_CODE = 6  # letters of a mixed-case run that may be a code or a gene's name

_RUN = re.compile(r"[^\W\d_]+")
_ODD = re.compile(
    r"[!#$&*<>?@\\^`{|}~\x80-\xbf]"
    r"|[^\w\s.,;:()\[\]'\"%+\-/=’‘“”–—−…•·°±≤≥≈×∗†‡§¶]")


@lru_cache(maxsize=65536)
def is_word(run: str) -> bool:
    """Whether a run of letters is a word: one token of the vocabulary, as written or in
    lower case ("a" and "I" are the single letters that are words)."""
    from scholarflow.tokens import encoding

    if len(run) == 1:
        return run in "aAI"
    encode = encoding().encode_ordinary
    return len(encode(" " + run)) == 1 or len(encode(" " + run.lower())) == 1


def word_share(text: str) -> tuple[float, int]:
    """good / (good + bad) letters and symbols of `text`, and good + bad (see the module)."""
    good = bad = 0
    for run in _RUN.findall(text):
        if len(run) == 1 and not HAN_CHAR.match(run):
            continue  # "a", "I", a variable: too short to tell a word
        if HAN_CHAR.match(run[0]) or is_word(run):
            good += len(run)
        elif not _neutral(run):
            bad += len(run)
    bad += len(_ODD.findall(text))
    judged = good + bad
    return (good / judged if judged else 1.0), judged


def _neutral(run: str) -> bool:
    """A run that is no word and no sign of garbage: capitals ("GGGLEQ", "CDR"), or a short
    mix of cases ("RNAi", "piRNA", "BmAgo"): codes and names of things."""
    return run.isupper() or (len(run) <= _SHORT_CODE and not run.islower()
                             and not run.istitle())


def garbage_pages(texts: Sequence[str], *, known: int = 0) -> list[int]:
    """0-based indices of the pages whose text is not text.

    A page with fewer than `MIN_JUDGED` letters is garbage only when most of the
    document's judged pages are, counting `known` pages found out before (their
    text here is empty).
    """
    verdicts: list[bool | None] = []
    for text in texts:
        share, judged = word_share(text) if text else (1.0, 0)
        verdicts.append(share < MIN_WORD_SHARE if judged >= MIN_JUDGED else None)
    judged_pages = [v for v in verdicts if v is not None] + [True] * known
    mostly_garbage = bool(judged_pages) and sum(judged_pages) * 2 > len(judged_pages)
    return [i for i, (text, verdict) in enumerate(zip(texts, verdicts, strict=True))
            if verdict or (verdict is None and text and mostly_garbage)]
