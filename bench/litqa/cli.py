"""The LitQA2 runner's command line: one part per subcommand (see bench/litqa/__init__.py)."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable, Coroutine
from typing import Any

from bench.litqa.env import DEFAULT_HOME

PARTS = ("ingest", "search", "recall", "answer", "open", "support")
QUESTION_PARTS = PARTS[1:]
MODEL_PARTS = ("recall", "answer", "open")


def parser() -> argparse.ArgumentParser:
    from bench import litqa

    top = argparse.ArgumentParser(prog="python -m bench.litqa",
                                  description=(litqa.__doc__ or "").split("\n\n")[0])
    sub = top.add_subparsers(dest="part", required=True)
    sub.add_parser("extract", help="PDF extraction per engine (its own options)",
                   add_help=False)
    for name in PARTS:
        p = sub.add_parser(name)
        p.add_argument("--home", default=DEFAULT_HOME,
                       help=f"SCHOLARFLOW_HOME of the knowledge base (default {DEFAULT_HOME}; "
                            "LITQA_HOME sets it)")
        p.add_argument("--kb", default="litqa", help="the knowledge base's name")
        p.add_argument("--limit", type=int,
                       help="the first N PDFs (ingest) or questions (the others)")
        p.add_argument("-v", "--verbose", action="store_true")
    for name in QUESTION_PARTS:
        p = sub.choices[name]
        p.add_argument("--half", choices=("tune", "check", "all"), default="all",
                       help="the tuning half, the checking half, or both side by side")
        p.add_argument("--questions", help="lines of questions-dev.jsonl, e.g. 1-5 or 1,4,7-9")
        p.add_argument("--question-file", metavar="PATH",
                       help="ask these questions instead (LitQA2's JSON lines; 'own': "
                            "bench/litqa/own-questions.jsonl), all tuning data")
    sub.choices["ingest"].add_argument(
        "--scripted-embeddings", action="store_true",
        help="embed with the scripted server's hashing vectors (minutes, not an hour)")
    for name in MODEL_PARTS:
        p = sub.choices[name]
        p.add_argument("--window", type=int, default=16_384,
                       help="max_context_tokens (the local model's: 16k)")
        p.add_argument("--llm-timeout", type=float, default=600.0,
                       help="llm_timeout_seconds: a slow local model needs minutes")
        p.add_argument("--timeout", type=float, default=900.0,
                       help="seconds a question may take before it is stopped and counted")
    for name in ("answer", "open"):
        sub.choices[name].add_argument(
            "--scripted", action="store_true",
            help="the scripted server as the model: a dry run of the part, no real answers")
    sub.choices["answer"].add_argument(
        "--record", help="append one JSON line a question (answer, readings) to this file")
    return top


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["extract"]:
        from bench.litqa import extract

        raise SystemExit(extract.main(argv[1:]))
    args = parser().parse_args(argv)
    asyncio.run(part(args.part)(args))


def part(name: str) -> Callable[[argparse.Namespace], Coroutine[Any, Any, None]]:
    if name == "ingest":
        from bench.litqa.ingest import ingest

        return ingest
    if name == "search":
        from bench.litqa.search import search

        return search
    if name == "recall":
        from bench.litqa.recall import recall

        return recall
    if name == "answer":
        from bench.litqa.answer import answer

        return answer
    if name == "open":
        from bench.litqa.open_ended import open_questions

        return open_questions
    from bench.litqa.support import support_floor

    return support_floor
