"""Post-hoc citations: which passages support an answer sentence, against a labelled set.

    .venv/bin/python bench/attribution.py              # choose on the tune set, report eval
    .venv/bin/python bench/attribution.py --lexical    # without the embedder (lexical only)

tests/data/attribution_{tune,eval}.jsonl hold answer contexts: the numbered
passages a question recalled (d2l sections, tests/data/attribution_passages.jsonl)
and sentences written as a model would answer, in English and Chinese (many
across languages), each with the passages that support it, or none.

For every sentence the lexical score and the local embedder's cosine
against each passage are computed once; then, on the tune set only, a grid
of dense weight x threshold x relative share, and a lexical-only threshold
(what a sentence gets before the passages' vectors are there). Printed per
setting: citation precision (inserted citations that name a supporting
passage), sentence recall (supported sentences given at least one), F1, and
false attributions (unsupported sentences given any). The best tune F1 is
then reported on the eval set, with the "cites wrongly" rule: a correct
citation must be kept, a wrong one (each other passage in turn) replaced by
a supporting one. Latency: the time one sentence's attribution takes
(embedding it, scoring, choosing), p50/p95. Exit code 0: a benchmark.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scholarflow.nodes.attribution_score import (  # noqa: E402
    RULE,
    AttributionRule,
    FloatArray,
    PassageScorer,
    choose,
    hybrid,
    wrongly_cited,
)

DATA = ROOT / "tests" / "data"
WEIGHTS = (0.0, 0.3, 0.5, 0.7, 0.9)
THRESHOLDS = tuple(round(0.05 + 0.05 * i, 2) for i in range(15))  # 0.05 .. 0.75
RELATIVE = (0.7, 0.8, 0.9)


@dataclass
class Scored:
    context: str
    text: str
    support: set[int]  # 0-based passages
    lexical: FloatArray
    cosine: FloatArray | None
    millis: float  # this sentence's attribution, embedding included


def load(split: str) -> list[dict[str, object]]:
    with open(DATA / f"attribution_{split}.jsonl", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def passages() -> dict[str, str]:
    with open(DATA / "attribution_passages.jsonl", encoding="utf-8") as f:
        return {d["id"]: d["text"] for d in map(json.loads, f) if d}


async def score(split: str, texts: dict[str, str], lexical_only: bool) -> list[Scored]:
    out = []
    for context in load(split):
        ids = list(context["passages"])  # type: ignore[call-overload]
        scorer = PassageScorer([texts[i] for i in ids], None if lexical_only else True, wait=True)
        if not lexical_only:
            await scorer.cosines("warm-up")  # the passages' vectors: once per answer
        for sentence in context["sentences"]:  # type: ignore[attr-defined]
            started = time.perf_counter()
            lexical = scorer.lexical(sentence["text"])
            cosine = await scorer.cosines(sentence["text"])
            choose(lexical if cosine is None else hybrid(lexical, cosine, RULE.dense_weight),
                   RULE.threshold)
            millis = (time.perf_counter() - started) * 1000
            out.append(Scored(str(context["context"]), sentence["text"],
                              {ids.index(p) for p in sentence["support"]}, lexical, cosine, millis))
    return out


@dataclass
class Result:
    precision: float
    recall: float
    false_rate: float
    cited: int

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0


def evaluate(rows: list[Scored], rule: AttributionRule, dense: bool) -> Result:
    right = cited = found = supported = false = unsupported = 0
    for row in rows:
        s, threshold = scores_of(row, rule, dense)
        chosen = set(choose(s, threshold, rule))
        right += len(chosen & row.support)
        cited += len(chosen)
        if row.support:
            supported += 1
            found += bool(chosen & row.support)
        else:
            unsupported += 1
            false += bool(chosen)
    return Result(right / cited if cited else 1.0, found / max(supported, 1),
                  false / max(unsupported, 1), cited)


def scores_of(row: Scored, rule: AttributionRule, dense: bool) -> tuple[FloatArray, float]:
    if dense and row.cosine is not None:
        return hybrid(row.lexical, row.cosine, rule.dense_weight), rule.threshold
    return row.lexical, rule.lexical_threshold


def replacement(rows: list[Scored], rule: AttributionRule, dense: bool) -> tuple[str, str]:
    """(correct citations wrongly replaced, wrong citations replaced by a supporting one)."""
    kept_wrongly = total_right = fixed = total_wrong = 0
    for row in rows:
        if not row.support:
            continue
        s, threshold = scores_of(row, rule, dense)
        for cited in range(len(s)):
            wrong = wrongly_cited(s, [cited], threshold, rule)
            if cited in row.support:
                total_right += 1
                kept_wrongly += wrong
            else:
                total_wrong += 1
                fixed += wrong and set(choose(s, threshold, rule)) <= row.support
    return f"{kept_wrongly}/{total_right}", f"{fixed}/{total_wrong}"


def grid(rows: list[Scored], dense: bool) -> AttributionRule:
    print(f"\n### tune set, {'hybrid' if dense else 'lexical only'}\n")
    print("| weight | threshold | relative | precision | recall | F1 | false attributions |")
    print("|---|---|---|---|---|---|---|")
    best: tuple[float, AttributionRule] | None = None
    for w in WEIGHTS if dense else (0.0,):
        for relative in RELATIVE:
            for t in THRESHOLDS:
                rule = replace(RULE, dense_weight=w, threshold=t, lexical_threshold=t,
                               relative=relative)
                r = evaluate(rows, rule, dense)
                if relative == RULE.relative or not dense:
                    print(f"| {w} | {t} | {relative} | {r.precision:.3f} | {r.recall:.3f} | "
                          f"{r.f1:.3f} | {r.false_rate:.3f} |")
                if best is None or r.f1 > best[0] + 1e-9:
                    best = (r.f1, rule)
    assert best is not None
    print(f"\nbest on tune: {best[1]} (F1 {best[0]:.3f})")
    return best[1]


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lexical", action="store_true", help="no embedder")
    args = parser.parse_args()
    os.environ.pop("SCHOLARFLOW_EMBEDDING_MODEL", None)  # the local model, as shipped
    texts = passages()
    tune = await score("tune", texts, args.lexical)
    evaluation = await score("eval", texts, args.lexical)
    dense = not args.lexical and tune[0].cosine is not None
    print(f"{len(tune)} tune and {len(evaluation)} eval sentences; embedder: "
          f"{'multilingual-e5-small (local)' if dense else 'none'}")
    lexical_rule = grid(tune, False)
    rule = replace(grid(tune, True), lexical_threshold=lexical_rule.lexical_threshold) \
        if dense else lexical_rule
    print("\n### the chosen rule, tune vs eval\n")
    print("| set | scores | precision | recall | F1 | false attributions | citations |"
          " correct cit. replaced | wrong cit. fixed |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, rows in (("tune", tune), ("eval", evaluation)):
        for use_dense in (True, False) if dense else (False,):
            r = evaluate(rows, rule, use_dense)
            kept, fixed = replacement(rows, rule, use_dense)
            print(f"| {name} | {'hybrid' if use_dense else 'lexical'} | {r.precision:.3f} | "
                  f"{r.recall:.3f} | {r.f1:.3f} | {r.false_rate:.3f} | {r.cited} | {kept} |"
                  f" {fixed} |")
    times = sorted(r.millis for r in tune + evaluation)
    print(f"\nper-sentence attribution: p50 {statistics.median(times):.1f} ms, "
          f"p95 {times[int(0.95 * (len(times) - 1))]:.1f} ms, max {times[-1]:.1f} ms "
          f"({'embedding the sentence included' if dense else 'lexical only'}); "
          f"load average {os.getloadavg()[0]:.2f}")
    print("\nrule:", rule)
    if dense:
        print("\nmisses on tune (hybrid):")
        for row in tune:
            s, threshold = scores_of(row, rule, True)
            chosen = set(choose(s, threshold, rule))
            if chosen != row.support and not (chosen and chosen <= row.support):
                print(f"  {row.context} gold={sorted(row.support)} got={sorted(chosen)} "
                      f"top={np.round(np.sort(s)[::-1][:3], 2).tolist()} {row.text[:70]}")


if __name__ == "__main__":
    asyncio.run(main())
