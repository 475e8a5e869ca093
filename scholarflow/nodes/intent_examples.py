"""The labelled example messages nearest a message: a second reader for what the rules doubt.

Keyword rules know the words they were given; a message they find no decisive cue
in ("are you a real person?", "北京到上海坐高铁要多久？", "wrtie a literature
reivew") is often plain to a reader who has seen messages like it. This module
keeps a few hundred example messages, each labelled with its intent, in English
and Chinese (`intent_examples.jsonl`), embeds them once per process with the
configured embedder, and finds the k nearest to a message by cosine similarity.

Only a unanimous vote counts: when the k nearest examples share one intent, the
message is that intent; when they disagree, the examples abstain and the message
goes where it went without them (the intent model, else the rules' guess): a
message that sits among examples of one intent rarely belongs to another, while
one between intents is as hard for its neighbours as for the rules (bench/README.md
measures both). The examples are messages a user of a paper assistant sends, not
any evaluation set's; a test keeps them apart from tests/data/route_*.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from scholarflow.errors import ScholarflowError
from scholarflow.intents import Intent
from scholarflow.retrieval.embeddings import (
    Embedder,
    Vectors,
    default_embedder,
    embed_queries,
)

logger = logging.getLogger(__name__)

EXAMPLES_FILE = Path(__file__).with_name("intent_examples.jsonl")
_vectors: dict[str, Vectors] = {}  # embedder name -> the examples' vectors


@dataclass(frozen=True, slots=True)
class ExampleVote:
    intent: Intent
    unanimous: bool
    nearest: tuple[str, ...]  # the k nearest examples, nearest first
    similarity: float  # cosine of the nearest


@cache
def examples() -> tuple[tuple[str, Intent], ...]:
    """(message, intent) pairs, in the file's order."""
    rows = [json.loads(line) for line in EXAMPLES_FILE.read_text(encoding="utf-8").splitlines()
            if line.strip()]
    return tuple((row["text"], Intent.parse(row["intent"])) for row in rows)


async def _example_vectors(embedder: Embedder) -> Vectors:
    # Once per embedder and process (two first callers at once may both embed: no lock
    # to tie to one event loop).
    if embedder.name not in _vectors:
        # As queries: each example is a message, compared with a message.
        _vectors[embedder.name] = await embed_queries(embedder, [text for text, _ in examples()])
    return _vectors[embedder.name]


async def nearest_examples(
    query: str, k: int, embedder: Embedder | None = None
) -> ExampleVote | None:
    """The vote of the k example messages nearest `query`; None when k < 1 or the
    embedder fails (the caller decides as it would without examples)."""
    if k < 1:
        return None
    embedder = embedder or default_embedder()
    try:
        matrix = await _example_vectors(embedder)
        vector = await embedder.embed_query(query)
    except ScholarflowError as exc:
        logger.info("intent examples unavailable (%s); deciding without them", exc)
        return None
    similarity = matrix @ vector
    nearest = np.argsort(-similarity)[:k]
    labelled = examples()
    votes: dict[Intent, float] = {}
    for index in nearest:
        label = labelled[index][1]
        votes[label] = votes.get(label, 0.0) + float(similarity[index])
    intent = max(votes, key=votes.__getitem__)
    return ExampleVote(intent, len(votes) == 1,
                       tuple(labelled[index][0] for index in nearest),
                       round(float(similarity[nearest[0]]), 3))
