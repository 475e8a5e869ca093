"""Every intent x strategy path, in Chinese and English, through a real model.

    ../shared/tools/local-llm.sh start          # prints the exports below
    export OPENAI_BASE_URL=http://127.0.0.1:8731/v1 OPENAI_API_KEY=sk-local \\
           SCHOLARFLOW_MODEL=qwen2.5-coder-1.5b
    .venv/bin/python bench/real_model.py                    # all 20 runs (~30-60 min)
    .venv/bin/python bench/real_model.py --lang en --only qa-recall,chat

A benchmark, not a test: it needs a real OpenAI-compatible server (the local
llama.cpp one is small and slow on purpose). Each run is the real graph with the
examples in examples/papers, given directly, and a temporary home. It prints one
Markdown row per node that called the model: did its output parse (or which
fallback ran), prompt and completion tokens, wall seconds; and per run: the
strategy taken, citations in the answer and whether each names a source, the
answer's language against the question's, and the run's wall time.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PAPERS = Path(__file__).resolve().parent.parent / "examples" / "papers"
EN, ZH = "en_sparse_attention.md", "zh_hybrid_retrieval.md"
_CITATION = re.compile(r"\[(\d{1,3})\]")


@dataclass(frozen=True)
class Path_:
    name: str
    mode: str | None  # the intent, given (None: recognised)
    docs: tuple[str, ...]
    questions: dict[str, str]  # language -> question
    direct_threshold: float = 0.7  # 0: even a small document goes to chunk_recall


PATHS = [
    Path_("chat", None, (), {"en": "What is retrieval-augmented generation, in two sentences?",
                             "zh": "用两句话解释什么是检索增强生成？"}),
    Path_("intent-llm", None, (EN,), {"en": "Could you go over the attention part of this?",
                                      "zh": "能讲讲这篇里注意力那部分吗？"}),
    Path_("qa-full", "LITERATURE_QA", (EN,), {"en": "What learning rate did they use?",
                                              "zh": "他们用的学习率是多少？"}),
    Path_("qa-recall", "LITERATURE_QA", (EN,), {"en": "What learning rate did they use?",
                                                "zh": "他们用的学习率是多少？"}, 0.0),
    Path_("qa-recall-2", "LITERATURE_QA", (EN, ZH),
          {"en": "What does each paper evaluate on?", "zh": "两篇论文分别在什么数据上评估？"}),
    Path_("summary-full", "LITERATURE_SUMMARY", (ZH,),
          {"en": "Summarize this paper.", "zh": "总结这篇论文。"}),
    Path_("summary-multi", "LITERATURE_SUMMARY", (EN, ZH),
          {"en": "Summarize these papers.", "zh": "总结这两篇论文。"}),
    Path_("review-multi", "REVIEW_GENERATION", (EN, ZH),
          {"en": "Write a short literature review of these papers.",
           "zh": "为这两篇论文写一篇简短的文献综述。"}),
    Path_("critique-full", "PAPER_REVIEW", (EN,),
          {"en": "Review this paper critically.", "zh": "批判性地评审这篇论文。"}),
    Path_("critique-recall", "PAPER_REVIEW", (ZH,),
          {"en": "What are the weaknesses of this paper?", "zh": "这篇论文有哪些不足？"}, 0.0),
]


@dataclass
class Run:
    path: str
    lang: str
    strategy: str = ""
    nodes: list[dict[str, Any]] = field(default_factory=list)
    citations: str = ""
    language_ok: bool = False
    wall: float = 0.0
    error: str = ""


def _parse_column(event: dict[str, Any] | None, node: str, state: dict[str, Any]) -> str:
    """Did the node's model output parse, or which fallback ran."""
    if node == "intent_recognition":
        return f"decided by {state.get('intent_decided_by')}"
    if node == "sub_question_generation" and event is not None:
        return f"sub-questions: {event.get('planned_by')} ({event.get('count')})"
    if node == "summarize_document":
        return "summary"
    if node == "answer_generation" and event is not None:
        return f"answer, {event.get('sources', 0)} sources"
    return "-"


