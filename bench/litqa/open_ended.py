"""`open`: the dev stems WITHOUT options, as a researcher would type them.

Each stem runs through the whole graph over the knowledge base with the model: the
route it took (`detected_intent`, `strategy` and who decided), whether the answer's
words hold the ideal answer (`questions.contains_ideal`: case, dashes, punctuation and
citation markers ignored, a compound whole or in pieces one word), whether the answer
is citation markers alone, and what it cost. A run that stops for approval (interrupt)
or runs past --timeout counts as such.
"""

from __future__ import annotations

import argparse
from collections import Counter
from dataclasses import dataclass

from bench.litqa.env import model_part
from bench.litqa.graph import ask
from bench.litqa.questions import Question, citations_only, contains_ideal
from bench.litqa.report import Rows, p50_max, print_halves, progress, share


@dataclass
class Opened:
    q: Question
    route: str  # "intent / strategy (decided by)"
    recall: bool  # routed to chunk_recall
    holds_ideal: bool
    markers_only: bool
    right_paper: bool
    calls: int
    prompt_tokens: int
    seconds: float
    ended: str  # "", "interrupted", or the error / timeout


def summarise(rs: list[Opened]) -> Rows:
    n = len(rs)
    routes = Counter(r.route for r in rs)
    return [
        ("routed to chunk_recall", share(sum(r.recall for r in rs), n)),
        ("routes", "; ".join(f"{route}: {k}" for route, k in routes.most_common()) or "-"),
        ("answer's words hold the ideal answer", share(sum(r.holds_ideal for r in rs), n)),
        ("answer is citation markers only (or empty)",
         share(sum(r.markers_only for r in rs), n)),
        ("right paper among the sources", share(sum(r.right_paper for r in rs), n)),
        ("LLM calls a question p50 / max", p50_max([r.calls for r in rs])),
        ("prompt tokens a question p50 / max", p50_max([r.prompt_tokens for r in rs])),
        ("seconds a question p50 / max", p50_max([r.seconds for r in rs])),
        ("stopped for approval / ended by an error or a timeout",
         f"{sum(r.ended == 'interrupted' for r in rs)} / "
         f"{sum(r.ended not in ('', 'interrupted') for r in rs)}"),
    ]


async def open_questions(args: argparse.Namespace) -> None:
    from scholarflow.retrieval.kb_registry import close_all

    env, questions, lib, graph, context = await model_part(args, "open")
    records = []
    for q in questions:
        env.reset(mode="extractive")  # --scripted: answers made of the prompt's sentences
        run = await ask(graph, context, q.question, args.kb, args.timeout)
        v = run.values
        strategy = v.get("strategy")
        route = f"{v.get('detected_intent')} / {strategy} ({v.get('intent_decided_by')})"
        record = Opened(q, route, strategy == "chunk_recall", contains_ideal(run.answer, q.ideal),
                        citations_only(run.answer), bool(lib.sources(q) & run.source_docs),
                        run.calls, run.prompt_tokens, run.seconds,
                        "interrupted" if run.interrupted else run.error or "")
        records.append(record)
        progress(q, f"{route}; ideal {q.ideal!r} in the answer: {record.holds_ideal}; "
                    f"{run.calls} calls, {run.prompt_tokens} prompt tokens, {run.seconds:.0f} s"
                    + (f"; {record.ended}" if record.ended else "")
                    + (f"; answer {run.answer[:200]!r}" if args.verbose else ""))
    await close_all()
    env.close()
    print_halves(f"LitQA2 open: the stems without options ({env.label})", args.half, records,
                 summarise)
