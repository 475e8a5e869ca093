"""Rerank recalled chunks: an OpenAI-compatible rerank endpoint, else a local re-scoring.

Endpoint (when `SCHOLARFLOW_RERANK_MODEL` is set): the Jina/Cohere/vLLM
shape, `POST {base}/rerank` with `{"model", "query", "documents", "top_n"}`
answering `{"results": [{"index", "relevance_score"}]}`; base is
`SCHOLARFLOW_RERANK_BASE_URL`, else `OPENAI_BASE_URL`; key `OPENAI_API_KEY`.
A failing endpoint logs one warning and the local method answers instead:
recall that loses its reranker is still recall.

Local (no model to load): the first stage ranks by BM25 over the whole
knowledge base plus a cosine; this re-scores only its candidates with finer
lexical evidence BM25 cannot see -- how many of the query's distinct terms a
chunk has (weighted by rarity among the candidates: BM25 rewards repeating
one term), its word pairs as phrases ("teacher forcing", which d2l-zh also
writes in English beside 强制教学), terms close together, terms in the
heading or title, the query's numbers -- and blends that half and half with
the first-stage score, so a chunk without lexical evidence (a question in
the other language) keeps half its score rather than dropping out.

The gains are small (tests/unit/test_rerank.py checks them on labelled
bilingual questions: same-language, paraphrased, cross-language and with
numbers): a lexical signal on top of a first stage that already has BM25 can
only do so much, and most cross-language misses are not among the first
stage's candidates at all. A semantic reranker (the endpoint) is the real upgrade.
"""

from __future__ import annotations

import asyncio
import logging
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from itertools import pairwise
from typing import Any

import httpx

from scholarflow.retrieval.index.tokenize import query_terms, tokenize
from scholarflow.retrieval.kb import RecalledChunk
from scholarflow.settings import Settings, get_settings, revealed

MODEL_ENV = Settings.rerank_model.env
BASE_URL_ENV = Settings.rerank_base_url.env
TIMEOUT_SECONDS = 30.0
# Blend of the local re-scoring: half first stage, half lexical evidence.
FIRST_STAGE_WEIGHT = 0.5
FEATURE_WEIGHTS = {"coverage": 0.4, "phrases": 0.2, "proximity": 0.1, "heading": 0.2,
                   "numbers": 0.1}

log = logging.getLogger(__name__)
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


async def rerank(
    query: str, chunks: Sequence[RecalledChunk], *, top_n: int
) -> list[RecalledChunk]:
    """The `top_n` best chunks, best first, scored by the reranker."""
    if not chunks or top_n <= 0:
        return []
    settings = get_settings()
    if model := settings.rerank_model:
        if base := settings.rerank_base_url or settings.openai_base_url:
            try:
                return await rerank_remote(
                    query, chunks, top_n=top_n, model=model, base_url=base,
                    api_key=revealed(settings.openai_api_key),
                )
            except RerankEndpointError as exc:
                log.warning("%s; reranking locally instead", exc)
        else:
            log.warning(
                "%s is set but neither %s nor OPENAI_BASE_URL is; reranking locally",
                MODEL_ENV, BASE_URL_ENV,
            )
    # ~0.5 ms a candidate of tokenizing and scoring: off the event loop.
    return await asyncio.to_thread(rerank_local, query, chunks, top_n=top_n)


class RerankEndpointError(Exception):
    """The rerank endpoint failed; the caller falls back to the local method."""


