"""`ingest`: the corpus's PDFs (all 85) into one knowledge base under --home.

The other papers are every question's distractors. `--scripted-embeddings` embeds
with the scripted server's hashing vectors instead of the local e5 model: minutes
instead of most of an hour, for trying ranking changes (the home remembers it).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from bench.common import Row, cpu_seconds, print_table
from bench.litqa.env import Env
from bench.litqa.questions import pdf_files


async def ingest(args: argparse.Namespace) -> None:
    import time

    env = Env(args.home, scripted_embeddings=args.scripted_embeddings)
    from scholarflow.ingest.pipeline import ingest_paths
    from scholarflow.retrieval.kb_registry import close_all

    files = pdf_files()[:args.limit] if args.limit else pdf_files()
    if not files:
        raise SystemExit("no LitQA2 PDFs: set LITQA_CORPUS to the corpus folder")
    wall, cpu = time.perf_counter(), cpu_seconds()
    errors: list[str] = []

    def seen(result: Any) -> None:
        if not result.ok:
            errors.append(result.error or result.source)
        print(f"  {result.status}: {Path(result.source).name} ({result.chunks} chunks)",
              file=sys.stderr, flush=True)

    results = await ingest_paths([str(f) for f in files], args.kb, on_result=seen)
    await close_all()
    wall, cpu = time.perf_counter() - wall, cpu_seconds() - cpu
    env.close()
    added = [r for r in results if r.status == "added"]
    chunks = sum(r.chunks for r in added)
    print_table(f"LitQA2 ingest into {args.kb!r} under {env.home} ({env.label.split(';')[0]})", [
        Row("files / added / errors", f"{len(files)} / {len(added)} / {len(errors)}"),
        Row("chunks (added now)", str(chunks)),
        Row("seconds", f"{wall:.0f}"),
        Row("CPU-s (this process)", f"{cpu:.0f}"),
        Row("CPU-s a chunk", f"{cpu / chunks:.3f}" if chunks else "-", "<= 0.25",
            cpu / chunks <= 0.25 if chunks else None),
    ])
    for error in errors:
        print(f"error: {error}")
