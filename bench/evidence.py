"""Evidence selection: supporting passages kept against answer-prompt tokens.

    .venv/bin/python bench/evidence.py                    # the evaluation set, ~1-2 min warm
    .venv/bin/python bench/evidence.py --set tune --grid  # choose the parameters (tune set)
    .venv/bin/python bench/evidence.py --refresh          # recall again (after recall changes)

For each labelled question of tests/data/recall_{eval,tune}.jsonl, the
recall the graph runs, without an LLM: the question with its hand
translation as the one planned sub-question (what the planner hands over),
then `recall_questions` / `build_plan` / `recall_step` as the graph has them.
Two scopes:

* "its document": the question asked about the one document that answers it
  (one step, searched within that document);
* "all 14": asked about the whole knowledge base (4 example papers + 10 d2l
  sections). Up to MAX_LISTED_DOCUMENTS documents the graph aims the question at
  each document on its own; over more, a library, it searches everything first
  and aims the question inside the best candidate documents of that search
  (`candidate_documents`), as here.

Then, at windows of 8k, 32k and 128k tokens, the passages that enter the
answer prompt today (every recalled chunk, best first, while it fits) and
with `select_evidence`, and: the supporting passage present (its document's
chunk containing `answer_text`), the answer prompt's tokens (the system
prompt with the passages, and the question), passages kept. Recall results
are cached under bench/.cache/ (keyed by the corpus, the question file and
the recall code). Exit code 0: a benchmark, not a test.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import itertools
import json
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# The checkout: `bench.*` and tests/support import from it, wherever this runs from.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.common import machine_line
from bench.recall_quality import (
    CACHE,
    EVAL_SET,
    QUALITY_KB,
    ROOT,
    TUNE_SET,
    corpus_files,
    corpus_key,
    load_questions,
    quality_kb,
)

WINDOWS = {"8k": (8_192, 2_000), "32k": (32_768, 8_000), "128k": (128_000, 8_000)}
SCOPES = ("its document", "all 14")
# Code whose change changes what recall returns: part of the recall cache's key.
_RECALL_CODE = ["bench/evidence.py", "scholarflow/nodes/recall.py",
                "scholarflow/nodes/candidates.py", "scholarflow/retrieval/kb.py",
                "scholarflow/nodes/recall_scope.py", "scholarflow/context.py",
                *sorted(str(p.relative_to(ROOT)) for p in
                        (ROOT / "scholarflow" / "retrieval" / "index").rglob("*.py"))]


def _flat(text: str) -> str:
    return " ".join(text.split())


async def _recall(kb: Any, q: dict[str, Any], documents: list[Any]) -> dict[str, Any]:
    """The graph's chunk_recall for `q` over `documents`: every recalled chunk, and the plan."""
    from types import SimpleNamespace

    from scholarflow.context import Context
    from scholarflow.nodes.candidates import candidate_documents
    from scholarflow.nodes.recall import (
        MAX_LISTED_DOCUMENTS,
        build_plan,
        recall_questions,
        recall_step,
    )
    from scholarflow.retrieval.access import recall_params
    from scholarflow.state import DocumentInfo, RecallStepTask, SubQuestion

    ctx = Context()
    infos = [DocumentInfo(doc_id=d.doc_id, title=d.title, tokens=d.tokens,
                          content_hash=d.content_hash) for d in documents]
    candidates: list[str] = []
    if len(documents) > MAX_LISTED_DOCUMENTS:  # a library: the graph searches first
        hits = await kb.search(q["query"], doc_ids=None, params=recall_params(ctx, [q["query"]]))
        candidates = candidate_documents(hits)
    planned = [SubQuestion(question=q["query"], translation=q["translation"], doc_id=None)]
    questions, _ = recall_questions(planned, q["query"], infos, "LITERATURE_QA",
                                    candidates=candidates)
    plan = build_plan(questions)
    doc_ids = [d.doc_id for d in documents] if len(documents) == 1 else []
    runtime = SimpleNamespace(context=ctx)
    recalled: list[Any] = []
    for step in plan:
        task = RecallStepTask(step=step, kb=kb.name, doc_ids=doc_ids, direct_doc_ids=[])
        recalled += (await recall_step(task, runtime))["recalled"]  # type: ignore[arg-type]
    return {"recalled": recalled, "aimed": sorted({s["doc_id"] for s in plan if s["doc_id"]})}