async def _one(path: Path_, lang: str, ctx_args: dict[str, Any]) -> Run:
    from scholarflow import Context, build_graph
    from scholarflow.language import is_chinese

    run = Run(path.name, lang)
    question = path.questions[lang]
    inputs: dict[str, Any] = {"query": question, "document_contents": {
        name: (PAPERS / name).read_text(encoding="utf-8") for name in path.docs}}
    if path.mode:
        inputs["mode_type"] = path.mode
    ctx = Context(direct_content_threshold=path.direct_threshold, **ctx_args)
    events: dict[str, dict[str, Any]] = {}
    state: dict[str, Any] = {}
    graph: Any = build_graph()
    started = time.perf_counter()
    try:
        async for mode, chunk in graph.astream(
                inputs, context=ctx, stream_mode=["custom", "values"]):
            if mode == "custom" and chunk.get("type") == "node_complete":
                events[chunk["node"]] = chunk
            elif mode == "values":
                state = chunk
    except Exception as exc:  # a benchmark row, not a crash: say what failed
        run.error = str(exc).splitlines()[0][:120]
    run.wall = time.perf_counter() - started
    run.strategy = str(state.get("strategy") or ("chat" if not path.docs else "?"))
    by_node: dict[str, dict[str, Any]] = {}
    for usage in state.get("usage") or []:
        row = by_node.setdefault(usage["node"], {"calls": 0, "in": 0, "out": 0, "s": 0.0})
        row["calls"] += 1
        row["in"] += usage["input_tokens"]
        row["out"] += usage["output_tokens"]
        row["s"] += usage["seconds"]
    for node, row in by_node.items():
        run.nodes.append({"node": node, "parse": _parse_column(events.get(node), node, state),
                          **row})
    answer = str(state.get("answer") or "")
    sources = state.get("sources") or []
    cited = [int(n) for n in _CITATION.findall(answer)]
    valid = {s["n"] for s in sources}
    if path.docs:
        run.citations = (f"{len(cited)} cited, {sum(n in valid for n in cited)} valid, "
                         f"{len(sources)} sources")
    run.language_ok = bool(answer) and is_chinese(answer) == is_chinese(question)
    return run


HEADER = ("| path | lang | strategy | node | calls | parse / fallback | prompt tok | "
          "completion tok | node s | citations | answer lang ok | run s |\n"
          "|---|---|---|---|---|---|---|---|---|---|---|---|")


def _rows(runs: list[Run]) -> str:
    lines = []
    for r in runs:
        rows = r.nodes or [{"node": "-", "parse": "-", "calls": 0, "in": 0, "out": 0, "s": 0.0}]
        for i, n in enumerate(rows):
            tail = (f"{r.citations or '-'} | {'yes' if r.language_ok else 'NO'} | {r.wall:.0f}"
                    if i == 0 else " | | ")
            lines.append(f"| {r.path if i == 0 else ''} | {r.lang if i == 0 else ''} | "
                         f"{r.strategy if i == 0 else ''} | {n['node']} | {n['calls']} | "
                         f"{n['parse']} | {n['in']} | {n['out']} | {n['s']:.0f} | {tail} |")
        if r.error:
            lines.append(f"| | | | **error** | | {r.error} | | | | | | |")
    return "\n".join(lines)


async def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lang", choices=["en", "zh", "both"], default="both")
    parser.add_argument("--only", default="", help="comma-separated path names")
    parser.add_argument("--max-context", type=int, default=None,
                        help="the window (default: what the server reports, else 128000)")
    args = parser.parse_args(argv)
    if not os.environ.get("OPENAI_BASE_URL"):
        print("set OPENAI_BASE_URL (and OPENAI_API_KEY, SCHOLARFLOW_MODEL) to a real "
              "server: ../shared/tools/local-llm.sh start", file=sys.stderr)
        return 2
    os.environ["SCHOLARFLOW_HOME"] = tempfile.mkdtemp(prefix="sf-real-")
    wanted = set(filter(None, args.only.split(",")))
    langs = ["en", "zh"] if args.lang == "both" else [args.lang]
    ctx_args: dict[str, Any] = {"show_thinking": True}
    if args.max_context:
        ctx_args["max_context_tokens"] = args.max_context
    print(HEADER, flush=True)  # a row per run as it ends: a slow model takes an hour
    for path in PATHS:
        if wanted and path.name not in wanted:
            continue
        for lang in langs:
            run = await _one(path, lang, ctx_args)
            print(_rows([run]), flush=True)
    print(f"\nmodel {os.environ.get('SCHOLARFLOW_MODEL')} at {os.environ['OPENAI_BASE_URL']}; "
          f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
