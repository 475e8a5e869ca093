"""Latency-aware LLM limit benchmark: summaries against a server that serves K at once.

    .venv/bin/python bench/queueing.py [--k 1 2] [--docs 4 50] [--cap 10] [--timeout 1]

The scripted server (a subprocess, as in bench/fanout.py) serves at most K calls
at once and queues the rest in arrival order, like llama.cpp `--parallel K` or
Ollama `OLLAMA_NUM_PARALLEL=K`; a queued call whose client hung up (a timeout)
leaves the queue. A served call takes `--latency` s plus its prompt at
`--prefill-tps` tokens/s before the first token, then streams a reply of
`--summary-words` words at `--tps` tokens/s. The real graph summarises N
documents ("Summarize these papers" -> multi_doc_summary -> one answer) with
`max_concurrent_llm_calls=C` and `llm_timeout_seconds=--timeout`, whatever
timeout llm/calls.py applies with it, once with the limit fixed at C
(`adaptive_llm_limit=False`, today's behaviour) and once adaptive (429s and
latency). New document texts every run: no summary comes from the cache.

Per run: summaries done / lost, wall, the server's peak of calls received
(queued included) and of calls queued, the limiter's capacity over time
(median / final), the time-weighted mean of calls in flight, and retried calls
(chat calls beyond one per summary and the answer: here every retry follows a
timeout). Exit code 0 even when a target is missed: it is a benchmark.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import platform
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# The checkout: `bench.*` and tests/support import from it, wherever this runs from.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.fanout import (
    SUMMARY_QUERY,
    SUMMARY_RULE,
    summary_run,
)
from bench.fanout_data import make_documents, words_reply
from bench.fanout_server import ServerProcess, scripted_environment

MODES = ("fixed", "adaptive")


@dataclass
class Run:
    k: int
    docs: int
    mode: str
    error: str
    done: int
    lost: int
    answered: bool
    wall: float
    calls: int
    server_peak: int
    server_queued: int
    queue_wait: float
    median_limit: float
    final_limit: int
    mean_in_flight: float
    late_in_flight: float  # over the second half of the run: after the first wave
    decreases: int
    probes: int

    @property
    def retries(self) -> int:
        return self.calls - (self.docs + 1)

    @property
    def finished(self) -> bool:
        return self.done == self.docs and self.answered


async def sample(lim: Any, limits: list[int], in_flight: list[int], stop: asyncio.Event) -> None:
    """Every 20 ms: the limit and the calls in flight (uniform samples: time-weighted)."""
    while not stop.is_set():
        limits.append(lim.capacity)
        in_flight.append(lim.in_flight)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 0.02)


async def one_run(graph: Any, server: ServerProcess, args: argparse.Namespace, k: int,
                  n: int, mode: str, seed: int) -> Run:
    from scholarflow import Context
    from scholarflow.llm import calls as llm

    ctx = Context(max_concurrent_llm_calls=args.cap, adaptive_llm_limit=mode == "adaptive",
                  llm_timeout_seconds=args.timeout,
                  approval_documents=None, approval_tokens=None)  # approved in advance
    docs = make_documents(n, seed=seed)
    await server.reset()
    await server.configure(
        rules=[{"match": SUMMARY_RULE, "reply": words_reply(args.summary_words, seed),
                "role": "user"}],
        latency=args.latency, serve_at_most=k, tokens_per_second=args.tps,
        prefill_tokens_per_second=args.prefill_tps)
    lim = llm.limiter(ctx)
    lim.reset()
    limits: list[int] = []
    in_flight: list[int] = []
    stop = asyncio.Event()
    sampler = asyncio.create_task(sample(lim, limits, in_flight, stop))
    done = lost = 0  # a run that fails is a result too: counted as nothing done
    final: dict[str, Any] = {}
    t0 = time.perf_counter()
    try:
        done, lost, final = await summary_run(graph, docs, ctx)
    except Exception as exc:
        final = {"error": str(exc)}
    wall = time.perf_counter() - t0
    stop.set()
    await sampler
    stats = await server.stats()
    return Run(
        k=k, docs=n, mode=mode, error=str(final.get("error") or "")[:120], done=done, lost=lost,
        answered=bool(final.get("answer")) and not final.get("error"), wall=wall,
        calls=stats["chat_calls"], server_peak=stats["max_in_flight"],
        server_queued=stats["max_queued"], queue_wait=stats["queue_wait_seconds"],
        median_limit=statistics.median(limits) if limits else float(lim.capacity),
        final_limit=lim.capacity,
        mean_in_flight=statistics.mean(in_flight) if in_flight else 0.0,
        late_in_flight=statistics.mean(in_flight[len(in_flight) // 2:]) if in_flight else 0.0,
        decreases=lim.latency.decreases, probes=lim.latency.probes,
    )


async def bench(args: argparse.Namespace, server: ServerProcess) -> list[Run]:
    from scholarflow import Context, build_graph
    from scholarflow.storage.cache_registry import close_all

    graph = build_graph()
    await server.reset()
    await server.configure(latency=0)  # warm-up: imports, tiktoken, the HTTP pool, SQLite
    warm = {f"warm-{i}": v for i, v in enumerate(make_documents(args.cap, seed=99).values())}
    await graph.ainvoke({"query": SUMMARY_QUERY, "document_contents": warm},
                        context=Context(max_concurrent_llm_calls=args.cap,
                                        approval_documents=None, approval_tokens=None))
    runs: list[Run] = []
    seed = 2000
    for k in args.k:
        for n in args.docs:
            # alternate which mode goes first, so drift in machine load hits both alike
            modes = MODES if len(runs) % 4 == 0 else MODES[::-1]
            for mode in modes:
                seed += 1
                run = await one_run(graph, server, args, k, n, mode, seed)
                runs.append(run)
                print(f"  K={k} N={n} {mode:8s}: {run.done}/{n} done, {run.calls} calls, "
                      f"{run.wall:.1f} s, {run.error or 'answered'}", file=sys.stderr, flush=True)
    await close_all()
    return runs


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}" if b else ("1.00" if a == b else "inf")


def print_report(runs: list[Run], args: argparse.Namespace, total: float) -> None:
    print()
    print(f"## scholarflow latency-aware limit benchmark (C={args.cap}, timeout "
          f"{args.timeout:g} s, served call: {args.latency:g} s + prompt at "
          f"{args.prefill_tps:g} tok/s, then {args.summary_words} words at {args.tps:g} tok/s)")
    print()
    print("| K | docs | limit | finished? | done / lost | wall s | summaries/s | server peak "
          "received / queued | server queue wait s | capacity median / final | mean in flight "
          "(2nd half) | retried calls | latency decreases / probes |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in runs:
        limit = "adaptive" if r.mode == "adaptive" else f"fixed {args.cap}"
        print(f"| {r.k} | {r.docs} | {limit} | {'yes' if r.finished else '**no**'} | "
              f"{r.done} / {r.lost} | {r.wall:.1f} | {r.done / r.wall:.2f} | {r.server_peak} / "
              f"{r.server_queued} | {r.queue_wait:.1f} | {r.median_limit:g} / {r.final_limit} | "
              f"{r.mean_in_flight:.2f} ({r.late_in_flight:.2f}) | {r.retries} | "
              f"{r.decreases} / {r.probes} |")
    print()
    print("| K | docs | adaptive / fixed: wall | summaries/s | retried calls | mean in flight "
          "(2nd half) | server queue wait | adaptive finished, 2nd half in flight <= 1.5 K? |")
    print("|---|---|---|---|---|---|---|---|")
    missed = []
    for k in args.k:
        for n in args.docs:
            pair = {r.mode: r for r in runs if r.k == k and r.docs == n}
            if len(pair) < 2:
                continue
            a, f = pair["adaptive"], pair["fixed"]
            # 4 documents go out at once before any latency is known: no target on
            # their calls in flight, only that they finish.
            ok = a.finished and (n <= args.cap or a.late_in_flight <= 1.5 * k)
            if not ok:
                missed.append(f"K={k} N={n}")
            print(f"| {k} | {n} | {ratio(a.wall, f.wall)} | "
                  f"{ratio(a.done / a.wall, f.done / f.wall)} | {a.retries} vs {f.retries} | "
                  f"{ratio(a.mean_in_flight, f.mean_in_flight)} "
                  f"({ratio(a.late_in_flight, f.late_in_flight)}) | "
                  f"{ratio(a.queue_wait, f.queue_wait)} | {'ok' if ok else '**MISSED**'} |")
    print()
    load = "/".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"machine: {platform.machine()} {platform.system()}, {os.cpu_count()} cores, load "
          f"average {load} at the end, Python {platform.python_version()}; server "
          f"subprocess; total bench time {total:.1f} s")
    print(f"MISSED: {'; '.join(missed)}" if missed else "all targets met")


async def amain(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    # Each lost summary logs a warning; the table counts them, so keep stderr readable.
    logging.getLogger("scholarflow").setLevel(logging.ERROR)
    server = ServerProcess(0.0)
    async with scripted_environment(server):
        runs = await bench(args, server)
    print_report(runs, args, time.perf_counter() - started)
    return 0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--k", type=int, nargs="+", default=[1, 2],
                   help="calls the server serves at once (K)")
    p.add_argument("--docs", type=int, nargs="+", default=[4, 50], help="documents (N)")
    p.add_argument("--cap", type=int, default=10, help="max_concurrent_llm_calls (C)")
    p.add_argument("--timeout", type=float, default=1.0, help="llm_timeout_seconds")
    p.add_argument("--latency", type=float, default=0.2,
                   help="fixed seconds of a served call before its prompt is read")
    p.add_argument("--prefill-tps", type=float, default=20000.0,
                   help="prompt tokens read per second")
    p.add_argument("--tps", type=float, default=40.0, help="reply tokens per second")
    p.add_argument("--summary-words", type=int, default=45, help="words of each summary")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    return asyncio.run(amain(parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