def _cache_file(questions: Path) -> Path:
    digest = hashlib.sha256(corpus_key(corpus_files()).encode())
    digest.update(questions.read_bytes())
    for name in _RECALL_CODE:
        digest.update(name.encode() + b"\0" + (ROOT / name).read_bytes())
    return CACHE / f"evidence-{questions.stem}-{digest.hexdigest()[:16]}.json"


async def recalled_sets(questions: Path, refresh: bool) -> dict[str, Any]:
    """{question id: {scope: {"recalled", "aimed", "doc_id"}}}, from the cache when there."""
    cached = _cache_file(questions)
    if cached.exists() and not refresh:
        data: dict[str, Any] = json.loads(cached.read_text())
        return data
    from scholarflow.retrieval.kb_registry import close_all, open_knowledge_base

    for name in ("SCHOLARFLOW_EMBEDDING_MODEL", "SCHOLARFLOW_ES_URL"):
        os.environ.pop(name, None)
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="sf-evidence-") as home:
        os.environ["SCHOLARFLOW_HOME"] = home
        await quality_kb(Path(home))
        kb = await open_knowledge_base(QUALITY_KB)
        docs = await kb.documents()
        by_title = {d.title: d for d in docs}
        for q in load_questions(questions):
            doc = by_title[q["doc_title"]]
            out[q["id"]] = {"query": q["query"], "answer_text": q["answer_text"],
                            "doc_id": doc.doc_id,
                            SCOPES[0]: await _recall(kb, q, [doc]),
                            SCOPES[1]: await _recall(kb, q, docs)}
        await close_all()
    CACHE.mkdir(parents=True, exist_ok=True)
    for old in CACHE.glob(f"evidence-{questions.stem}-*.json"):
        old.unlink()
    cached.write_text(json.dumps(out, ensure_ascii=False))
    return out


@dataclass
class Result:
    present: int = 0
    recalled: int = 0  # questions whose supporting passage recall found at all
    tokens: list[int] = field(default_factory=list)
    kept: list[int] = field(default_factory=list)


class Question:
    """One question of one scope, with what every selection over it shares."""

    def __init__(self, q: dict[str, Any], scope: str) -> None:
        from scholarflow.nodes.citations import format_chunks, number_chunks
        from scholarflow.nodes.evidence import deduplicate, is_reference_chunk

        self.query = q["query"]
        self.recalled = q[scope]["recalled"]
        self.aimed = set(q[scope]["aimed"])
        self.numbered = number_chunks(self.recalled)
        self.candidates = deduplicate([c for c in self.numbered if not is_reference_chunk(c)])
        needle = _flat(q["answer_text"])
        self.supporting = {c["chunk_id"] for c in self.numbered
                           if c["doc_id"] == q["doc_id"] and needle in _flat(c["text"])}
        self.cost = {c["chunk_id"]: count(format_chunks([c])) + 2 for c in self.numbered}
        self.rooms: dict[str, int] = {}
        self.common: dict[bool, dict[str, float]] = {}  # dense or not: chunk id -> score


async def score_common(prepared: dict[str, list[Question]]) -> dict[str, float]:
    """Every candidate's common score, lexical and hybrid; and what it costs (seconds)."""
    from scholarflow.nodes.evidence import common_scores

    cost: dict[str, float] = {}
    for dense in (False, True):
        for scope in SCOPES:
            start = time.perf_counter()
            for q in prepared[scope]:
                q.common[dense] = await common_scores(q.query, q.candidates, embedder=dense)
            cost[f"{'hybrid' if dense else 'lexical'} {scope}"] = time.perf_counter() - start
    return cost


def count(text: str) -> int:
    from scholarflow.tokens import count_tokens

    return count_tokens(text)


def answer_system(question: str, material: str) -> str:
    """The question-answering prompt (LITERATURE_QA_PROMPT) around `material`."""
    from scholarflow.language import answer_language
    from scholarflow.prompts import LITERATURE_QA_PROMPT

    (var,) = LITERATURE_QA_PROMPT.variables - {"language"}
    return LITERATURE_QA_PROMPT.format(language=answer_language(question), **{var: material})


def passage_room(ctx: Any, question: str) -> int:
    """Tokens the passages may take in a first question's answer prompt, counted as the
    answer node counts them: the prompt budget less the prompt without its material, the
    question's turn, one message's overhead and the passages' wrapper."""
    from scholarflow.llm.budget import prompt_budget
    from scholarflow.nodes.common import question_turn
    from scholarflow.prompts import CITED_MATERIAL_PROMPT
    from scholarflow.tokens import MESSAGE_OVERHEAD_TOKENS, count_message_tokens

    turns = [answer_system(question, ""), question_turn(question)]
    return (prompt_budget(ctx) - count_message_tokens(turns) - MESSAGE_OVERHEAD_TOKENS
            - count(CITED_MATERIAL_PROMPT.format(chunks="")))


