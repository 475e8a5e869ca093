"""Routes of questions asked as people ask them: the LitQA2 dev stems, without options.

    .venv/bin/python bench/routes.py [--kb NAME] [--no-llm] [--eval-llm] [--show]

A researcher types a precise question about a finding; it must go to recall
(LITERATURE_QA, chunk_recall), never to a summary of the whole library or a review.
For each half of the dev split (tuning / checking: the first byte of sha256(id),
even / odd) it prints how the stems are routed, the way `scholarflow route` and the
graph route them (`recognise_intent`, `select_strategy`):

  (a) no LLM: the rules, then the nearest example messages (nodes/intent_examples.py);
  (b) with the LLM, when one is configured (OPENAI_BASE_URL or OPENAI_API_KEY) and
      --no-llm is not given: the intent call, the guard after it, its tokens and time.

Columns: n; intents (QA, SUM = LITERATURE_SUMMARY, REV = REVIEW_GENERATION,
CRIT = PAPER_REVIEW, CHAT = SIMPLE_INTERACTION); strategies (recall = chunk_recall,
summary = multi_doc_summary, whole = full_content, none = chat); decided_by; and
"away": stems routed away from LITERATURE_QA. --show lists those stems.

Then the route accuracy on the eval sets tests/data/route_*.jsonl (queries written
for the purpose, with their intent): no LLM, documents attached as in the graph;
with --eval-llm also through the LLM (one call per query the rules are not sure of).

The library is the knowledge base --kb (its documents' titles and sizes), else a
stand-in: one document per PDF of the corpus, named by its file, at the corpus's
average size. The corpus is read from ../shared/corpus/litqa2 (LITQA_CORPUS to move
it). Exit code 0 whatever the figures: it is a benchmark, not a test.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import time
import urllib.parse
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from scholarflow import Context
from scholarflow.intents import Intent
from scholarflow.nodes.intent import recognise_intent, select_strategy
from scholarflow.state import DocumentInfo

ROOT = Path(__file__).resolve().parents[1]
CORPUS = Path(os.environ.get("LITQA_CORPUS", ROOT.parent / "shared" / "corpus" / "litqa2"))
EVAL_SETS = sorted((ROOT / "tests" / "data").glob("route_*.jsonl"))
STAND_IN_TOKENS = 20_000  # ~1.7M tokens over 84 papers
SHORT = {Intent.LITERATURE_QA: "QA", Intent.LITERATURE_SUMMARY: "SUM",
         Intent.REVIEW_GENERATION: "REV", Intent.PAPER_REVIEW: "CRIT",
         Intent.SIMPLE_INTERACTION: "CHAT"}
STRATEGIES = {"chunk_recall": "recall", "multi_doc_summary": "summary",
              "full_content": "whole", None: "none"}
DECIDERS = ("rules", "examples", "llm", "guard", "fallback")


@dataclass
class Tally:
    """How a set of questions was routed."""

    n: int = 0
    intents: Counter[Intent] = field(default_factory=Counter)
    strategies: Counter[str] = field(default_factory=Counter)
    deciders: Counter[str] = field(default_factory=Counter)
    away: list[str] = field(default_factory=list)
    right: int = 0
    input_tokens: int = 0
    calls: int = 0
    seconds: float = 0.0


def half(question_id: str) -> str:
    return "tuning" if hashlib.sha256(question_id.encode()).digest()[0] % 2 == 0 else "checking"


def load_stems(path: Path) -> dict[str, list[str]]:
    halves: dict[str, list[str]] = {"tuning": [], "checking": []}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            halves[half(row["id"])].append(row["question"])
    return halves


async def library(kb_name: str | None) -> tuple[list[DocumentInfo], str]:
    if kb_name:
        from scholarflow.retrieval.kb_registry import close_all, open_knowledge_base

        kb = await open_knowledge_base(kb_name)
        stored = await kb.documents()
        await close_all()
        return ([DocumentInfo(doc_id=d.doc_id, title=d.title, tokens=d.tokens,
                              content_hash=d.content_hash) for d in stored],
                f"knowledge base {kb_name!r}")
    pdfs = sorted((CORPUS / "pdfs").glob("*.pdf"))
    return ([DocumentInfo(doc_id=f"pdf{i}", title=urllib.parse.unquote(p.stem),
                          tokens=STAND_IN_TOKENS, content_hash=f"stand-in-{i}")
             for i, p in enumerate(pdfs)], "stand-in: the corpus's PDF file names")


async def route(ctx: Context, queries: list[str], docs: list[DocumentInfo],
                expected: list[str] | None = None) -> Tally:
    tally = Tally()
    for i, query in enumerate(queries):
        started = time.perf_counter()
        decision = await recognise_intent(ctx, query, documents=docs)
        tally.seconds += time.perf_counter() - started
        strategy = None if decision.intent is Intent.SIMPLE_INTERACTION else select_strategy(
            decision.intent, use_direct_content=False, document_count=len(docs))
        tally.n += 1
        tally.intents[decision.intent] += 1
        tally.strategies[STRATEGIES[strategy]] += 1
        tally.deciders[decision.decided_by] += 1
        tally.calls += len(decision.usage)
        tally.input_tokens += sum(u["input_tokens"] for u in decision.usage)
        if decision.intent is not Intent.LITERATURE_QA:
            tally.away.append(f"{decision.intent.value} by {decision.decided_by} "
                              f"({decision.reason}): {query}")
        if expected is not None:
            tally.right += decision.intent.value == expected[i]
    return tally


def header() -> str:
    intents = " ".join(f"{s:>4}" for s in SHORT.values())
    strategies = " ".join(f"{s:>7}" for s in ("recall", "summary", "whole", "none"))
    deciders = " ".join(f"{d[:5]:>5}" for d in DECIDERS)
    return f"{'part':<5}{'half':<9}{'n':>3} | {intents} | {strategies} | {deciders} | away"


def row(part: str, name: str, t: Tally) -> str:
    intents = " ".join(f"{t.intents[i]:>4}" for i in SHORT)
    strategies = " ".join(f"{t.strategies[s]:>7}" for s in ("recall", "summary", "whole", "none"))
    deciders = " ".join(f"{t.deciders[d]:>5}" for d in DECIDERS)
    line = f"{part:<5}{name:<9}{t.n:>3} | {intents} | {strategies} | {deciders} | {len(t.away)}"
    if t.calls:
        line += (f"   ({t.calls} intent calls, {t.input_tokens} prompt tokens, "
                 f"{t.seconds:.1f} s)")
    return line


def rules_only() -> Context:
    """A context with no LLM: recognise_intent decides as without a model (rules, examples)."""
    return Context(openai_api_base="", openai_api_key="")


async def main(args: argparse.Namespace) -> None:
    halves = load_stems(CORPUS / "questions-dev.jsonl")
    docs, described = await library(args.kb)
    with_llm = Context()
    use_llm = with_llm.llm_configured and not args.no_llm
    print(f"LitQA2 dev stems without options; library: {len(docs)} documents ({described})")
    print(header())
    parts = [("(a)", rules_only())] + ([("(b)", with_llm)] if use_llm else [])
    shown: list[str] = []
    for part, ctx in parts:
        for name, stems in halves.items():
            tally = await route(ctx, stems, docs)
            print(row(part, name, tally))
            shown += [f"  {part} {name}: {line}" for line in tally.away]
    if not use_llm:
        print("(b) skipped: no LLM configured (set OPENAI_BASE_URL)" if not args.no_llm
              else "(b) skipped: --no-llm")
    if args.show and shown:
        print("routed away from LITERATURE_QA:")
        print("\n".join(shown))

    print("\nroute accuracy on the eval sets (intent as labelled), documents attached:")
    eval_parts = parts if args.eval_llm else parts[:1]
    for part, ctx in eval_parts:
        for path in EVAL_SETS:
            rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
                    if line.strip()]
            tally = await route(ctx, [r["query"] for r in rows], docs,
                                [r["intent"] for r in rows])
            decided = ", ".join(f"{d} {tally.deciders[d]}" for d in DECIDERS if tally.deciders[d])
            print(f"{part} {path.name:<24} {tally.right}/{tally.n} = "
                  f"{tally.right / tally.n:.3f}  (decided by {decided})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kb", help="route against this knowledge base's documents")
    parser.add_argument("--no-llm", action="store_true", help="part (a) only")
    parser.add_argument("--eval-llm", action="store_true",
                        help="also route the eval sets through the LLM (many calls)")
    parser.add_argument("--show", action="store_true",
                        help="list the stems routed away from LITERATURE_QA")
    asyncio.run(main(parser.parse_args()))
