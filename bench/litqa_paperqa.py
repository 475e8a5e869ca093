"""PaperQA2 on the same LitQA2 questions, library and model as `bench/litqa.py answer`.

paper-qa is not a dependency of scholarflow: it runs from a virtual environment of its
own, against the same OpenAI-compatible server (the local model):

    python -m venv /tmp/pqa && /tmp/pqa/bin/pip install paper-qa==2026.8.12 pillow
    scholarflow kb docs litqa > /tmp/pqa/docs.jsonl      # with SCHOLARFLOW_HOME set
    OPENAI_BASE_URL=http://127.0.0.1:8731/v1 \
        /tmp/pqa/bin/python bench/litqa_paperqa.py --docs /tmp/pqa/docs.jsonl --questions 1-3

What it runs: paper-qa's defaults (evidence_k, chunking, prompts, answer length) with
what this machine forces: the fixed tool sequence (`agent_type="fake"`: search, gather
evidence, answer), because a 1.5B model cannot call tools; sparse (hashing) embeddings,
because its dense default needs a hosted model; no metadata lookups (offline); one LLM
request at a time (`max_concurrent_requests=1`, its default 4), because llama-cpp-python's
server drops the request in flight when another arrives, so four at once make no
progress (seen here: 2 calls answered in 8 minutes). Each PDF's
citation is the title and year scholarflow's ingest read (`--docs`), given in paper-qa's
manifest: without one it asks the model for each of the 85 (85 more calls before the
first question). The question text is `Question.asked()`, exactly as scholarflow gets
it, and its answer is parsed by the same `chosen_option`.

LLM calls are counted in the local model's server log (`--server-log`): paper-qa's own
token counts are kept per model, not per call.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import json
import os
import sys
import time
from pathlib import Path
from statistics import median
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from litqa_data import INSUFFICIENT, PAPERQA2, chosen_option, load_questions, select
from recall_common import Row, print_table

PDFS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "litqa2" / "pdfs"
SERVER_LOG = Path.home() / ".cache" / "scholarflow-local-llm" / "server.log"
CALL_LINE = "POST /v1/chat/completions"


def _adapt_requests(timeout: float) -> None:
    """llama-cpp-python's chat template joins strings, and paper-qa (through lmi and
    litellm) sends a message's content as a list of text parts: join them. And the
    request timeout reaching the OpenAI client here is lmi's default 60 s whatever the
    config says (seen: 60 s x 3 attempts, then the next call while the server still
    reads the last): set it. Nothing else of what paper-qa asks changes."""
    from litellm.llms.openai.openai import OpenAIChatCompletion

    send = OpenAIChatCompletion.make_openai_chat_completion_request

    async def flat(self: Any, *args: Any, **kwargs: Any) -> Any:
        data = kwargs["data"] if "data" in kwargs else args[1]  # (openai_aclient, data, ...)
        if "timeout" in kwargs:
            kwargs["timeout"] = timeout
        else:
            args = (*args[:2], timeout, *args[3:])
        for message in data.get("messages", []):
            if isinstance(message.get("content"), list):
                message["content"] = "".join(
                    p.get("text", "") for p in message["content"] if isinstance(p, dict))
        return await send(self, *args, **kwargs)

    OpenAIChatCompletion.make_openai_chat_completion_request = flat  # type: ignore[method-assign]


def _manifest(docs: Path, out: Path) -> Path:
    """paper-qa's manifest: each PDF's DOI and citation, from `scholarflow kb docs`."""
    with out.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["file_location", "doi", "title", "citation"])
        for line in docs.read_text(encoding="utf-8").splitlines():
            doc = json.loads(line)
            writer.writerow([Path(doc["source"]).name, doc.get("doi") or "", doc["title"],
                             f"{doc['title']}, {doc.get('year') or 'n.d.'}"])
    return out


def _settings(args: argparse.Namespace) -> Any:
    from paperqa import Settings
    from paperqa.settings import AgentSettings, AnswerSettings, IndexSettings, ParsingSettings

    model = f"openai/{args.model}"
    config = {"model_list": [{"model_name": model, "litellm_params": {
        "model": model, "api_base": os.environ["OPENAI_BASE_URL"],
        "api_key": os.environ.get("OPENAI_API_KEY", "sk-local"), "timeout": args.timeout}}]}
    index = IndexSettings(paper_directory=str(args.pdfs), index_directory=str(args.work / "index"),
                          manifest_file=str(_manifest(args.docs, args.work / "manifest.csv")))
    return Settings(llm=model, llm_config=config, summary_llm=model, summary_llm_config=config,
                    embedding="sparse", temperature=0.0,
                    parsing=ParsingSettings(use_doc_details=False),
                    answer=AnswerSettings(max_concurrent_requests=args.concurrency),
                    agent=AgentSettings(agent_type="fake", agent_llm=model,
                                        agent_llm_config=config, index=index,
                                        timeout=args.timeout * 4))


def _log_end(log: Path) -> int:
    return log.stat().st_size if log.exists() else 0


def _calls_since(log: Path, offset: int) -> int:
    """The chat calls the server logged after `offset`: only what this question added is
    read, not the whole log again."""
    if not log.exists():
        return 0
    with log.open("rb") as f:
        f.seek(offset)
        return f.read().decode(errors="replace").count(CALL_LINE)


async def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    from paperqa.agents import agent_query

    _adapt_requests(args.timeout)
    settings = _settings(args)
    results = []
    for q in select(load_questions(), args.questions, None):
        offset, start = _log_end(args.server_log), time.monotonic()
        session = (await agent_query(q.asked(), settings)).session
        picked = chosen_option(session.answer, q)
        verdict = ("insufficient" if picked in (None, INSUFFICIENT)
                   else "correct" if picked == q.ideal else "wrong")
        prompt = sum(counts[0] for counts in session.token_counts.values())
        completion = sum(counts[1] for counts in session.token_counts.values())
        result = {"n": q.n, "verdict": verdict, "picked": picked, "ideal": q.ideal,
                  "calls": _calls_since(args.server_log, offset), "prompt_tokens": prompt,
                  "completion_tokens": completion, "contexts": len(session.contexts),
                  "seconds": round(time.monotonic() - start), "answer": session.answer}
        print(json.dumps(result, ensure_ascii=False), file=sys.stderr, flush=True)
        results.append(result)
    return results


def report(results: list[dict[str, Any]], model: str) -> None:
    n = len(results)
    count = {v: sum(r["verdict"] == v for r in results) for v in ("correct", "insufficient",
                                                                    "wrong")}
    answered = count["correct"] + count["wrong"]
    rows = [
        Row("correct / insufficient / wrong", f"{count['correct']} / {count['insufficient']} / "
            f"{count['wrong']} of {n}", f"issue 18's run: {PAPERQA2['correct']}"),
        Row("precision", f"{count['correct'] / answered:.2f}" if answered else "-",
            f"issue 18's run: {PAPERQA2['precision']}"),
        Row("LLM calls a question p50 / max", f"{median(r['calls'] for r in results):.0f} / "
            f"{max(r['calls'] for r in results)}", f"issue 18's run: {PAPERQA2['llm_calls']}"),
        Row("prompt tokens a question p50 / max",
            f"{median(r['prompt_tokens'] for r in results):,.0f} / "
            f"{max(r['prompt_tokens'] for r in results):,}",
            f"issue 18's run: {PAPERQA2['prompt_tokens']}"),
        Row("completion tokens a question p50",
            f"{median(r['completion_tokens'] for r in results):,.0f}"),
        Row("seconds a question p50 / max", f"{median(r['seconds'] for r in results):,.0f} / "
            f"{max(r['seconds'] for r in results):,}", f"issue 18's run: {PAPERQA2['seconds']}"),
    ]
    rows += [Row(f"q{r['n']}", f"{r['verdict']} ({r['picked']!r}); {r['calls']} calls, "
                 f"{r['prompt_tokens']:,} prompt tokens, {r['seconds']} s") for r in results]
    print_table(f"LitQA2 part c: PaperQA2 (paper-qa, fixed tool sequence), model {model}, "
                f"{n} dev questions", rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=Path, required=True,
                        help="`scholarflow kb docs litqa` output: each PDF's title and year")
    parser.add_argument("--questions", default="1-3", help="question lines, e.g. 1,4,7-9")
    parser.add_argument("--pdfs", type=Path, default=PDFS)
    parser.add_argument("--work", type=Path, default=Path("/tmp/pqa"),
                        help="paper-qa's index and manifest go here")
    parser.add_argument("--model", default=os.environ.get("SCHOLARFLOW_MODEL",
                                                          "qwen2.5-coder-1.5b"))
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds an LLM call")
    parser.add_argument("--concurrency", type=int, default=1,
                        help="paper-qa's max_concurrent_requests (its default: 4)")
    parser.add_argument("--server-log", type=Path, default=SERVER_LOG)
    args = parser.parse_args()
    if not os.environ.get("OPENAI_BASE_URL"):
        sys.exit("litqa_paperqa.py needs a model: set OPENAI_BASE_URL, e.g. from "
                 "/work/shared/tools/local-llm.sh start")
    args.work.mkdir(parents=True, exist_ok=True)
    report(asyncio.run(run(args)), args.model)


if __name__ == "__main__":
    main()
