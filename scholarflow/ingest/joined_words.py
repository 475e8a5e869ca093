"""Words an OCR engine ran together: "controlsthefidelity" is "controls the fidelity".

RapidOCR's models, trained mostly on Chinese, often leave out the space between
two English words set close together, at times over a whole line. Two things
together put it back: where the recogniser saw a wider gap between two letters
than between most letters of the line (each character's column in its output),
and a split of the run at such gaps into words of the tokenizer's vocabulary,
the more common preferred (a lower token id is a piece the tokenizer met more
often). A run that is a word, or whose letters are evenly set ("Actin", a name),
stays whole.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from functools import lru_cache
from itertools import pairwise

__all__ = ["space_joined"]

_RUN = re.compile(r"[A-Za-z]+")
# The three costs below were chosen with bench/ocr.py on pages apart from those it
# reports (bench/README.md).
_WIDER = 1  # columns over the line's usual gap between two letters: a space left out
_LONGEST_PIECE = 24
_PER_WORD = 4.0  # a cost of its own for each piece: fewer, longer words are preferred
_UNKNOWN = 3.5  # the cost of each letter of a piece that is no word


def space_joined(text: str, columns: Sequence[int]) -> str:
    """`text` with the spaces put back that its runs of letters lost; `columns`: each
    character's position in the recogniser's output (or none: `text` as it is)."""
    from statistics import median

    from scholarflow.ingest.readers.quality import is_word

    if len(columns) != len(text) or len(text) < 2:
        return text
    gaps = [b - a for a, b in pairwise(columns)]
    letters = [gap for gap, a, b in zip(gaps, text, text[1:], strict=False)
               if a.isalpha() and b.isalpha()]
    if not letters:
        return text
    wide = median(letters) + _WIDER
    out, at = [], 0
    for match in _RUN.finditer(text):
        run, start = match.group(), match.start()
        if len(run) < 4 or is_word(run):
            continue
        cuts = [k for k in range(1, len(run)) if gaps[start + k - 1] >= wide]
        pieces = _split(run.lower(), cuts) if cuts else None
        if pieces:
            out.append(text[at:start])
            out.append(" ".join(run[a:b] for a, b in pieces))
            at = match.end()
    return "".join(out) + text[at:] if out else text


def _split(run: str, cuts: Sequence[int]) -> list[tuple[int, int]] | None:
    """The cheapest split of `run` at some of `cuts` into two or more pieces, mostly
    words (their spans), or None when keeping it whole is cheaper."""
    points = [0, *cuts, len(run)]
    best: dict[int, tuple[float, int]] = {0: (0.0, -1)}
    for j in range(1, len(points)):
        for i in range(j):
            if i in best and points[j] - points[i] <= _LONGEST_PIECE:
                cost = best[i][0] + _cost(run[points[i]:points[j]])
                if j not in best or cost < best[j][0]:
                    best[j] = (cost, i)
    last = len(points) - 1
    if last not in best or best[last][0] >= _cost(run):
        return None
    spans, j = [], last
    while j > 0:
        i = best[j][1]
        spans.append((points[i], points[j]))
        j = i
    return spans[::-1]


@lru_cache(maxsize=65536)
def _cost(piece: str) -> float:
    """A piece's cost: a word's grows with its rarity; a piece that is no word, with
    its length."""
    from scholarflow.tokens import encoding

    tokens = encoding().encode_ordinary(" " + piece)
    if len(tokens) == 1 and (len(piece) > 1 or piece == "a"):
        return _PER_WORD + math.log(tokens[0] + 2)
    return _PER_WORD + _UNKNOWN * len(piece)
