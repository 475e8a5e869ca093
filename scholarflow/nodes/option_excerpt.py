"""The sentences of a multiple-choice answer prompt's passages nearest the question.

Shown six to ten whole passages (p50 ~2,000 tokens), Qwen2.5-1.5B answered the stem
"not stated" for questions whose key passage was there; shown only the few sentences
sharing most of the stem's rarer words, with one sentence either side, it answered
"Decreases", "47% identical" and "CXE", and named the right option for 16 of 40 LitQA2
dev questions, the wrong one for 2 (bench/README.md, twelfth session). Its prompt is a
third as long, so the model reads it in a few seconds. The whole passages are read
next when this answer names no option (nodes/option_pick.py).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from scholarflow.nodes.option_evidence import split_sentences, stem_terms
from scholarflow.nodes.options import Options
from scholarflow.retrieval.index.tokenize import query_terms
from scholarflow.state import RecalledChunkState

__all__ = ["EXCERPT_SENTENCES", "excerpt"]

EXCERPT_SENTENCES = 3  # sentences sharing most of the stem's words, before their neighbours
NEIGHBOURS = 1  # sentences kept either side of each: the subject, or the result, may sit there


def excerpt(asked: Options, passages: Sequence[RecalledChunkState]
            ) -> tuple[list[RecalledChunkState], list[int]]:
    """(the passages holding the EXCERPT_SENTENCES sentences nearest `asked`'s stem, each
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
    nearest = sorted(shared, key=lambda s: -weight(s[2]))[:EXCERPT_SENTENCES]
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
