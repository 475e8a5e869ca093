"""What managing a large embedded library costs: add, replace, remove and list at ~100k chunks.

    .venv/bin/python bench/library.py [--docs 2000] [--sections 50]

Builds a knowledge base of `--docs` synthetic papers of `--sections` chunks
each (bench/recall_corpus.py; seeded vectors, not a model: embedding time is
the embedder's, measured elsewhere), loads its search arrays, then times
each library operation followed by the next search, which brings the
arrays up to date. Prints a table (rows: bench/README.md "library.py").
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

# The checkout: `bench.*` and tests/support import from it, wherever this runs from.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.common import Row, default_params
from bench.recall_corpus import SeededEmbedder, synthetic_documents


async def _timed(step: Callable[[], Awaitable[Any]]) -> tuple[float, Any]:
    started = time.perf_counter()
    value = await step()
    return time.perf_counter() - started, value


async def library(args: argparse.Namespace) -> list[Row]:
    from scholarflow.ingest.documents import document_from_text
    from scholarflow.ingest.pipeline import add_document
    from scholarflow.retrieval.kb_registry import (
        close_all,
        describe_knowledge_bases,
        open_knowledge_base,
    )

    corpus = synthetic_documents(args.docs + 2, args.sections)
    home = Path(tempfile.mkdtemp(prefix="sf-library-"))
    rows: list[Row] = []
    try:
        os.environ["SCHOLARFLOW_HOME"] = str(home)
        for name in ("SCHOLARFLOW_EMBEDDING_MODEL", "SCHOLARFLOW_ES_URL"):
            os.environ.pop(name, None)
        kb = await open_knowledge_base("lib", create=True, embedder=SeededEmbedder())
        started = time.perf_counter()
        chunks = 0
        per_add: list[float] = []
        for d, (title, text) in enumerate(corpus[: args.docs]):
            t0 = time.perf_counter()
            result = await add_document(kb, document_from_text(text, doc_id=f"doc{d:05d}",
                                                               title=title))
            per_add.append(time.perf_counter() - t0)
            chunks += result.chunks
        tenth = max(1, len(per_add) // 10)
        rows.append(Row("build", f"{args.docs} documents, {chunks:,} chunks in "
                        f"{time.perf_counter() - started:.0f} s; one add (chunking, terms, "
                        f"SQLite) first 10%: {1e3 * sorted(per_add[:tenth])[tenth // 2]:.0f} ms"
                        f" median, last 10%: {1e3 * sorted(per_add[-tenth:])[tenth // 2]:.0f} "
                        "ms median"))
        params = default_params()
        build, _ = await _timed(lambda: kb.search("warm up", doc_ids=None, params=params))
        rows.append(Row("first search (arrays built from SQLite)", f"{build:.1f} s"))

        async def then_search(label: str, step: Callable[[], Awaitable[Any]]) -> None:
            spent, _ = await _timed(step)
            searched, _ = await _timed(lambda: kb.search("attention memory", doc_ids=None,
                                                         params=params))
            rows.append(Row(label, f"{1e3 * spent:.0f} ms + next search {1e3 * searched:.0f} ms"))

        title, text = corpus[args.docs]
        new = document_from_text(text, doc_id="new", title=title)
        await then_search("add one document, then search (arrays appended)",
                          lambda: add_document(kb, new))
        await then_search("remove one document, then search (its rows marked dead)",
                          lambda: kb.remove("doc00000"))
        title, text = corpus[args.docs + 1]
        from scholarflow.ingest.chunking import chunk_document
        from scholarflow.ingest.extract import extracted_from_text
        from scholarflow.ingest.pipeline import Prepared

        extracted = extracted_from_text(document_from_text(text, doc_id="new-v2", title=title))
        prepared = Prepared(extracted, chunk_document(extracted))
        await then_search("add a new version replacing one, then search (appended + marked dead)",
                          lambda: kb.add(prepared.stored(), text, prepared.chunked.chunks,
                                         replaces=["new"]))
        listed, docs = await _timed(kb.documents)
        rows.append(Row("documents(): the whole listing (`kb docs`, and once per ingest to "
                        "find earlier versions)", f"{1e3 * listed:.0f} ms for {len(docs)}"))
        described, _ = await _timed(describe_knowledge_bases)
        rows.append(Row("describe_knowledge_bases() (`kb list`)", f"{1e3 * described:.0f} ms"))
        await close_all()
        size = sum(p.stat().st_size for p in (home / "kb" / "lib").iterdir())
        rows.append(Row("on disk", f"{size / 2**20:.0f} MB"))
    finally:
        shutil.rmtree(home, ignore_errors=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=2000)
    parser.add_argument("--sections", type=int, default=50)
    rows = asyncio.run(library(parser.parse_args()))
    width = max(len(r.metric) for r in rows)
    for row in rows:
        print(f"{row.metric:<{width}}  {row.value}")


if __name__ == "__main__":
    main()
