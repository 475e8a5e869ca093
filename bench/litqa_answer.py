"""`bench/litqa.py answer` (part c): the questions asked of the whole graph with a model.

A sibling module of bench/litqa.py (split to keep modules under 400 lines).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from statistics import median

import litqa_readings
from litqa import _ask, _doc_ids, _Env, _passages, _Recorder, _share, _source_ids
from litqa_data import (
    BEFORE,
    INSUFFICIENT,
    PAPERQA2,
    abstention,
    chosen_option,
    holds_key,
    load_questions,
    select,
)
from recall_common import Row, print_table


async def answer(args: argparse.Namespace) -> None:
    from langgraph.checkpoint.memory import InMemorySaver

    from scholarflow import Context, build_graph
    from scholarflow.retrieval.kb_registry import close_all

    env = _Env(args.home)
    if not os.environ.get("OPENAI_BASE_URL"):
        sys.exit("answer needs a model: set OPENAI_BASE_URL (and OPENAI_API_KEY, "
                 "SCHOLARFLOW_MODEL), e.g. from /work/shared/tools/local-llm.sh start")
    questions = select(load_questions(), args.questions, args.limit)
    ids = await _doc_ids(args.kb)
    recorder = _Recorder(stop_at_answer=False)
    recorder.install()
    if args.readings:
        litqa_readings.install(args.readings, questions)
    graph = build_graph(checkpointer=InMemorySaver())
    # A local model on a busy 2-core machine reads ~50-100 prompt tokens a second: the
    # default first-token wait (120 s per 4,096 prompt tokens) times out under load.
    context = Context(show_thinking=False, max_context_tokens=args.window,
                      llm_timeout_seconds=args.llm_timeout)
    correct = insufficient = wrong = unparsed = no_sources = 0
    paper_sources = paper_correct = key_prompt = key_first = 0
    calls, prompt_tok, completion_tok, seconds, llm_seconds = [], [], [], [], []
    by_node: dict[str, list[float]] = {}
    why_insufficient: dict[str, int] = {}
    for q in questions:
        recorder.prompts.clear()
        state, took = await _ask(graph, q, args.kb, context)
        text = state.get("answer") or ""
        picked = chosen_option(text, q)
        usage = state.get("usage") or []
        calls.append(len(usage))
        prompt_tok.append(sum(u["input_tokens"] for u in usage))
        completion_tok.append(sum(u["output_tokens"] for u in usage))
        llm_seconds.append(sum(u["seconds"] for u in usage))
        for u in usage:
            by_node.setdefault(u["node"], []).append(u["seconds"])
        seconds.append(took)
        sources = {s["doc_id"] for s in state.get("sources") or []}
        right_paper = bool(_source_ids(q, ids) & sources)
        paper_sources += right_paper
        no_sources += not sources and picked != INSUFFICIENT
        key_prompt += holds_key(q.key_passage, _passages(recorder.answer_prompt())) is not None
        key_first += holds_key(q.key_passage, _passages(recorder.first_prompt())) is not None
        if picked == q.ideal:
            correct += 1
            paper_correct += right_paper
            verdict = "correct"
        elif picked == INSUFFICIENT:
            insufficient += 1
            why = abstention(text) or "other"
            why_insufficient[why] = why_insufficient.get(why, 0) + 1
            verdict = "insufficient"
        else:
            wrong += 1
            unparsed += picked is None
            verdict = "wrong" if picked else "wrong (no option named)"
        if args.dump:  # for reading what the model was shown and what it wrote
            record = json.dumps({"n": q.n, "verdict": verdict, "ideal": q.ideal,
                                 "answer": text, "prompt": recorder.answer_prompt()},
                                ensure_ascii=False)
            with Path(args.dump).open("a", encoding="utf-8") as out:  # noqa: ASYNC230
                out.write(record + "\n")
        print(f"q{q.n}: {verdict}; picked {picked!r}, ideal {q.ideal!r}; sources "
              f"{len(sources)} (right paper {right_paper}); {len(usage)} calls, "
              f"{prompt_tok[-1]} prompt tok; {took:.0f} s; answer {text[:200]!r}",
              file=sys.stderr, flush=True)
    await close_all()
    env.close()
    n = len(questions)
    answered = correct + wrong
    precision = f"{correct / answered:.2f}" if answered else "-"
    model = os.environ.get("SCHOLARFLOW_MODEL", "?")
    print_table(f"LitQA2 part c: answers, model {model}, {n} dev questions ({env.embeddings})", [
        Row("correct", _share(correct, n), f">= 0.7; before {BEFORE['correct']}; "
            f"PaperQA2 {PAPERQA2['correct']}", correct >= 0.7 * n if n else None),
        Row("insufficient", _share(insufficient, n), f"before {BEFORE['insufficient']}"),
        *[Row(f"  insufficient: {why}", str(count)) for why, count in why_insufficient.items()],
        Row("wrong (no option named)", f"{wrong} ({unparsed})"),
        Row("precision (correct / not insufficient)", precision,
            f">= 0.85; before {BEFORE['precision']}; PaperQA2 {PAPERQA2['precision']}",
            answered > 0 and correct / answered >= 0.85),
        Row("answers from passages without sources", str(no_sources), "0", no_sources == 0),
        Row("right paper among the sources (of correct ones)",
            f"{paper_sources}/{n} ({paper_correct}/{correct})",
            f">= 0.9 of correct; before {BEFORE['paper_in_sources']}",
            paper_correct >= 0.9 * correct if correct else None),
        Row("key passage in the answer prompt (of those with one)",
            _share(key_prompt, sum(q.key_passage is not None for q in questions)),
            "the most passages the model read"),
        Row("  in the sentences nearest the stem, read first",
            _share(key_first, sum(q.key_passage is not None for q in questions))),
        Row("LLM calls a question p50 / max", f"{median(calls):.0f} / {max(calls)}",
            f"<= 4 (PaperQA2 {PAPERQA2['llm_calls']})", max(calls) <= 4),
        Row("prompt tokens a question p50 / max", f"{median(prompt_tok):,.0f} / "
            f"{max(prompt_tok):,}", f"<= 6,675 (PaperQA2 {PAPERQA2['prompt_tokens']})",
            median(prompt_tok) <= 6675),
        Row("completion tokens a question p50", f"{median(completion_tok):,.0f}"),
        Row("seconds a question p50 / max (of it in LLM calls)",
            f"{median(seconds):.0f} / {max(seconds):.0f} ({median(llm_seconds):.0f})",
            f"before {BEFORE['seconds']}; PaperQA2 {PAPERQA2['seconds']}"),
        *[Row(f"  LLM seconds a call in {node}: p50 / max (calls)",
              f"{median(v):.0f} / {max(v):.0f} ({len(v)})") for node, v in by_node.items()],
    ] if n else [])
    if args.readings:
        litqa_readings.report(args.readings, questions)