def prepare(data: dict[str, Any]) -> dict[str, list[Question]]:
    from scholarflow.context import Context

    out = {scope: [Question(q, scope) for q in data.values()] for scope in SCOPES}
    for window, (size, reserve) in WINDOWS.items():
        ctx = Context(max_context_tokens=size, reserved_answer_tokens=reserve)
        for scope in SCOPES:
            for q in out[scope]:
                q.rooms[window] = passage_room(ctx, q.query)
    return out


def _pack(q: Question, chunks: list[Any], room: int) -> list[Any]:
    """evidence.pack with each chunk's cost counted once (the grid packs thousands of times)."""
    kept: list[Any] = []
    for c in chunks:
        if q.cost[c["chunk_id"]] > room:
            return kept or [c]  # pack cuts the best to fit: present all the same
        room -= q.cost[c["chunk_id"]]
        kept.append(c)
    return kept


async def select(q: Question, window: str, rule: Any | None) -> list[Any]:
    """Through the node's own code: `pack` (today) or `select_evidence`."""
    from scholarflow.nodes.evidence import pack, select_evidence

    room = q.rooms[window]
    if rule is None:
        return pack(q.numbered, room)
    return await select_evidence(q.recalled, room, aimed=q.aimed, question=q.query, rule=rule)


def measure(questions: list[Question], window: str, rule: Any | None, *,
            exact: list[list[Any]] | None = None) -> Result:
    """Today's selection (`rule` None) or the evidence rule's; `exact`: each
    question's passages as `select` chose them."""
    from scholarflow.nodes.evidence import relevant, uses_common

    result = Result()
    for i, q in enumerate(questions):
        room = q.rooms[window]
        if exact is not None:
            kept = exact[i]
        elif rule is None:
            kept = _pack(q, q.numbered, room)
        else:
            common = q.common.get(rule.dense) if uses_common(rule) else None
            kept = _pack(q, relevant(q.recalled, q.candidates, q.aimed, rule, common), room)
        result.recalled += bool(q.supporting)
        result.present += any(c["chunk_id"] in q.supporting for c in kept)
        result.tokens.append(sum(q.cost[c["chunk_id"]] for c in kept))
        result.kept.append(len(kept))
    return result


def prompt_tokens(q: Question, window: str, kept: list[Any]) -> int:
    """The whole answer prompt's tokens: the system prompt with the passages, the question."""
    from scholarflow.nodes.citations import format_chunks
    from scholarflow.prompts import CITED_MATERIAL_PROMPT
    from scholarflow.tokens import count_message_tokens

    material = CITED_MATERIAL_PROMPT.format(chunks=format_chunks(kept))
    return count_message_tokens([answer_system(q.query, material), q.query])


def _p90(values: list[int]) -> int:
    return sorted(values)[max(0, int(len(values) * 0.9 + 0.5) - 1)]


async def report(prepared: dict[str, list[Question]], rules: dict[str, Any]) -> None:
    """The table: today and each rule, each scope and window, through the node's own code."""
    n = len(prepared[SCOPES[0]])
    print("| scope | window | selection | supporting passage present | prompt tokens mean "
          "| p90 | passages kept mean (max) | tokens vs today |")
    print("|---|---|---|---|---|---|---|---|")
    for scope, window in itertools.product(SCOPES, WINDOWS):
        qs = prepared[scope]
        base = 0.0
        for name, r in (("today", None), *rules.items()):
            kept = [await select(q, window, r) for q in qs]
            result = measure(qs, window, r, exact=kept)
            tokens = [prompt_tokens(q, window, k) for q, k in zip(qs, kept, strict=True)]
            mean = statistics.mean(tokens)
            base = base or mean
            print(f"| {scope} | {window} | {name} | {result.present}/{n} "
                  f"({100 * result.present / n:.1f}%) | {mean:,.0f} | {_p90(tokens):,} | "
                  f"{statistics.mean(result.kept):.1f} ({max(result.kept)}) | "
                  f"{mean / base:.2f} |")
    print("\nsupporting passage recalled at all: " + ", ".join(
        f"{s} {measure(prepared[s], '128k', None).recalled}/{n}" for s in SCOPES))


