"""`answer`: multiple choice as LitQA2 asks it, through the whole graph with the model.

The stem, then "Options:" and the lettered options (the ideal, the distractors and
"Insufficient information to answer this question", shuffled with a fixed seed per
question id). The pick is parsed from the answer (`questions.chosen_option`). Calls,
tokens and seconds come from the run's output state (`usage`), the sources from
`sources`: what any caller of the graph gets.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from typing import Any

from bench.litqa.env import model_part
from bench.litqa.graph import ask
from bench.litqa.questions import INSUFFICIENT, Question, chosen_option
from bench.litqa.report import Rows, p50_max, print_halves, progress, share

# PaperQA2 for comparison, not rerun here: paper-qa 2026.8.12 with its defaults, on the
# same 85 PDFs and questions and the same local model (Qwen2.5-Coder-1.5B, llama.cpp,
# 16k window), with the fixed tool sequence (the model cannot call tools), sparse
# embeddings and one request at a time; measured on two dev questions in 2026-11 (the
# project's issue 18): 0 of 2 correct, 21 and 30+ minutes a question.
PAPERQA2 = "PaperQA2 on the same model: ~16 calls and ~26,700 prompt tokens a question"


@dataclass
class Answered:
    q: Question
    verdict: str  # correct, insufficient, wrong
    right_paper: bool  # a source paper among the answer's sources
    calls: int
    prompt_tokens: int
    seconds: float
    failed: bool  # the run ended in an error or a timeout


def summarise(rs: list[Answered]) -> Rows:
    n = len(rs)
    correct = [r for r in rs if r.verdict == "correct"]
    wrong = sum(r.verdict.startswith("wrong") for r in rs)
    answered = len(correct) + wrong
    return [
        ("correct", share(len(correct), n)),
        ("insufficient", share(sum(r.verdict == "insufficient" for r in rs), n)),
        ("wrong (of them no option named)",
         f"{wrong} ({sum(r.verdict == 'wrong, no option named' for r in rs)})"),
        ("precision (correct / (correct + wrong))",
         f"{len(correct) / answered:.2f}" if answered else "-"),
        ("right paper among the answer's sources", share(sum(r.right_paper for r in rs), n)),
        ("  of the correct answers", share(sum(r.right_paper for r in correct), len(correct))),
        ("LLM calls a question p50 / max", p50_max([r.calls for r in rs])),
        ("prompt tokens a question p50 / max", p50_max([r.prompt_tokens for r in rs])),
        ("seconds a question p50 / max", p50_max([r.seconds for r in rs])),
        ("runs ended by an error or a timeout", str(sum(r.failed for r in rs))),
    ]


def verdict(picked: str | None, q: Question) -> str:
    if picked == q.ideal:
        return "correct"
    if picked == INSUFFICIENT:
        return "insufficient"
    return "wrong" if picked else "wrong, no option named"


def write_record(path: str, q: Question, record: Answered, values: dict[str, Any],
                 picked: str | None) -> None:
    """One JSON line: what was asked, picked and read, so a run can be studied afterwards."""
    line = {"n": q.n, "id": q.qid, "half": q.half, "question": q.asked(), "ideal": q.ideal,
            "picked": picked, "verdict": record.verdict, "answer": values.get("answer"),
            "readings": values.get("option_readings") or [],
            "evidence": [c["chunk_id"] for c in values.get("evidence") or []],
            "seconds": round(record.seconds, 1), "failed": record.failed}
    with open(path, "a", encoding="utf-8") as out:
        out.write(json.dumps(line, ensure_ascii=False) + "\n")


async def answer(args: argparse.Namespace) -> None:
    from scholarflow.retrieval.kb_registry import close_all

    env, questions, lib, graph, context = await model_part(args, "answer")
    records = []
    for q in questions:
        env.reset(mode="extractive")  # --scripted: answers made of the prompt's sentences
        run = await ask(graph, context, q.asked(), args.kb, args.timeout)
        picked = chosen_option(run.answer, q)
        record = Answered(q, verdict(picked, q), bool(lib.sources(q) & run.source_docs),
                          run.calls, run.prompt_tokens, run.seconds, bool(run.error))
        records.append(record)
        if args.record:
            write_record(args.record, q, record, run.values, picked)
        progress(q, f"{record.verdict}; picked {picked!r}, ideal {q.ideal!r}; "
                    f"{len(run.source_docs)} source papers (right one: {record.right_paper}); "
                    f"{run.calls} calls, {run.prompt_tokens} prompt tokens, {run.seconds:.0f} s"
                    + (f"; {run.error}" if run.error else "")
                    + (f"; answer {run.answer[:200]!r}" if args.verbose else ""))
    await close_all()
    env.close()
    print_halves(f"LitQA2 answer: multiple choice ({env.label})", args.half, records,
                 summarise, note=PAPERQA2 + " (bench/README.md says where from).")
