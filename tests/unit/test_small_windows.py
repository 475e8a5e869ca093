"""Any window from 4k up: every strategy answers, and no call's prompt plus its max_tokens
passes the window.

The real graph runs against the scripted server at 4,096 / 8,192 / 16,384 / 32,768
tokens, with the reserves left to scale (llm/budget.py). Each request the server logged is
counted as the guard counts it (scholarflow.tokens) and must carry a max_tokens.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

import pytest

from scholarflow import Context
from scholarflow.llm import window as mw
from scholarflow.llm.budget import cap_tokens
from scholarflow.tokens import count_message_tokens
from tests.conftest import INTENT_RULE, SUMMARY_RULE, paper, run_graph
from tests.support import FakeOpenAIServer

WINDOWS = (4_096, 8_192, 16_384, 32_768)
FILLER_EN = "Filler sentence about nothing in particular, added to make the paper long. "
FILLER_ZH = "这是一个没有特别意义的填充句子,只是为了让论文变得更长。"


@cache
def long_paper(name: str, window: int) -> str:
    """Over 0.7 x the document budget at `window` (and no longer, to index it fast): the
    question goes to chunk_recall. An appendix is 600 (English) to 1,160 (Chinese) tokens."""
    filler = FILLER_ZH if name.startswith("zh") else FILLER_EN
    return paper(name) + "\n\n" + "\n\n".join(
        f"## Appendix {i}\n\n" + filler * 40 for i in range(window // 1_000 + 1))


@cache
def short_paper(name: str) -> str:
    """Under 0.7 x the document budget even at 4k: read whole (full_content)."""
    return cap_tokens(paper(name), 1_500)


# case: (the request at a window, the strategy it must take)
CASES: dict[str, tuple[Callable[[int], dict[str, Any]], str | None]] = {
    "chat-en": (lambda _: {"query": "Hello! What can you help me with?"}, None),
    "chat-zh": (lambda _: {"query": "你好,你能帮我做什么?"}, None),
    "full_content-en": (lambda _: {"query": "Summarize this paper.",
                                   "content": short_paper("en_sparse_attention.md")},
                        "full_content"),
    "full_content-zh": (lambda _: {"query": "请总结这篇论文的主要贡献。",
                                   "content": short_paper("zh_hybrid_retrieval.md")},
                        "full_content"),
    "multi_doc_summary-en": (lambda _: {"query": "Summarize these papers.", "document_contents": {
        "a": paper("en_sparse_attention.md"), "b": paper("en_retrieval_qa.md")}},
        "multi_doc_summary"),
    "multi_doc_summary-zh": (lambda _: {"query": "请总结这些论文。", "document_contents": {
        "a": paper("zh_multidoc_summary.md"), "b": paper("zh_hybrid_retrieval.md")}},
        "multi_doc_summary"),
    "chunk_recall-en": (lambda w: {"query": "What learning rate did they use?",
                                   "content": long_paper("en_sparse_attention.md", w)},
                        "chunk_recall"),
    "chunk_recall-zh": (lambda w: {"query": "这篇论文使用的学习率是多少?",
                                   "content": long_paper("zh_hybrid_retrieval.md", w)},
                        "chunk_recall"),
    # Routed by the model, not the rules: the intent call has to fit too.
    "llm-routed": (lambda _: {"query": "Thoughts?",
                              "content": short_paper("en_retrieval_qa.md")}, "full_content"),
}
# What a real model may write: near the answer reserve at 4k (1024), so the summaries
# of several documents must be packed, reported on and merged within the window.
LONG_REPLY = " ".join(f"finding{i}" for i in range(450))


def script(fake: FakeOpenAIServer) -> None:
    fake.configure(rules=[
        {"match": SUMMARY_RULE, "reply": LONG_REPLY},
        {"match": INTENT_RULE,
         "reply": '{"intent": "PAPER_REVIEW", "confidence": 0.9, "reason": "an opinion"}'},
    ])


def assert_every_call_fits(fake: FakeOpenAIServer, window: int) -> int:
    """Every logged call: a max_tokens, and prompt + max_tokens within `window`. The calls."""
    requests = fake.stats().requests
    assert requests, "no LLM call was made"
    for request in requests:
        limit = request.get("max_tokens")
        assert isinstance(limit, int) and limit > 0, f"a call without max_tokens: {limit!r}"
        prompt = count_message_tokens(str(m["content"]) for m in request["messages"])
        assert prompt + limit <= window, (prompt, limit, window, str(request["messages"])[:300])
    return len(requests)


@pytest.mark.parametrize("window", WINDOWS)
@pytest.mark.parametrize("case", list(CASES))
async def test_every_strategy_answers_within_the_window(
    fake_llm: FakeOpenAIServer, window: int, case: str
) -> None:
    script(fake_llm)
    request, strategy = CASES[case]
    out, _ = await run_graph(request(window), Context(max_context_tokens=window))
    assert out["error"] is None, out["error"]
    assert out["answer"].strip()
    assert out["strategy"] == strategy, (out["strategy"], out["detected_intent"])
    if case == "llm-routed":
        assert out["intent_decided_by"] == "llm"
    assert_every_call_fits(fake_llm, window)


@pytest.mark.parametrize("window", WINDOWS[:2])
async def test_a_long_session_is_compressed_within_the_window(
    fake_llm: FakeOpenAIServer, window: int
) -> None:
    fake_llm.configure(rules=[{"match": "Summarise the conversation", "reply": LONG_REPLY}])
    ctx = Context(max_context_tokens=window)
    session: dict[str, str] = {}

    def compressions() -> int:
        return sum("Summarise the conversation" in str(r["messages"])
                   for r in fake_llm.stats().requests)

    for turn in range(10):  # each turn about 1,100 tokens: past 0.8 x the window soon
        query = f"Turn {turn}: please comment on this. " + "Some longer remark here. " * 220
        out, _ = await run_graph({"query": query, **session}, ctx)
        assert out["error"] is None, out["error"]
        session = {"session_id": out["session"]["session_id"]}
        if compressions():
            break
    assert compressions(), "the session was never compressed"
    assert_every_call_fits(fake_llm, window)


async def test_the_window_the_server_reports_sizes_every_call(
    fake_llm: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No window set: the one the server reported (cached per endpoint and model) rules."""
    script(fake_llm)
    monkeypatch.delenv("SCHOLARFLOW_MAX_CONTEXT_TOKENS", raising=False)
    ctx = Context()
    key = mw._key(ctx)
    assert key is not None
    monkeypatch.setitem(mw._reported, key, 4_096)  # as a probe of a llama.cpp server would
    for case in ("chunk_recall-zh", "multi_doc_summary-en"):
        request, strategy = CASES[case]
        out, _ = await run_graph(request(4_096))
        assert out["error"] is None and out["strategy"] == strategy, out["error"]
    assert_every_call_fits(fake_llm, 4_096)
    monkeypatch.setenv("SCHOLARFLOW_MAX_CONTEXT_TOKENS", "16384")  # the environment wins
    fake_llm.reset()
    script(fake_llm)
    out, _ = await run_graph(CASES["chat-en"][0](16_384))
    assert out["error"] is None
    assert {r["max_tokens"] for r in fake_llm.stats().requests} == {2_048}
