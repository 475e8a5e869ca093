"""`recall`: the graph for each question as LitQA2 asks it, the scripted server as the model.

What reached the answer prompt, read from the scripted server's request log (no hook in
the product): the prompt with the most passages (`<chunk ...>` blocks, the answer
prompt's format) is the one the model would read them all in. Every prompt holding
passages is answered "The passages do not say.", so a multiple-choice answer goes on
to the whole passages after any shorter prompt. The planner's reply is not JSON, so it
falls back to the question itself: this measures search and evidence selection, not a
model's sub-questions. For multiple choice it also reads what each reading was shown
(the stem asked without its options): whether the ideal answer's words are there, the
most an answer copied from it could get; and which options the passages' sentences name
(nodes/option_evidence.py), so whether matching by words alone could tell them apart.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass
from typing import Any

from bench.litqa.env import Env, library
from bench.litqa.graph import ask, build
from bench.litqa.questions import Question, asked, contains_ideal, holds_key
from bench.litqa.report import Rows, p50_max, print_halves, progress, share

_CHUNK = re.compile(r'<chunk n="\d+" title="(.*?)"[^\n]*\n(.*?)\n</chunk>', re.S)
NOT_SAID = "The passages do not say."


@dataclass
class Recalled:
    q: Question
    paper_recalled: bool
    key_recalled: bool
    paper_in_prompt: bool
    key_place: int | None  # 1-based place of the key passage among the prompt's passages
    passages: int  # in the answer prompt
    prompt_tokens: int  # every request of the run, counted on our side
    # Multiple choice's readings (nodes/option_reading.py): the ideal answer's words in the
    # short reading's sentences and in the whole passages' reading; None when not read.
    ideal_in_excerpt: bool | None = None
    ideal_in_passages: bool | None = None
    # The key passage (half its shingles) in the short reading's sentences; None when
    # there is no short reading or no key passage.
    key_in_excerpt: bool | None = None
    # The options but "insufficient" that a sentence of the whole passages names
    # (nodes/option_evidence.py), and whether the ideal is among them.
    named_options: int = 0
    ideal_named: bool = False


def prompt_text(request: dict[str, Any]) -> str:
    parts = []
    for message in request.get("messages") or []:
        content = message.get("content")
        if isinstance(content, list):
            content = "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
        parts.append(str(content or ""))
    return "\n\n".join(parts)


def answer_prompt(requests: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(title, text) of the passages of the request with the most of them."""
    read = [_CHUNK.findall(prompt_text(r)) for r in requests]
    return max(read, key=len, default=[])


def readings(requests: list[dict[str, Any]]) -> list[str]:
    """The passages' text of each multiple-choice reading (the stem asked without its
    options, FREE_ANSWER), in the order asked: the excerpt first when there is one."""
    from scholarflow.prompts import FREE_ANSWER_EN

    ask = FREE_ANSWER_EN.format(stem="").strip()[:40]
    prompts = [prompt_text(r) for r in requests]
    return ["\n".join(text for _, text in _CHUNK.findall(prompt))
            for prompt in prompts if ask in prompt and "<chunk " in prompt]


def named_options(q: Question, passages: list[tuple[str, str]]) -> list[str]:
    """The options (but "insufficient") a sentence of `passages` names."""
    from scholarflow.nodes.option_evidence import option_evidence
    from scholarflow.nodes.options import split_options

    chunks: Any = [{"text": text} for _, text in passages]
    return [e.text for e in option_evidence(split_options(q.asked()), chunks) if e.passage]


