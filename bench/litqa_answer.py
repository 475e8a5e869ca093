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
from typing import Any

from litqa import _ask, _doc_ids, _Env, _passages, _Recorder, _share, _source_ids
from litqa_data import (
    BEFORE,
    INSUFFICIENT,
    PAPERQA2,
    at_floor,
    chosen_option,
    holds_key,
    load_questions,
    read_choice,
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
    graph = build_graph(checkpointer=InMemorySaver())
    # A local model on a busy 2-core machine reads ~50-100 prompt tokens a second: the
    # default first-token wait (120 s per 4,096 prompt tokens) times out under load.
    context = Context(show_thinking=False, max_context_tokens=args.window,
                      llm_timeout_seconds=args.llm_timeout)
    correct = insufficient = wrong = unparsed = no_sources = 0
    paper_sources = paper_correct = key_prompt = 0
    calls, prompt_tok, completion_tok, seconds, llm_seconds = [], [], [], [], []
    by_node: dict[str, list[float]] = {}
    choices: list[tuple[Any, tuple[str, float]]] = []  # answers read off the first token
    for q in questions:
        recorder.prompts.clear()
        state, took = await _ask(graph, q, args.kb, context)
        text = state.get("answer") or ""
        picked = chosen_option(text, q)
        if (choice := read_choice(text, q)) is not None:
            choices.append((q, choice))
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
        if picked == q.ideal:
            correct += 1
            paper_correct += right_paper
            verdict = "correct"
        elif picked == INSUFFICIENT:
            insufficient += 1
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
            _share(key_prompt, sum(q.key_passage is not None for q in questions))),
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
    if choices:
        _floors(choices, n)


def _floors(choices: list[tuple[Any, tuple[str, float]]], n: int) -> None:
    """The same answers at other abstention floors (the likeliest option and its share
    are in each answer read off the first token)."""
    rows = []
    for floor in (0.0, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9):
        right, unsure, wrong = at_floor(choices, floor)
        precision = f"{right / (right + wrong):.2f}" if right + wrong else "-"
        rows.append(Row(f"floor {floor:.1f}: correct / insufficient / wrong; precision",
                        f"{right} / {unsure} / {wrong}; {precision}"))
    print_table(f"LitQA2 part c: {len(choices)} of {n} answers read off the first token, "
                "at other abstention floors (option_pick.PICK_FLOOR is 0.5)", rows)




def floors_of_dump(path: str) -> None:
    """`answer --dump`'s answers at other floors, with the floor chosen on one half of
    the questions (odd or even lines) and applied to the other: no split is held out."""
    by_n = {q.n: q for q in load_questions()}
    choices = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        q = by_n[record["n"]]
        if (choice := read_choice(record["answer"], q)) is not None:
            choices.append((q, choice))
    _floors(choices, len(choices))
    grid = [i / 20 for i in range(20)]
    rows = []
    for chosen_on, applied_to in ((1, 0), (0, 1)):
        half = [c for c in choices if c[0].n % 2 == chosen_on]
        other = [c for c in choices if c[0].n % 2 == applied_to]
        # The floor maximising correct answers at precision 0.85, else precision.
        best = max(grid, key=lambda f: _merit(at_floor(half, f)))
        right, unsure, wrong = at_floor(other, best)
        rows.append(Row(f"floor {best:.2f} chosen on the {'odd' if chosen_on else 'even'} "
                        "questions, applied to the others", f"{right} / {unsure} / {wrong}"))
    print_table("The floor chosen on one half, applied to the other: correct / insufficient "
                "/ wrong", rows)


def _merit(counts: tuple[int, int, int]) -> tuple[bool, float]:
    right, _, wrong = counts
    precision = right / (right + wrong) if right + wrong else 0.0
    return precision >= 0.85, right if precision >= 0.85 else precision
