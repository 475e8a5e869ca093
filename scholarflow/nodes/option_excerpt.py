"""The sentences of a multiple-choice answer prompt's passages nearest the question.

Shown several whole passages, a small model often answers "not stated" although the
passage that answers is among them; shown only the few sentences that share most of
the stem's rarer words, each with its neighbours, it finds the answer in a prompt a
fraction as long, which it also reads in a fraction of the time. The whole passages
are read next when this answer names no option (nodes/option_reading.py).

The sentence that answers often shares few of the stem's words ("Zfx9 fell fourfold"
for "What happens to Zfx9 after knockout of Rab37?") and would rank below the
methods sentences that repeat the stem. So each option also brings the best-ranked
sentence that names it and shares a stem word: the model is still asked the stem
alone and reads the options' words only where a passage says them, beside the
sentence that may say what they are to the question. A sentence using a short form
the passages define names the option spelled out ("LPS", "lipopolysaccharide").
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from scholarflow.nodes.abbreviations import spelled_out
from scholarflow.nodes.option_evidence import (
    names,
    option_words,
    split_sentences,
    stem_terms,
    words,
)
from scholarflow.nodes.options import Options
from scholarflow.retrieval.index.tokenize import query_terms
from scholarflow.state import RecalledChunkState

__all__ = ["excerpt"]

NEIGHBOURS = 1  # sentences kept either side of each: the subject, or the result, may sit there

_Ranked = tuple[int, int, set[str]]  # (passage, sentence, the stem terms it shares)


def excerpt(asked: Options, passages: Sequence[RecalledChunkState], sentences: int,
            abbreviations: Mapping[str, str] | None = None
            ) -> tuple[list[RecalledChunkState], list[int]]:
    """(the passages holding the `sentences` sentences nearest `asked`'s stem and each
    option's best-ranked sentence naming it, each cut to them and NEIGHBOURS either side,
    their 1-based numbers in `passages`). A stem word weighs more the fewer sentences
    have it: "Pkdh1" tells more than "expression"."""
    if sentences <= 0:
        return [], []
    terms = stem_terms(asked)
    split = [split_sentences(p["text"]) for p in passages]
    shared = [(i, j, terms.intersection(query_terms(s)))
              for i, said in enumerate(split) for j, s in enumerate(said)]
    having: dict[str, int] = {}
    for _, _, shared_terms in shared:
        for term in shared_terms:
            having[term] = having.get(term, 0) + 1

    def weight(shared_terms: set[str]) -> float:
        return sum(math.log(1 + len(shared) / having[t]) for t in shared_terms)

    # Ties keep the passages' order, which puts the best passage last (answer.py).
    ranked = [s for s in sorted(shared, key=lambda s: -weight(s[2])) if s[2]]
    nearest = ranked[:sentences] + _anchors(asked, split, ranked[sentences:],
                                            abbreviations or {})
    kept: dict[int, set[int]] = {}
    for i, j, _ in nearest:
        kept.setdefault(i, set()).update(range(j - NEIGHBOURS, j + NEIGHBOURS + 1))
    cut: list[RecalledChunkState] = []
    for i in sorted(kept):
        passage = passages[i].copy()
        passage["text"] = " ".join(split[i][j] for j in sorted(kept[i]) if 0 <= j < len(split[i]))
        cut.append(passage)
    return cut, [i + 1 for i in sorted(kept)]


def _anchors(asked: Options, split: list[list[str]], ranked: list[_Ranked],
             abbreviations: Mapping[str, str]) -> list[_Ranked]:
    """Each option's best-ranked sentence of `ranked` (all share a stem term) naming it,
    once each; a short form of `abbreviations` names what it abbreviates ("LPS" names
    "lipopolysaccharide")."""
    said: dict[tuple[int, int], list[list[str]]] = {}  # each sentence's words, read once

    def names_it(option: list[str], i: int, j: int) -> bool:
        if (i, j) not in said:
            text = split[i][j]
            written_out = spelled_out(text, abbreviations)
            said[(i, j)] = [words(text)] + ([words(written_out)] if written_out != text else [])
        return any(names(option, these) for these in said[(i, j)])

    kept: list[_Ranked] = []
    for _, option in option_words(asked):
        best = next((s for s in ranked if names_it(option, s[0], s[1])), None)
        if best is not None and best not in kept:
            kept.append(best)
    return kept