def summarise(rs: list[Recalled]) -> Rows:
    n = len(rs)
    keyed = [r for r in rs if r.q.key_passage]
    places = sorted(r.key_place for r in keyed if r.key_place)
    return [
        ("questions (with a key passage)", f"{n} ({len(keyed)})"),
        ("source paper recalled", share(sum(r.paper_recalled for r in rs), n)),
        ("source paper in the answer prompt", share(sum(r.paper_in_prompt for r in rs), n)),
        ("key passage recalled", share(sum(r.key_recalled for r in keyed), len(keyed))),
        ("key passage in the answer prompt",
         share(sum(r.key_place is not None for r in keyed), len(keyed))),
        ("passages in the answer prompt p50 / max", p50_max([r.passages for r in rs])),
        ("the key passage's place among them p50 / max", p50_max(places)),
        ("ideal answer's words in the short reading's sentences",
         share(sum(bool(r.ideal_in_excerpt) for r in rs),
               sum(r.ideal_in_excerpt is not None for r in rs))),
        ("ideal answer's words in the whole passages' reading",
         share(sum(bool(r.ideal_in_passages) for r in rs),
               sum(r.ideal_in_passages is not None for r in rs))),
        ("key passage in the short reading's sentences (of those in the prompt)",
         share(sum(bool(r.key_in_excerpt) for r in rs),
               sum(r.key_in_excerpt is not None and r.key_place is not None for r in rs))),
        ("options named by the passages' sentences p50 / max",
         p50_max([r.named_options for r in rs])),
        ("the ideal among them", share(sum(r.ideal_named for r in rs), n)),
        ("only the ideal named", share(sum(r.ideal_named and r.named_options == 1 for r in rs), n)),
        ("only a distractor named",
         share(sum(not r.ideal_named and r.named_options == 1 for r in rs), n)),
        ("prompt tokens a question p50 / max (every call)",
         p50_max([r.prompt_tokens for r in rs])),
    ]


async def recall(args: argparse.Namespace) -> None:
    env = Env(args.home, scripted_llm=True)
    from scholarflow.retrieval.kb_registry import close_all
    from scholarflow.tokens import count_tokens

    questions = asked(args)
    lib = await library(args.kb)
    graph, context = build(args.window, args.llm_timeout)
    records = []
    for q in questions:
        env.reset(rules=[{"match": "<chunk ", "reply": NOT_SAID}])
        run = await ask(graph, context, q.asked(), args.kb, args.timeout)
        requests = env.requests()
        passages = answer_prompt(requests)
        sources = lib.sources(q)
        recalled = run.values.get("recalled") or []
        source_titles = {lib.titles[d] for d in sources}
        read = readings(requests)
        excerpt_text = read[0] if len(read) > 1 else None
        passages_text = read[-1] if read else None
        named = named_options(q, passages)
        record = Recalled(
            q, paper_recalled=any(c["doc_id"] in sources for c in recalled),
            key_recalled=holds_key(q.key_passage, [c["text"] for c in recalled]) is not None,
            paper_in_prompt=any(title in source_titles for title, _ in passages),
            key_place=holds_key(q.key_passage, [text for _, text in passages]),
            passages=len(passages),
            prompt_tokens=sum(count_tokens(prompt_text(r)) for r in requests),
            named_options=len(named), ideal_named=q.ideal in named,
            ideal_in_excerpt=(None if excerpt_text is None
                              else contains_ideal(excerpt_text, q.ideal)),
            key_in_excerpt=(None if excerpt_text is None or not q.key_passage
                            else holds_key(q.key_passage, [excerpt_text]) is not None),
            ideal_in_passages=(None if passages_text is None
                               else contains_ideal(passages_text, q.ideal)))
        records.append(record)
        progress(q, f"{len(recalled)} recalled, {record.passages} in the answer prompt, key "
                    f"passage at {record.key_place}; ideal in the readings' passages: "
                    f"{record.ideal_in_excerpt}, {record.ideal_in_passages}; key passage in the "
                    f"short reading: {record.key_in_excerpt}; options named: "
                    f"{record.named_options} (the ideal: {record.ideal_named}); {run.seconds:.0f} s"
                    + (f"; {run.error}" if run.error else ""))
    await close_all()
    env.close()
    print_halves(f"LitQA2 recall: the graph up to the answer prompt ({env.label})",
                 args.half, records, summarise)
