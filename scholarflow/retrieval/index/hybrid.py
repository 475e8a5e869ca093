"""The hybrid recall score: score = (1 - w) * lexical + w * cosine / best cosine.

`lexical` is BM25 over the query's two views (see `crosslingual`), each
normalised by the most it could score, so it lies in [0, 1] and only a
passage matching every word of the query (or of its translation) comes
near 1:

    own(c)        = sum of BM25(t, c) over the query's terms t / sum of their idf
                    (a word no chunk has: the largest idf)
    translated(c) = sum over groups g of weight_g * max over alternatives a of g
                    of BM25(a, c), divided by sum of weight_g * max_a idf(a)
    lexical(c)    = max(own(c), translated(c))

By the most the query could score, not by the best candidate's score: a weak
match (a Chinese question sharing 的, 是, 多少 with every Chinese chunk) must
not score 1 and bury the passages of the other language.

`cosine / best cosine` is the chunk's cosine divided by the best cosine
among the candidates (the whole knowledge base, or the `doc_ids` filter),
so the passage closest in meaning scores w, whatever the query's language.
e5's cosines sit in a narrow band that depends on the query: a question
in the other language than its answer reaches a low cosine, which scaled
by w = 0.3 could never pass the 0.2 threshold without a lexical match. The
threshold keeps its meaning, "drop chunks scoring under it": a chunk with
no lexical match is returned when its cosine is at least threshold / w of
the best (2/3 by default). The best cosine is taken as at least
MIN_BEST_COSINE, so a question about nothing in the knowledge base does
not lift its nearest chunk to w; and the bound counts the query's words
that no chunk has (`unmatched_bound`), so matching one word of four is
not a full match.

bench/README.md has the measurements behind each choice.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from scholarflow.retrieval.index.bm25 import Bm25Index
from scholarflow.retrieval.index.crosslingual import Group, LexicalQuery
from scholarflow.retrieval.index.tokenize import is_cjk_pair

FloatArray = npt.NDArray[np.float32]

# The best cosine counts as a match in meaning only from here up: a question
# about nothing in the knowledge base still has a nearest chunk, and scaled
# by its own cosine it would score w and pass the threshold. Set under the centred
# e5 cosine of the best chunk for questions a knowledge base answers, above that of
# most off-topic questions (recipes, football, weather), whose nearest chunks then
# score under the threshold; chosen on tests/data/recall_tune.jsonl (bench/README.md).
MIN_BEST_COSINE = 0.2


def hybrid_scores(lexical: FloatArray, cosine: FloatArray, weight: float) -> FloatArray:
    """(1 - weight) * lexical + weight * cosine / max(best cosine, MIN_BEST_COSINE), in place."""
    best = float(cosine.max()) if len(cosine) else 0.0
    scale = weight / max(best, MIN_BEST_COSINE)
    score = np.multiply(cosine, np.float32(scale), out=cosine)
    score += lexical * np.float32(1.0 - weight)
    return score


def lexical_scores(index: Bm25Index, query: LexicalQuery) -> FloatArray:
    """max(own view, translated view) of every chunk, in [0, 1]."""
    own_ids = index.term_ids(query.own)
    scores = index.scores(own_ids)
    bound = index.bound(own_ids) + unmatched_bound(index, query.own)
    if bound > 0:
        scores *= np.float32(1.0 / bound)
    groups = query.translated(lambda terms: all(t in index.vocab for t in terms))
    if groups:
        translated, bound = translated_view(index, groups)
        if bound > 0:
            np.maximum(scores, translated * np.float32(1.0 / bound), out=scores)
    return scores


def translated_view(index: Bm25Index, groups: Sequence[Group]) -> tuple[FloatArray, float]:
    """Sum over groups of weight x its best alternative's BM25, and the most that can be.

    Dense scratch arrays and whole-array passes: at 100k chunks a pass costs
    ~20 us, a scatter over a posting list ~5 ns a posting, and one query
    reads ~10^5 postings here (tests/unit/test_crosslingual.py checks it against a
    plain per-chunk sum).
    """
    total = np.zeros(index.size, np.float32)
    best = np.zeros(index.size, np.float32)  # one group's best alternative, per chunk
    bound = 0.0
    for group in groups:
        weight = np.float32(group.weight)
        alternatives = [ids for a in group.alternatives if (ids := _ids(index, a))]
        if not alternatives:
            # A word kept as it is (no translation) that no chunk has still counts.
            bound += group.weight * unmatched_bound(index, group.alternatives[0])
            continue
        bound += group.weight * max(index.bound(ids) for ids in alternatives)
        if len(alternatives) == 1 and len(alternatives[0]) == 1:
            docs, data = index.postings(alternatives[0][0])
            total[docs] += data * weight  # one posting per chunk: exact
            continue
        for ids in alternatives:
            if len(ids) == 1:
                docs, data = index.postings(ids[0])
                best[docs] = np.maximum(best[docs], data)
            else:  # the chunk's BM25 for all the alternative's terms, then the max
                partial = np.zeros(index.size, np.float32)
                for t in ids:
                    docs, data = index.postings(t)
                    partial[docs] += data
                np.maximum(best, partial, out=best)
        best *= weight
        total += best
        best.fill(0.0)
    return total, bound


def unmatched_bound(index: Bm25Index, terms: Sequence[str]) -> float:
    """What the query's words that no chunk has would add to the bound: each the largest idf.

    Without them "quantum chromodynamics hadron memory" would be normalised as
    "memory" alone and score like it. CJK bigrams are left out: a question's
    bigrams across word boundaries ("的学") are an artefact of segmentation, not
    words the passage lacks.
    """
    missing = sum(1 for t in dict.fromkeys(terms) if t not in index.vocab and not is_cjk_pair(t))
    return missing * float(np.log1p((index.size + 0.5) / 0.5)) if missing else 0.0


def _ids(index: Bm25Index, terms: Sequence[str]) -> list[int]:
    return index.term_ids(list(dict.fromkeys(terms)))

