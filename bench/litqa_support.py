"""`bench/litqa.py support`: the evidence floor for "insufficient", measured.

For each dev question, `nodes/evidence.py support` (the largest share of the
question's content words one passage holds) over the 15 best passages of a
search of its stem: once over the whole library, once with its source paper
left out (a question the library cannot answer). SUPPORT_FLOOR must sit under
the first and over as much of the second as it can.
"""

from __future__ import annotations

from typing import Any

from litqa_data import load_questions
from recall_common import Row, print_table


async def support_floor(args: Any, env: Any, ids: dict[str, str]) -> None:
    from scholarflow.nodes.evidence import SUPPORT_FLOOR, support
    from scholarflow.retrieval.kb import RecallParams
    from scholarflow.retrieval.kb_registry import close_all, open_knowledge_base

    kb = await open_knowledge_base(args.kb)
    every = sorted(set(ids.values()))
    params = RecallParams(top_n=15)
    answerable, unanswerable = [], []
    for q in load_questions():
        sources = {ids[f] for f in q.files if f in ids}
        for pool, doc_ids in ((answerable, None), (unanswerable, [d for d in every
                                                                  if d not in sources])):
            hits = await kb.search(q.question, doc_ids=doc_ids, params=params)
            pool.append(support(q.question, [{"text": h.text} for h in hits]))  # type: ignore[misc]
    await close_all()
    env.close()
    n = len(answerable)
    print_table(f"LitQA2: support of the best passage ({env.embeddings}), floor {SUPPORT_FLOOR}", [
        Row("answerable: min / p50", f"{min(answerable):.2f} / {sorted(answerable)[n // 2]:.2f}"),
        Row("answerable under the floor (answered 'insufficient')",
            f"{sum(s < SUPPORT_FLOOR for s in answerable)}/{n}", "0"),
        Row("source paper left out: p50 / max",
            f"{sorted(unanswerable)[n // 2]:.2f} / {max(unanswerable):.2f}"),
        Row("source paper left out, under the floor",
            f"{sum(s < SUPPORT_FLOOR for s in unanswerable)}/{n}"),
    ])
