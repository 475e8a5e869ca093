"""Adaptive LLM limit benchmark: 200 summaries against a rate-limiting server.

    .venv/bin/python bench/adaptive.py [--docs 200] [--cap 10] [--latency 0.5] [--k 7] [--k-small 3]

Each scenario runs the real graph ("Summarize these papers" over N documents
given directly -> multi_doc_summary, then one answer) against the scripted
server (a subprocess, as in bench/fanout.py), twice: with a fixed cap of C
(`adaptive_llm_limit=False`) and with the adaptive limit (AIMD with verified
decreases, the default).
Both retry 429s with the nodes' real `LLM_RETRY` policy (exponential backoff
with jitter). Fault models (429s are answered at once, as rate limiters do,
unless --fault-latency says otherwise):

* every3rd: every 3rd chat call the server receives gets a 429, whatever the
  client does (the issue's wording). The number of calls needed is fixed by
  the fault model: no client can lower it.
* inflight: a 429 for a call arriving while K calls are already being served
  (a concurrency limit, what vLLM-style servers, gateways and per-key
  concurrency quotas enforce). Calls the client sends above K are wasted.
* inflight-small: the same with a small quota K' (--k-small, 3), which one
  halving from C = 10 does not reach.

Per run: summaries done (and lost after LLM_RETRY gave up), chat calls and
429s seen by the server, wall time, the server's peak in-flight calls, and
the limiter's halvings, restores (tests that found the 429s not caused by
the load), lowest limit and time-averaged limit.

Exit code is 0 even when a target is missed: it is a benchmark, not a test.
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# The checkout: `bench.*` and tests/support import from it, wherever this runs from.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.fanout import SUMMARY_QUERY, summary_run
from bench.fanout_data import make_documents
from bench.fanout_server import ServerProcess, scripted_environment

FAULTS = ("every3rd", "inflight", "inflight-small")


@dataclass
class Run:
    fault: str
    mode: str  # "fixed" or "adaptive"
    done: int
    lost: int
    calls: int
    rate_limited: int
    wall: float
    server_peak: int
    decreases: int
    restores: int
    min_limit: int
    mean_limit: float
    answered: bool


@dataclass
class Scenario:
    fault: str
    runs: list[Run] = field(default_factory=list)

    def of(self, mode: str) -> list[Run]:
        return [r for r in self.runs if r.mode == mode]


def quota(fault: str, args: argparse.Namespace) -> int:
    return int(args.k_small if fault == "inflight-small" else args.k)


def label(fault: str, args: argparse.Namespace) -> str:
    return "every 3rd call" if fault == "every3rd" else f"in flight > {quota(fault, args)}"


def fault_config(fault: str, args: argparse.Namespace) -> dict[str, Any]:
    if fault == "every3rd":
        return {"fail_every_n": 3, "fail_status": 429, "fault_latency": args.fault_latency}
    return {"rate_limit_in_flight": quota(fault, args), "fault_latency": args.fault_latency}


async def sample_limit(lim: Any, samples: list[int], stop: asyncio.Event) -> None:
    while not stop.is_set():
        samples.append(lim.capacity)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 0.02)


async def one_run(graph: Any, server: ServerProcess, args: argparse.Namespace, fault: str,
                  mode: str, seed: int) -> Run:
    from scholarflow import Context
    from scholarflow.llm import calls as llm

    ctx = Context(max_concurrent_llm_calls=args.cap, adaptive_llm_limit=mode == "adaptive",
                  approval_documents=None, approval_tokens=None)  # approved in advance
    docs = make_documents(args.docs, seed=seed)  # new texts each run: no cache hits
    await server.reset()
    await server.configure(latency=args.latency, **fault_config(fault, args))
    lim = llm.limiter(ctx)
    lim.reset()
    samples: list[int] = []
    stop = asyncio.Event()
    sampler = asyncio.create_task(sample_limit(lim, samples, stop))
    t0 = time.perf_counter()
    done, lost, final = await summary_run(graph, docs, ctx)
    wall = time.perf_counter() - t0
    stop.set()
    await sampler
    stats = await server.stats()
    return Run(
        fault=fault, mode=mode, done=done, lost=lost, calls=stats["chat_calls"],
        rate_limited=stats["failed_calls"], wall=wall, server_peak=stats["max_in_flight"],
        decreases=lim.decreases, restores=lim.restores, min_limit=lim.min_capacity,
        mean_limit=statistics.mean(samples) if samples else float(lim.capacity),
        answered=bool(final.get("answer")) and not final.get("error"),
    )


async def bench(args: argparse.Namespace, server: ServerProcess) -> list[Scenario]:
    from scholarflow import Context, build_graph
    from scholarflow.storage.cache_registry import close_all

    graph = build_graph()
    # warm-up: imports, tiktoken, the HTTP pool, SQLite; no faults, other documents
    await server.reset()
    await server.configure(latency=0)
    warm = {f"warm-{k}": v for k, v in make_documents(2 * args.cap, seed=99).items()}
    await graph.ainvoke({"query": SUMMARY_QUERY, "document_contents": warm},
                        context=Context(max_concurrent_llm_calls=args.cap,
                                        approval_documents=None, approval_tokens=None))
    scenarios = []
    seed = 1000
    for fault in args.faults:
        scenario = Scenario(fault)
        for rep in range(args.repeats):
            # alternate which mode goes first, so drift in machine load hits both alike
            modes = ("fixed", "adaptive") if rep % 2 == 0 else ("adaptive", "fixed")
            for mode in modes:
                seed += 1
                run = await one_run(graph, server, args, fault, mode, seed)
                scenario.runs.append(run)
                print(f"  {fault:14s} {mode:8s} rep {rep + 1}: {run.done}/{args.docs} done, "
                      f"{run.calls} calls, {run.rate_limited} x 429, {run.wall:.2f} s",
                      file=sys.stderr, flush=True)
        scenarios.append(scenario)
    await close_all()
    return scenarios


def med(values: list[float]) -> float:
    return statistics.median(values)


def print_report(scenarios: list[Scenario], args: argparse.Namespace, total: float) -> None:
    n, cap = args.docs, args.cap
    print()
    print(f"## scholarflow adaptive limit benchmark (N={n}, C={cap}, L={args.latency} s, "
          f"K={args.k}, K'={args.k_small}, 429 after {args.fault_latency} s, "
          f"{args.repeats} run(s) per mode)")
    print()
    print("| fault | limit | summaries done | lost | chat calls | 429s | wall s | "
          "server peak in flight | halvings / restores | lowest / mean limit |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for sc in scenarios:
        name = label(sc.fault, args)
        for r in sc.runs:
            limit = "adaptive" if r.mode == "adaptive" else f"fixed {cap}"
            print(f"| {name} | {limit} | {r.done}/{n} | {r.lost} | {r.calls} | "
                  f"{r.rate_limited} | {r.wall:.2f} | {r.server_peak} | "
                  f"{r.decreases} / {r.restores} | "
                  f"{r.min_limit} / {r.mean_limit:.1f} |")
    print()
    print("| fault | metric (median over runs) | fixed | adaptive | adaptive / fixed | "
          "target | ok? |")
    print("|---|---|---|---|---|---|---|")
    missed: list[str] = []
    for sc in scenarios:
        fault_label = label(sc.fault, args)
        fixed, adaptive = sc.of("fixed"), sc.of("adaptive")
        metrics: list[tuple[str, str, str]] = [  # (name, Run attribute, target)
            ("summaries done", "done", "all"), ("chat calls", "calls", "fewer"),
            ("429s", "rate_limited", ""), ("wall s", "wall", "less"),
        ]
        for name, attr, target in metrics:
            f_vals = [float(getattr(r, attr)) for r in fixed]
            a_vals = [float(getattr(r, attr)) for r in adaptive]
            f, a = med(f_vals), med(a_vals)
            ratio = f"{a / f:.2f}" if f else ""
            ok: bool | None = None
            if target == "all":
                ok = all(v == n for v in f_vals + a_vals)
            elif target:
                ok = a < f
            mark = "" if ok is None else ("ok" if ok else "**MISSED**")
            if ok is False:
                missed.append(f"{fault_label}: {name}")
            digits = 2 if attr == "wall" else 0
            print(f"| {fault_label} | {name} | {f:.{digits}f} | {a:.{digits}f} | {ratio} "
                  f"| {target} | {mark} |")
    peak = max(r.server_peak for sc in scenarios for r in sc.runs)
    print(f"| all | server peak in flight, any run | | {peak} | | <= {cap} | "
          f"{'ok' if peak <= cap else '**MISSED**'} |")
    if peak > cap:
        missed.append("server peak in flight")
    print()
    if any(sc.fault == "every3rd" for sc in scenarios):
        print("note (every 3rd call): the server fails calls by their count, whatever the "
              "client does, so every client needs the same ~1.5 calls per summary: 'fewer "
              "calls' cannot be met, by any client; see bench/README.md.")
    cores = os.cpu_count()
    load = "/".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"machine: {platform.machine()} {platform.system()}, {cores} cores, load average "
          f"{load} at the end, Python {platform.python_version()}; server subprocess; "
          f"total bench time {total:.1f} s")
    if missed:
        print(f"MISSED: {len(missed)} target(s): " + "; ".join(missed))
    else:
        print("all targets met")


async def amain(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    # Each lost summary logs a warning; the table counts them, so keep stderr readable.
    logging.getLogger("scholarflow").setLevel(logging.ERROR)
    server = ServerProcess(args.latency)
    async with scripted_environment(server):
        scenarios = await bench(args, server)
    print_report(scenarios, args, time.perf_counter() - started)
    return 0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--docs", type=int, default=200, help="documents to summarise (N)")
    p.add_argument("--cap", type=int, default=10, help="max_concurrent_llm_calls (C)")
    p.add_argument("--latency", type=float, default=0.5,
                   help="server latency of a successful call, s (L)")
    p.add_argument("--k", type=int, default=7,
                   help="inflight fault: calls the server serves at once (K)")
    p.add_argument("--k-small", type=int, default=3,
                   help="inflight-small fault: calls the server serves at once (K')")
    p.add_argument("--fault-latency", type=float, default=0.0,
                   help="seconds before a 429 is answered (default 0: at once)")
    p.add_argument("--repeats", type=int, default=1, help="runs per fault model and mode")
    p.add_argument("--faults", nargs="+", choices=FAULTS, default=list(FAULTS))
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    return asyncio.run(amain(parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