async def rerank_remote(
    query: str,
    chunks: Sequence[RecalledChunk],
    *,
    top_n: int,
    model: str,
    base_url: str,
    api_key: str | None = None,
    timeout_seconds: float = TIMEOUT_SECONDS,
) -> list[RecalledChunk]:
    url = base_url.rstrip("/") + "/rerank"
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    body = {"model": model, "query": query, "documents": [c.text for c in chunks],
            "top_n": min(top_n, len(chunks))}
    try:
        async with httpx.AsyncClient(timeout=timeout_seconds) as client:
            response = await client.post(url, json=body, headers=headers)
    except httpx.HTTPError as exc:
        raise RerankEndpointError(f"rerank endpoint {url} is unreachable ({exc!r})") from exc
    if response.status_code // 100 != 2:
        raise RerankEndpointError(
            f"rerank endpoint {url} answered HTTP {response.status_code}: {response.text[:200]}"
        )
    try:
        results: list[dict[str, Any]] = response.json()["results"]
        ranked = [(int(r["index"]), float(r["relevance_score"])) for r in results]
    except (ValueError, KeyError, TypeError) as exc:
        raise RerankEndpointError(f"rerank endpoint {url} answered an unexpected body") from exc
    out: list[RecalledChunk] = []
    seen: set[int] = set()
    for index, score in sorted(ranked, key=lambda r: -r[1]):
        if 0 <= index < len(chunks) and index not in seen:
            seen.add(index)
            out.append(replace(chunks[index], score=score))
    return out[:top_n]


def rerank_local(
    query: str, chunks: Sequence[RecalledChunk], *, top_n: int
) -> list[RecalledChunk]:
    """Re-score the candidates with finer lexical evidence; see the module docstring."""
    terms = query_terms(query)
    if not terms:
        return sorted(chunks, key=lambda c: -c.score)[:top_n]
    texts = [tokenize(c.text) for c in chunks]
    heads = [set(tokenize(f"{c.title} {c.heading or ''}")) for c in chunks]
    # Rarity among the candidates: a term every candidate has tells them apart by nothing.
    n = len(chunks)
    df = Counter(t for tokens in texts for t in set(tokens) if t in terms)
    idf = {t: math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5)) for t in terms}
    total = sum(idf.values()) or 1.0
    numbers = set(_NUMBER.findall(query))
    phrases = _pairs(tokenize(query))
    top = max((c.score for c in chunks), default=0.0)
    rescored: list[RecalledChunk] = []
    for chunk, tokens, head in zip(chunks, texts, heads, strict=True):
        present = set(tokens).intersection(terms)
        features = {
            "coverage": sum(idf[t] for t in present) / total,
            "proximity": _proximity(tokens, present),
            "phrases": len(phrases & _pairs(tokens)) / len(phrases) if phrases else 0.0,
            "heading": sum(idf[t] for t in terms if t in head) / total,
            "numbers": (
                len(numbers.intersection(_NUMBER.findall(chunk.text))) / len(numbers)
                if numbers else 0.0
            ),
        }
        fine = sum(FEATURE_WEIGHTS[k] * v for k, v in features.items())
        first = chunk.score / top if top > 0 else 0.0
        score = FIRST_STAGE_WEIGHT * first + (1 - FIRST_STAGE_WEIGHT) * fine
        rescored.append(replace(chunk, score=round(score, 6)))
    rescored.sort(key=lambda c: -c.score)  # stable: ties keep the first-stage order
    return rescored[:top_n]


def _pairs(tokens: list[str]) -> set[tuple[str, str]]:
    """Adjacent Latin-script word pairs: "forget gate", "teacher forcing" as phrases.

    Chinese needs none: its bigram terms already are adjacent-character pairs.
    """
    words = [t for t in tokens if t.isascii()]
    return set(pairwise(words))


def _proximity(tokens: list[str], present: set[str]) -> float:
    """1 when the matched terms sit within a short span, falling with its width.

    The smallest window of tokens holding every matched term, against the
    number of terms it must hold; 0 with fewer than two terms to relate.
    """
    if len(present) < 2:
        return 0.0
    positions = [(i, t) for i, t in enumerate(tokens) if t in present]
    need = len(present)
    counts: Counter[str] = Counter()
    best = len(tokens)
    left = 0
    for pos, term in positions:
        counts[term] += 1
        while len(counts) == need:
            best = min(best, pos - positions[left][0] + 1)
            left_term = positions[left][1]
            counts[left_term] -= 1
            if not counts[left_term]:
                del counts[left_term]
            left += 1
    return min(1.0, need / best) if best else 0.0
