"""`support`: where the evidence floor for "insufficient" sits, no LLM.

For each question, `nodes.evidence.support` (the largest share of the question's content
words one passage holds) over the 15 best passages of a search of its stem: once over
the whole library, once with its source papers left out (a question the library cannot
answer). SUPPORT_FLOOR should sit under the first and over as much of the second as it
can; choose it on the tuning half.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass

from bench.litqa.env import Env, library
from bench.litqa.questions import Question, asked
from bench.litqa.report import Rows, print_halves, progress, share


@dataclass
class Supported:
    q: Question
    answerable: float  # support of the best passage over the whole library
    unanswerable: float  # the same with the source papers left out


def summariser(floor: float) -> Callable[[list[Supported]], Rows]:
    def summarise(rs: list[Supported]) -> Rows:
        n = len(rs)
        a = sorted(r.answerable for r in rs)
        u = sorted(r.unanswerable for r in rs)
        return [
            ("answerable: min / p50", f"{a[0]:.2f} / {a[n // 2]:.2f}" if n else "-"),
            ("answerable under the floor (would say 'insufficient')",
             share(sum(s < floor for s in a), n)),
            ("source papers left out: p50 / max", f"{u[n // 2]:.2f} / {u[-1]:.2f}" if n else "-"),
            ("source papers left out, under the floor", share(sum(s < floor for s in u), n)),
        ]
    return summarise


async def support_floor(args: argparse.Namespace) -> None:
    env = Env(args.home)
    from scholarflow.nodes.evidence import SUPPORT_FLOOR, support
    from scholarflow.retrieval.kb import RecallParams
    from scholarflow.retrieval.kb_registry import close_all, open_knowledge_base
    from scholarflow.state import RecalledChunkState

    questions = asked(args)
    lib = await library(args.kb)
    kb = await open_knowledge_base(args.kb)
    every = sorted(set(lib.ids.values()))
    params = RecallParams(top_n=15)
    records = []
    for q in questions:
        sources = lib.sources(q)
        scores = []
        for doc_ids in (None, [d for d in every if d not in sources]):
            hits = await kb.search(q.question, doc_ids=doc_ids, params=params)
            passages = [RecalledChunkState(step=1, doc_id=h.doc_id, chunk_id=h.chunk_id,
                                           score=h.score, text=h.text, title=h.title,
                                           location=h.location) for h in hits]
            scores.append(support(q.question, passages))
        records.append(Supported(q, *scores))
        if args.verbose:
            progress(q, f"support {scores[0]:.2f}, without its papers {scores[1]:.2f}")
    await close_all()
    env.close()
    print_halves(f"LitQA2 support of the best passage, floor {SUPPORT_FLOOR} "
                 f"({env.label.split(';')[0]})", args.half, records, summariser(SUPPORT_FLOOR))
