"""The sentences of a multiple-choice answer prompt's passages nearest the question.

Shown several whole passages, a small model often answers "not stated" although the
passage that answers is among them; shown only the few sentences that share most of
the stem's rarer words, each with its neighbours, it finds the answer in a prompt a
fraction as long, which it also reads in a fraction of the time. The whole passages
are read next when this answer names no option (nodes/option_reading.py).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from scholarflow.nodes.option_evidence import split_sentences, stem_terms
from scholarflow.nodes.options import Options
from scholarflow.retrieval.index.tokenize import query_terms
from scholarflow.state import RecalledChunkState

__all__ = ["excerpt"]

NEIGHBOURS = 1  # sentences kept either side of each: the subject, or the result, may sit there


def excerpt(asked: Options, passages: Sequence[RecalledChunkState], sentences: int
            ) -> tuple[list[RecalledChunkState], list[int]]:
    """(the passages holding the `sentences` sentences nearest `asked`'s stem, each
    cut to them and NEIGHBOURS either side, their 1-based numbers in `passages`). A stem
    word weighs more the fewer sentences have it: "Pkdh1" tells more than "expression"."""
    terms = stem_terms(asked)
    split = [split_sentences(p["text"]) for p in passages]
    shared = [(i, j, terms.intersection(query_terms(s)))
              for i, sentences in enumerate(split) for j, s in enumerate(sentences)]
    having: dict[str, int] = {}
    for _, _, words in shared:
        for word in words:
            having[word] = having.get(word, 0) + 1

    def weight(words: set[str]) -> float:
        return sum(math.log(1 + len(shared) / having[w]) for w in words)

    # Ties keep the passages' order, which puts the best passage last (answer.py).
    nearest = sorted(shared, key=lambda s: -weight(s[2]))[:sentences]
    kept: dict[int, set[int]] = {}
    for i, j, words in nearest:
        if words:
            kept.setdefault(i, set()).update(range(j - NEIGHBOURS, j + NEIGHBOURS + 1))
    cut: list[RecalledChunkState] = []
    for i in sorted(kept):
        passage = passages[i].copy()
        passage["text"] = " ".join(split[i][j] for j in sorted(kept[i]) if 0 <= j < len(split[i]))
        cut.append(passage)
    return cut, [i + 1 for i in sorted(kept)]