def _rules() -> list[Any]:
    """The search: the recall-score rule alone (floor x best overall x best per step),
    and with passages the common score keeps besides (its best overall at a floor, each
    document's best), lexical or hybrid; or the common score alone (no recall part)."""
    from scholarflow.nodes.evidence import EvidenceRule

    rules = [EvidenceRule(relative_floor=f, max_passages=t, step_passages=s)
             for f, t, s in itertools.product((0.0, 0.4, 0.5, 0.55, 0.6, 0.65, 0.7),
                                              (5, 8, 10, 15), (0, 1, 2, 3, 4))]
    bases = ((0.55, 10, 3), (0.55, 8, 2), (0.55, 5, 1), (0.55, 10, 0), (1.0, 0, 0))
    for (f, t, s), n, cf, d, dense in itertools.product(
            bases, (0, 3, 5, 8, 10, 15, 20, 30, 40, 50), (0.0, 0.2, 0.3, 0.4, 0.5), (0, 1, 2, 3),
            (False, True)):
        if (n or d) and (cf == 0.0 or n):
            rules.append(EvidenceRule(relative_floor=f, max_passages=t, step_passages=s,
                                      common_passages=n, common_floor=cf, doc_passages=d,
                                      dense=dense))
    return rules


def grid(prepared: dict[str, list[Question]]) -> None:
    """Rules of the search by supporting passages lost against today (all cells), then tokens."""
    from scholarflow.nodes.evidence import DEFAULT_RULE

    cells = list(itertools.product(SCOPES, WINDOWS))
    today = {c: measure(prepared[c[0]], c[1], None) for c in cells}
    rows = []
    for rule in _rules():
        results = {c: measure(prepared[c[0]], c[1], rule) for c in cells}
        lost = {c: today[c].present - results[c].present for c in cells}
        ratio = {c: statistics.mean(results[c].tokens) / statistics.mean(today[c].tokens)
                 for c in cells}
        rows.append((sum(max(v, 0) for v in lost.values()), statistics.mean(ratio.values()),
                     rule, lost, ratio))
    rows.sort(key=lambda r: (r[0], r[1]))
    print("| lost | passage tokens vs today, mean | floor | best | per step | common best "
          "| common floor | per document | common | per cell: lost / tokens vs today |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    shown = rows[:20] + [r for r in rows[20:] if r[2] == DEFAULT_RULE]
    for lexical_only in (False, True):  # the best lexical rules too: the cheap variant
        shown += [r for r in rows if not r[2].dense and r not in shown][:5 * lexical_only]
    for total, mean, rule, lost, ratio in shown:
        cells_text = "; ".join(f"{s[:3]} {w}: {lost[(s, w)]} / {ratio[(s, w)]:.2f}"
                               for s, w in cells)
        mark = " (default)" if rule == DEFAULT_RULE else ""
        kind = ("-" if not (rule.common_passages or rule.doc_passages)
                else "hybrid" if rule.dense else "lexical")
        print(f"| {total} | {mean:.3f}{mark} | {rule.relative_floor} | {rule.max_passages} | "
              f"{rule.step_passages} | {rule.common_passages} | {rule.common_floor} | "
              f"{rule.doc_passages} | {kind} | {cells_text} |")
    print()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", choices=("eval", "tune"), default="eval")
    parser.add_argument("--grid", action="store_true", help="search the rule's parameters")
    parser.add_argument("--refresh", action="store_true", help="recall again, not from cache")
    args = parser.parse_args()
    from scholarflow.nodes.evidence import DEFAULT_RULE

    path = EVAL_SET if args.set == "eval" else TUNE_SET
    prepared = prepare(await recalled_sets(path, args.refresh))
    print(f"## Evidence selection: {len(prepared[SCOPES[0]])} questions ({path.name})\n")
    cost = await score_common(prepared)
    print("common scores, seconds for all questions (the first pass embeds every passage): "
          + ", ".join(f"{k} {v:.1f}" for k, v in cost.items()) + "\n")
    if args.grid:
        grid(prepared)
    print(f"rule: {DEFAULT_RULE}\n")
    from dataclasses import replace
    recall_only = replace(DEFAULT_RULE, common_passages=0, doc_passages=0)
    hybrid = replace(DEFAULT_RULE, common_passages=20, common_floor=0.5, dense=True)
    await report(prepared, {"recall rule": recall_only, "evidence": DEFAULT_RULE,
                            "hybrid": hybrid})
    machine_line()


if __name__ == "__main__":
    asyncio.run(main())
