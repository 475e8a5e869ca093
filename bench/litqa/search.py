"""`search`: one search per question's stem, no LLM, as `scholarflow search` does it.

The source paper's rank among the papers of the top 10 hits, and the key passage's
rank among the hits (`questions.holds_key`), at the Context's search defaults.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass

from bench.litqa.env import Env, library
from bench.litqa.questions import Question, asked, holds_key
from bench.litqa.report import Rows, p50_max, print_halves, progress, share


@dataclass
class Searched:
    q: Question
    paper_ranks: list[int]  # 1-based ranks of the hits from a source paper
    key_rank: int | None
    seconds: float


def summarise(rs: list[Searched]) -> Rows:
    n = len(rs)
    keyed = [r for r in rs if r.q.key_passage]
    return [
        ("questions (with a key passage)", f"{n} ({len(keyed)})"),
        ("source paper first hit", share(sum(r.paper_ranks[:1] == [1] for r in rs), n)),
        ("source paper in top 5 / 10",
         f"{share(sum(any(k <= 5 for k in r.paper_ranks) for r in rs), n)} / "
         f"{share(sum(bool(r.paper_ranks) for r in rs), n)}"),
        ("key passage in top 5",
         share(sum(r.key_rank is not None and r.key_rank <= 5 for r in keyed), len(keyed))),
        ("key passage in top 10", share(sum(r.key_rank is not None for r in keyed), len(keyed))),
        ("search seconds p50 / max", p50_max([r.seconds for r in rs], ".2f")),
    ]


async def search(args: argparse.Namespace) -> None:
    env = Env(args.home)
    from scholarflow.context import Context
    from scholarflow.retrieval.kb import RecallParams
    from scholarflow.retrieval.kb_registry import close_all, open_knowledge_base

    questions = asked(args)
    lib = await library(args.kb)
    kb = await open_knowledge_base(args.kb)
    ctx = Context()
    params = RecallParams(top_n=10, similarity_threshold=ctx.similarity_threshold,
                          vector_similarity_weight=ctx.vector_similarity_weight,
                          use_rerank=ctx.use_rerank)
    records = []
    for q in questions:
        started = time.perf_counter()
        hits = await kb.search(q.question, doc_ids=None, params=params)
        seconds = time.perf_counter() - started
        sources = lib.sources(q)
        record = Searched(q, [i for i, h in enumerate(hits, 1) if h.doc_id in sources],
                          holds_key(q.key_passage, [h.text for h in hits]), seconds)
        records.append(record)
        if args.verbose:
            progress(q, f"paper ranks {record.paper_ranks}, key rank {record.key_rank}")
    await close_all()
    env.close()
    print_halves(f"LitQA2 search: one search per stem, no LLM ({env.label.split(';')[0]}; "
                 f"vector_similarity_weight {params.vector_similarity_weight})",
                 args.half, records, summarise)
