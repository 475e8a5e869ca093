"""The lexical half of hybrid recall as one Elasticsearch query, scored like the embedded index.

`hybrid.lexical_scores` normalises each view by the most it could score,
which needs each term's document frequency. One `_mtermvectors` request on
artificial documents gives them (`term_statistics`), analysed by the index's
own analyzer: the query text itself, all the Chinese translation terms in
one document, and each English alternative in its own (so that its tokens,
after Elasticsearch's stemming, are known). Then

    dis_max(own view,  boost 1 / own bound,
            bool(should: dis_max(alternatives, boost group weight) per group),
                boost 1 / translated bound)

scores max(own / own bound, translated / translated bound), as the embedded
index does. Lucene's BM25 has no (k1 + 1) factor, so a term scores at most
its idf, log(1 + (N - df + 0.5) / (df + 0.5)), the bound's unit in both
backends.

Differences that remain, by construction: Elasticsearch analyses the query
and English alternatives with its analyzer (standard tokenizer, light
English stemmer, CJK unigrams and bigrams) and counts a repeated query word
twice in score and bound, where the embedded index uses its own tokenizer
(which also drops English stopwords) and each term once; its BM25 uses k1
= 1.2, the embedded one 1.5.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from scholarflow.language import HAN_CHAR
from scholarflow.retrieval.index.crosslingual import Group, LexicalQuery
from scholarflow.retrieval.index.tokenize import is_cjk_pair

FIELD = "text"


def _is_chinese(alternative: tuple[str, ...]) -> bool:
    # Chinese alternatives are index tokens already (bigrams or one character):
    # searched with `term`. English ones are words: analysed, with `match`.
    return bool(HAN_CHAR.match(alternative[0]))


def statistics_documents(text: str, query: LexicalQuery) -> list[dict[str, Any]]:
    """The artificial documents whose term statistics `lexical_clause` needs, in its order:
    the query, then (when any) all Chinese alternative terms, then each English alternative."""
    chinese, english = _alternatives(query)
    texts = [text, *([" ".join(chinese)] if chinese else []), *(" ".join(a) for a in english)]
    return [{"doc": {FIELD: t}} for t in texts]


def _alternatives(query: LexicalQuery) -> tuple[list[str], list[tuple[str, ...]]]:
    """The distinct Chinese terms and English alternatives of the translated view."""
    chinese: dict[str, None] = {}
    english: dict[tuple[str, ...], None] = {}
    for word in query.words:
        for alternative in (*word.translations, *((word.original,) if word.original else ())):
            if _is_chinese(alternative):
                chinese.update(dict.fromkeys(alternative))
            else:
                english[alternative] = None
    return list(chinese), list(english)


def lexical_clause(text: str, query: LexicalQuery,
                   responses: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The query (both views, normalised) from `_mtermvectors` answers; None: nothing to match."""
    stats = [_terms(r) for r in responses]
    chunks = max((_doc_count(r) for r in responses), default=0)
    if chunks <= 0:
        return None

    def idf(df: int) -> float:
        return math.log1p((chunks - df + 0.5) / (df + 0.5))

    # A word no chunk has counts at the largest idf, as in hybrid.unmatched_bound.
    own_bound = sum(tf * idf(df) for t, (df, tf) in stats[0].items()
                    if df > 0 or not is_cjk_pair(t))
    clauses: list[dict[str, Any]] = []
    if any(df > 0 for df, _ in stats[0].values()):  # else the own view matches nothing
        clauses.append({"match": {FIELD: {"query": text, "boost": 1.0 / own_bound}}})
    if query.words:
        chinese_terms, english_alternatives = _alternatives(query)
        first = 2 if chinese_terms else 1
        chinese = stats[1] if chinese_terms else {}
        english = dict(zip(english_alternatives, stats[first:], strict=True))
        view, bound = _translated(query, chinese, english, idf)
        if view and bound > 0:
            clauses.append({"bool": {"should": view, "boost": 1.0 / bound}})
    if not clauses:
        return None
    return clauses[0] if len(clauses) == 1 else {"dis_max": {"queries": clauses}}


def _translated(query: LexicalQuery, chinese: Mapping[str, tuple[int, int]],
                english: Mapping[tuple[str, ...], Mapping[str, tuple[int, int]]],
                idf: Any) -> tuple[list[dict[str, Any]], float]:
    def tokens(alternative: tuple[str, ...]) -> dict[str, tuple[int, int]]:
        if _is_chinese(alternative):
            return {t: chinese.get(t, (0, 1)) for t in alternative}
        return dict(english.get(alternative, {}))

    def usable(alternative: tuple[str, ...]) -> bool:
        found = tokens(alternative)
        return bool(found) and all(df > 0 for df, _ in found.values())

    groups: Sequence[Group] = query.translated(usable)
    view: list[dict[str, Any]] = []
    bound = 0.0
    for group in groups:
        matchable = [a for a in group.alternatives if any(
            df > 0 for df, _ in tokens(a).values())]
        if not matchable:
            if len(group.alternatives) == 1:  # a word kept as it is, which no chunk has
                bound += group.weight * sum(
                    tf * idf(0) for t, (_, tf) in tokens(group.alternatives[0]).items()
                    if not is_cjk_pair(t))
            continue
        bound += group.weight * max(
            sum(tf * idf(df) for df, tf in tokens(a).values() if df > 0) for a in matchable)
        view.append({"dis_max": {"queries": [_alternative(a) for a in matchable],
                                 "boost": group.weight}})
    return view, bound


def _alternative(alternative: tuple[str, ...]) -> dict[str, Any]:
    if not _is_chinese(alternative):
        return {"match": {FIELD: " ".join(alternative)}}
    terms = [{"term": {FIELD: t}} for t in dict.fromkeys(alternative)]
    return terms[0] if len(terms) == 1 else {"bool": {"should": terms}}


def _terms(response: Mapping[str, Any]) -> dict[str, tuple[int, int]]:
    """token -> (document frequency, times in the artificial document)."""
    terms = response.get("term_vectors", {}).get(FIELD, {}).get("terms", {})
    return {t: (max(0, int(s.get("doc_freq", 0))), int(s.get("term_freq", 1)))
            for t, s in terms.items()}


def _doc_count(response: Mapping[str, Any]) -> int:
    field = response.get("term_vectors", {}).get(FIELD, {})
    return int(field.get("field_statistics", {}).get("doc_count", 0))
