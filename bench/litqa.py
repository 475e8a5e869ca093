"""LitQA2 over a real library: extraction, ingest, search, the workflow's recall, answers.

    python bench/litqa.py extract [...]          # part 1 (issue 20): bench/litqa_extract.py
    python bench/litqa.py ingest  [--home H] [--kb litqa] [--scripted-embeddings]
    python bench/litqa.py search  [--home H] [--questions 1-5] [--limit N]
    python bench/litqa.py recall  [--home H] [--scripted]   # recall only, no answer call
    python bench/litqa.py answer  [--home H] [--limit N]    # needs OPENAI_BASE_URL etc.
    python bench/litqa.py support [--home H]  # the "insufficient" floor (litqa_support.py)

All 85 PDFs of ../shared/corpus/litqa2 go into one knowledge base (the
others are the distractors); the dev split's questions are asked of it.
`search`: one search per question (its stem, no LLM), as `scholarflow
search` does it. `recall`: the graph for the question as LitQA2 asks it
(the options listed), stopped where the answer prompt would go to the model:
which passages reached it. `answer`: the whole graph with the configured
model; the chosen option parsed from the answer. `--scripted` (recall) uses
the scripted server instead of a model: the planner then falls back to the
question itself. `--scripted-embeddings` (ingest, and then every command on
that home) embeds with the scripted server's hashing vectors instead of the
local model: minutes instead of an hour, for trying ranking changes; the
tables say which. Prints Markdown tables; PaperQA2's figures from issue 18
beside ours.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import sys
import time
import uuid
from pathlib import Path
from statistics import median
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/ siblings
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout, for tests/

from litqa_data import (
    BEFORE,
    Question,
    holds_key,
    load_questions,
    pdf_files,
    select,
)
from recall_common import Row, print_table

DEFAULT_HOME = "/work/litqa-home"
SCRIPTED_MARK = ".scripted-embeddings"  # in the home: its KB was built with hashing vectors


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    return own.ru_utime + own.ru_stime


class _Env:
    """SCHOLARFLOW_HOME, and the scripted server when embeddings or the model come from it."""

    def __init__(self, home: str, *, scripted_embeddings: bool = False,
                 scripted_llm: bool = False) -> None:
        self.home = Path(home)
        self.home.mkdir(parents=True, exist_ok=True)
        os.environ["SCHOLARFLOW_HOME"] = str(self.home)
        mark = self.home / SCRIPTED_MARK
        if scripted_embeddings:
            mark.touch()
        self.scripted_embeddings = mark.exists()
        self.server: Any = None
        if self.scripted_embeddings or scripted_llm:
            from tests.support import FakeOpenAIServer

            self.server = FakeOpenAIServer().start()
        if self.scripted_embeddings:
            os.environ["SCHOLARFLOW_EMBEDDING_MODEL"] = "fake-embedding"
            os.environ["SCHOLARFLOW_EMBEDDING_BASE_URL"] = self.server.base_url
        if scripted_llm:
            os.environ["OPENAI_BASE_URL"] = self.server.base_url
            os.environ["OPENAI_API_KEY"] = "sk-scripted"
            os.environ.pop("SCHOLARFLOW_MODEL", None)

    @property
    def embeddings(self) -> str:
        return "scripted hashing vectors" if self.scripted_embeddings else "local e5"

    def close(self) -> None:
        if self.server is not None:
            self.server.stop()


# --- ingest -----------------------------------------------------------------


async def ingest(args: argparse.Namespace) -> None:
    from scholarflow.ingest.pipeline import ingest_paths
    from scholarflow.retrieval.kb_registry import close_all

    env = _Env(args.home, scripted_embeddings=args.scripted_embeddings)
    files = pdf_files()[:args.limit] if args.limit else pdf_files()
    wall, cpu = time.perf_counter(), _cpu()
    errors: list[str] = []

    def seen(result: Any) -> None:
        if not result.ok:
            errors.append(result.error or result.source)
        print(f"  {result.status}: {Path(result.source).name} ({result.chunks} chunks)",
              file=sys.stderr, flush=True)

    results = await ingest_paths([str(f) for f in files], args.kb, on_result=seen)
    await close_all()
    wall, cpu = time.perf_counter() - wall, _cpu() - cpu
    env.close()
    chunks = sum(r.chunks for r in results)
    added = [r for r in results if r.status == "added"]
    print_table(f"LitQA2 ingest into {args.kb!r} ({env.embeddings})", [
        Row("files / added / errors", f"{len(files)} / {len(added)} / {len(errors)}"),
        Row("chunks (added now)", str(sum(r.chunks for r in added))),
        Row("seconds", f"{wall:.0f}"),
        Row("CPU-s (this process)", f"{cpu:.0f}"),
        Row("CPU-s a chunk", f"{cpu / chunks:.3f}" if chunks else "-", "<= 0.25"),
    ])
    for error in errors:
        print(f"error: {error}")


async def _doc_ids(kb_name: str) -> dict[str, str]:
    """PDF file name -> doc_id in the knowledge base."""
    from scholarflow.retrieval.kb_registry import open_knowledge_base

    kb = await open_knowledge_base(kb_name)
    return {Path(d.source or "").name: d.doc_id for d in await kb.documents()}


def _source_ids(q: Question, ids: dict[str, str]) -> set[str]:
    return {ids[f] for f in q.files if f in ids}


def _share(hits: int, n: int) -> str:
    return f"{hits}/{n} = {hits / n:.2f}" if n else "-"


# --- search (part a) --------------------------------------------------------


async def search(args: argparse.Namespace) -> None:
    from scholarflow.context import Context
    from scholarflow.retrieval.kb import RecallParams
    from scholarflow.retrieval.kb_registry import close_all, open_knowledge_base

    env = _Env(args.home)
    questions = select(load_questions(), args.questions, args.limit)
    ids = await _doc_ids(args.kb)
    kb = await open_knowledge_base(args.kb)
    ctx = Context()
    weight = ctx.vector_similarity_weight if args.weight is None else args.weight
    params = RecallParams(top_n=10, similarity_threshold=ctx.similarity_threshold,
                          vector_similarity_weight=weight,
                          use_rerank=ctx.use_rerank or args.rerank)
    first = top5 = top10 = k5 = k10 = with_key = 0
    seconds = []
    for q in questions:
        started = time.perf_counter()
        hits = await kb.search(q.question, doc_ids=None, params=params)
        seconds.append(time.perf_counter() - started)
        sources = _source_ids(q, ids)
        docs = [h.doc_id for h in hits]
        first += bool(docs) and docs[0] in sources
        top5 += bool(sources & set(docs[:5]))
        top10 += bool(sources & set(docs[:10]))
        rank = holds_key(q.key_passage, [h.text for h in hits])
        with_key += q.key_passage is not None
        k5 += rank is not None and rank <= 5
        k10 += rank is not None and rank <= 10
        if args.verbose:
            print(f"q{q.n}: paper ranks {[i for i, d in enumerate(docs, 1) if d in sources]}"
                  f" key rank {rank}", file=sys.stderr)
    await close_all()
    env.close()
    n = len(questions)
    print_table(f"LitQA2 part a: one search per question, no LLM ({env.embeddings}; "
                f"vector_similarity_weight {weight}, rerank {params.use_rerank})", [
        Row("questions (with a key passage)", f"{n} ({with_key})"),
        Row("source paper first hit", _share(first, n), f"before: {BEFORE['paper_first']}"),
        Row("source paper in top 5 / 10", f"{_share(top5, n)} / {_share(top10, n)}"),
        Row("key passage in top 5", _share(k5, with_key), f"before: {BEFORE['key_top5']}"),
        Row("key passage in top 10", _share(k10, with_key), ">= 0.85",
            k10 >= 0.85 * with_key),
        Row("search seconds p50 / max", f"{median(seconds):.2f} / {max(seconds):.2f}"
            if seconds else "-"),
    ])


# --- the graph, recorded ----------------------------------------------------


class _Stop(Exception):
    """Raised in place of the answer call when only recall is measured."""


class _Recorder:
    """Every prompt the graph sends to the model, by node; optionally stops at the answer."""

    def __init__(self, stop_at_answer: bool) -> None:
        self.stop_at_answer = stop_at_answer
        self.prompts: list[tuple[str, str]] = []

    def install(self) -> None:
        from scholarflow.llm import calls

        def recorded(original: Any) -> Any:
            async def call(ctx: Any, prompt: Any, *, node: str, **kwargs: Any) -> Any:
                text = "\n\n".join(content for _, content in prompt)
                read = [t for n, t in self.prompts if n == node and "<chunk " in t]
                self.prompts.append((node, text))
                if self.stop_at_answer and node == "answer_generation" and "<chunk " in text:
                    # The first, with the sentences nearest the stem (option_excerpt.py),
                    # is answered "not stated" here, so the whole passages come next.
                    if read:
                        raise _Stop("recall measured; the answer is not asked for")
                    return calls.LLMResult(text="not stated", usage={
                        "node": node, "model": "", "input_tokens": 0, "output_tokens": 0,
                        "seconds": 0.0})
                return await original(ctx, prompt, node=node, **kwargs)
            return call

        # stream writes answers; complete reads a multiple-choice answer's letter first.
        calls.stream = recorded(calls.stream)  # type: ignore[assignment]
        calls.complete = recorded(calls.complete)  # type: ignore[assignment]

    def answer_prompt(self) -> str | None:
        """The answer prompt with the most passages: the whole passages, unless the
        answer in words after their nearest sentences (option_excerpt.py) named an option
        and nothing more was read."""
        read = [t for node, t in self.prompts if node == "answer_generation" and "<chunk " in t]
        return max(read, key=lambda t: t.count("<chunk "), default=None)

    def first_prompt(self) -> str | None:
        """The first answer prompt with passages: the sentences nearest the stem."""
        return next((t for node, t in self.prompts
                     if node == "answer_generation" and "<chunk " in t), None)


def _passages(prompt: str | None) -> list[str]:
    """The numbered passages of an answer prompt (nodes/citations.py format_chunks)."""
    import re

    if not prompt:
        return []
    # The header is one line; its heading path may hold ">" ("Results > Binding").
    return re.findall(r'<chunk n="\d+"[^\n]*\n(.*?)\n</chunk>', prompt, re.S)


async def _ask(graph: Any, q: Question, kb: str, context: Any) -> tuple[dict[str, Any], float]:
    config: Any = {"configurable": {"thread_id": uuid.uuid4().hex}}
    started = time.perf_counter()
    try:
        await graph.ainvoke({"query": q.asked(), "kb": kb}, config, context=context)
    except Exception as exc:  # the state says what failed; so does the row
        if "_Stop" not in str(exc):  # the recall-only run's planned end
            print(f"q{q.n}: run ended in {type(exc).__name__}: {str(exc)[:160]}",
                  file=sys.stderr)
    seconds = time.perf_counter() - started
    return dict((await graph.aget_state(config)).values), seconds


# --- recall (part b) --------------------------------------------------------


async def recall(args: argparse.Namespace) -> None:
    from langgraph.checkpoint.memory import InMemorySaver

    from scholarflow import Context, build_graph
    from scholarflow.retrieval.kb_registry import close_all
    from scholarflow.tokens import count_tokens

    env = _Env(args.home, scripted_llm=args.scripted)
    questions = select(load_questions(), args.questions, args.limit)
    ids = await _doc_ids(args.kb)
    recorder = _Recorder(stop_at_answer=True)
    recorder.install()
    graph = build_graph(checkpointer=InMemorySaver())
    context = Context(show_thinking=False, max_context_tokens=args.window)
    n = len(questions)
    with_key = sum(q.key_passage is not None for q in questions)
    paper = key_recalled = key_prompt = paper_prompt = 0
    counts, tokens, places = [], [], []
    for q in questions:
        recorder.prompts.clear()
        state, _ = await _ask(graph, q, args.kb, context)
        recalled = sorted(state.get("recalled") or [], key=lambda c: -c["score"])
        prompt_passages = _passages(recorder.answer_prompt())
        counts.append(len(prompt_passages))
        sources = _source_ids(q, ids)
        paper += bool(sources & {c["doc_id"] for c in recalled})
        recalled_rank = holds_key(q.key_passage, [c["text"] for c in recalled])
        key_recalled += recalled_rank is not None
        place = holds_key(q.key_passage, prompt_passages)
        in_prompt = place is not None
        key_prompt += in_prompt
        if place:
            places.append(place)
        titles = [c["title"] for c in recalled]
        steps = [s["queries"][0][:60] for s in state.get("plan") or []]
        paper_prompt += any(sources & {c["doc_id"]} and c["text"] in prompt_passages
                            for c in recalled)
        tokens.append(sum(count_tokens(t) for _, t in recorder.prompts))
        if args.dump:  # the answer prompts, for trying selection changes without the graph
            with Path(args.dump).open("a", encoding="utf-8") as out:  # noqa: ASYNC230
                out.write(json.dumps({"n": q.n, "prompt": recorder.answer_prompt()}) + "\n")
        if args.verbose:
            sizes = [count_tokens(t) for t in prompt_passages]
            print(f"q{q.n}: {len(recalled)} recalled, {len(prompt_passages)} in prompt "
                  f"(tokens {sizes}); key recalled at {recalled_rank}, in prompt at {place}; "
                  f"steps {steps}"
                  f"; first titles {titles[:2]}", file=sys.stderr)
    await close_all()
    env.close()
    planner = "scripted (falls back to the question)" if args.scripted else "the configured model"
    print_table(f"LitQA2 part b: the workflow's recall, planner {planner} ({env.embeddings})", [
        Row("questions (with a key passage)", f"{n} ({with_key})"),
        Row("source paper recalled", _share(paper, n)),
        Row("source paper in the answer prompt", _share(paper_prompt, n)),
        Row("key passage recalled", _share(key_recalled, with_key)),
        Row("key passage in the answer prompt", _share(key_prompt, with_key), ">= 0.9",
            key_prompt >= 0.9 * with_key),
        Row("passages in the answer prompt p50 / max",
            f"{median(counts):.0f} / {max(counts)}" if counts else "-"),
        Row("the key passage's place among them p50 / max (sorted)",
            f"{median(places):.0f} / {max(places)} ({sorted(places)})" if places else "-"),
        Row("prompt tokens a question p50 (planner + answer)",
            f"{median(tokens):,.0f}" if tokens else "-"),
    ])


async def answer(args: argparse.Namespace) -> None:
    from litqa_answer import answer as run  # part c lives beside this file (400 lines)

    await run(args)


async def support(args: argparse.Namespace) -> None:
    from litqa_support import support_floor

    env = _Env(args.home)
    await support_floor(args, env, await _doc_ids(args.kb))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("extract", help="part 1: extraction engines (bench/litqa_extract.py)",
                   add_help=False)
    for name in ("ingest", "search", "recall", "answer", "support"):
        p = sub.add_parser(name)
        p.add_argument("--home", default=DEFAULT_HOME, help="SCHOLARFLOW_HOME")
        p.add_argument("--kb", default="litqa")
        p.add_argument("--limit", type=int, help="the first N files (ingest) or questions")
        p.add_argument("--questions", help="question lines to ask, e.g. 1,4,7-9")
        p.add_argument("-v", "--verbose", action="store_true")
    sub.choices["ingest"].add_argument("--scripted-embeddings", action="store_true")
    sub.choices["recall"].add_argument("--scripted", action="store_true")
    sub.choices["recall"].add_argument("--dump", help="append each answer prompt to this "
                                       "JSON-lines file")
    sub.choices["search"].add_argument("--weight", type=float,
                                       help="vector_similarity_weight (default: Context's)")
    sub.choices["search"].add_argument("--rerank", action="store_true", help="use_rerank")
    sub.choices["answer"].add_argument("--llm-timeout", type=float, default=600.0)
    sub.choices["answer"].add_argument("--dump", help="append each answer and its prompt "
                                       "to this JSON-lines file")
    sub.choices["answer"].add_argument("--readings", help="append each question's letter "
                                       "readings to this JSON-lines file and score other "
                                       "rules on them (bench/litqa_readings.py)")
    for name in ("recall", "answer"):
        sub.choices[name].add_argument("--window", type=int, default=16_384,
                                       help="max_context_tokens (the local model's: 16k)")
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["extract"]:
        import litqa_extract  # written with the PDF work (issue 20); imported only here

        litqa_extract.main(argv[1:])
        return
    args = parser.parse_args(argv)
    command = {"ingest": ingest, "search": search, "recall": recall, "answer": answer,
               "support": support}
    asyncio.run(command[args.command](args))


if __name__ == "__main__":
    main()
