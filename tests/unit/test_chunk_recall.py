"""The chunk_recall branch end to end: sub-questions, parallel recall, cited answers."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from scholarflow import Context
from scholarflow.ingest.documents import document_from_text
from scholarflow.ingest.pipeline import add_document
from scholarflow.nodes import recall as recall_nodes
from scholarflow.nodes.recall import recall_questions
from scholarflow.prompts import KEY_CHUNK_QUERIES
from scholarflow.retrieval.kb import RecalledChunk
from scholarflow.retrieval.kb_registry import open_knowledge_base
from scholarflow.state import DocumentInfo, RecallStep, RecallStepTask, SubQuestion
from tests.conftest import SUMMARY_RULE, big_paper, paper, run_graph, small_context, types
from tests.support import FakeOpenAIServer

SUBQ_RULE = "search questions that together retrieve"  # SUB_QUESTION_GENERATION_PROMPT
ANSWER_RULE = "numbered passages recalled"  # CITED_MATERIAL_PROMPT


def _docs() -> dict[str, str]:
    return {"anchor": paper("en_sparse_attention.md"), "rag": paper("en_retrieval_qa.md")}


def _answer_prompt(server: FakeOpenAIServer) -> str:
    requests = [r for r in server.stats().requests if ANSWER_RULE in str(r["messages"])]
    assert len(requests) == 1
    return str(requests[0]["messages"][0]["content"])


def _done(events: list[dict[str, Any]], node: str) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == "node_complete" and e["node"] == node]


async def test_several_documents_question_recalls_per_document_and_cites(
    fake_llm: FakeOpenAIServer,
) -> None:
    fake_llm.configure(rules=[
        {"match": SUBQ_RULE, "reply": '{"sub_questions": ['
         '{"question": "learning rate and batch size", "translation": "学习率和批大小", '
         '"doc_id": "anchor"}, '
         '{"question": "learning rate and batch size", "doc_id": "rag"}]}'},
        {"match": ANSWER_RULE, "reply": "AnchorWindow used 3e-4 [1]; SectionRAG 2e-5 [2] [17]."},
    ])
    out, events = await run_graph({"query": "Which learning rate does each paper use?",
                                   "document_contents": _docs()})
    assert out["error"] is None, out["error"]
    assert (out["detected_intent"], out["strategy"]) == ("LITERATURE_QA", "chunk_recall")
    assert out["answer"] == "AnchorWindow used 3e-4 [1]; SectionRAG 2e-5 [2]."  # [17]: no chunk
    streamed = "".join(e["content"] for e in events if e["type"] == "answer_chunk")
    assert streamed == out["answer"]
    assert [s["n"] for s in out["sources"]] == [1, 2]
    assert {s["doc_id"] for s in out["sources"]} <= {"anchor", "rag"}
    steps = _done(events, "recall_step")
    assert len(steps) == 2 and all(e["chunks"] > 0 for e in steps)
    assert _done(events, "execution")[0]["failed"] == 0
    prompt = _answer_prompt(fake_llm)
    assert '<chunk n="1"' in prompt and "AnchorWindow" in prompt
    final = next(e for e in events if e["type"] == "final_answer")
    assert final["sources"] == out["sources"]


async def test_failed_sub_questions_fall_back_to_the_question(fake_llm: FakeOpenAIServer) -> None:
    fake_llm.configure(rules=[
        {"match": SUBQ_RULE, "reply": "I cannot do JSON today."},
        {"match": ANSWER_RULE, "reply": "It is 3e-4 [1]."},
    ])
    out, events = await run_graph({"query": "Which learning rate does each paper use?",
                                   "document_contents": _docs()})
    assert out["answer"] == "It is 3e-4 [1]." and out["sources"][0]["n"] == 1
    # Several documents: the question aimed at each one.
    assert len(_done(events, "recall_step")) == 2
    assert _done(events, "plan_generation")[0]["steps"] == 2
    # One document: the question itself is the one step.
    fake_llm.reset()
    fake_llm.configure(rules=[
        {"match": SUBQ_RULE, "reply": "I cannot do JSON today."},
        {"match": ANSWER_RULE, "reply": "It is 3e-4 [1]."},
    ])
    ctx = Context(max_context_tokens=11_000, reserved_answer_tokens=8_000,
                  system_tokens_estimate=500)
    out, events = await run_graph({"query": "Which learning rate did they use?",
                                   "content": paper("en_sparse_attention.md")}, ctx)
    assert out["strategy"] == "chunk_recall" and out["error"] is None, out["error"]
    assert _done(events, "plan_generation")[0]["steps"] == 1


async def test_one_large_document_is_answered_from_recall(fake_llm: FakeOpenAIServer) -> None:
    fake_llm.configure(rules=[{"match": ANSWER_RULE, "reply": "Batch 32 [1]."}])
    ctx = Context(max_context_tokens=11_000, reserved_answer_tokens=8_000,
                  system_tokens_estimate=500)
    out, _ = await run_graph({"query": "What batch size did they use?",
                              "content": paper("en_sparse_attention.md")}, ctx)
    assert out["strategy"] == "chunk_recall" and out["error"] is None, out["error"]
    assert out["answer"] == "Batch 32 [1]."
    limit = ctx.max_context_tokens - ctx.reserved_answer_tokens
    from scholarflow.tokens import count_message_tokens
    assert all(count_message_tokens(str(m["content"]) for m in r["messages"]) <= limit
               for r in fake_llm.stats().requests)


async def test_knowledge_base_documents_by_id(fake_llm: FakeOpenAIServer) -> None:
    kb = await open_knowledge_base("lab", create=True)
    for doc_id, text in _docs().items():
        await add_document(kb, document_from_text(text, doc_id=doc_id))
    fake_llm.configure(rules=[{"match": "precise question", "reply": "3e-4"}])
    out, _ = await run_graph({"query": "What learning rate did they use?", "kb": "lab",
                              "doc_ids": ["anchor"]})
    assert (out["strategy"], out["answer"]) == ("full_content", "3e-4")
    assert "AnchorWindow" in str(fake_llm.stats().requests[-1]["messages"][0]["content"])
    # every document of the knowledge base when no id is named
    out, _ = await run_graph({"query": "Summarize these papers", "kb": "lab"})
    assert out["strategy"] == "multi_doc_summary" and out["error"] is None
    # another knowledge base does not have them
    await open_knowledge_base("other", create=True)
    out, _events = await run_graph({"query": "What learning rate did they use?", "kb": "other",
                                   "doc_ids": ["anchor"]})
    assert out["error"] and "no document anchor in knowledge base 'other'" in out["error"]
    out, _ = await run_graph({"query": "What learning rate?", "kb": "missing"})
    assert out["error"] and "no knowledge base 'missing'" in out["error"]


async def test_large_document_in_a_summary_uses_key_chunks(fake_llm: FakeOpenAIServer) -> None:
    fake_llm.configure(rules=[
        {"match": SUMMARY_RULE, "reply": "summary"},
        {"match": "summarise a set", "reply": "ALL"},
    ])
    out, events = await run_graph({"query": "Summarize these papers",
                                   "document_contents": {"big": big_paper(),
                                                         "small": "# S\n\nshort"}},
                                  small_context())
    assert out["answer"] == "ALL" and out["error"] is None, out["error"]
    prompts = [str(r["messages"][0]["content"]) for r in fake_llm.stats().requests
               if SUMMARY_RULE in str(r["messages"])]
    big_prompt = next(p for p in prompts if "AnchorWindow" in p)
    assert big_prompt.count("Appendix") < 30  # not the whole text: its key chunks
    assert "doc_summary_error" not in types(events)



async def test_a_step_searches_its_translation_and_keeps_the_best_score(
    fake_llm: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A step aimed at one document searches it (only it) with the question and with its
    translation; each chunk keeps the better of its two scores."""
    kb = await open_knowledge_base("lab", create=True)
    await add_document(kb, document_from_text(
        "# 训练设置\n\n## 超参数\n\n批大小（batch）为 32，学习率为 3e-4。\n\n## 数据\n\n"
        "训练数据来自两万篇论文，batch size 按显存选择。", doc_id="zh"))
    await add_document(kb, document_from_text(paper("en_sparse_attention.md"), doc_id="en"))
    searched: list[tuple[str, list[str] | None, dict[str, float]]] = []
    real = recall_nodes.retriever_for

    class Recording:  # the real retriever, each search's results noted
        def __init__(self, inner: Any) -> None:
            self.inner = inner

        async def search(self, query: str, *, doc_ids: Any, params: Any) -> list[RecalledChunk]:
            found = await self.inner.search(query, doc_ids=doc_ids, params=params)
            searched.append((query, doc_ids, {c.chunk_id: c.score for c in found}))
            return found

    async def recording(*args: Any) -> Recording:
        return Recording(await real(*args))

    monkeypatch.setattr(recall_nodes, "retriever_for", recording)
    step = RecallStep(step=1, kind="recall", queries=["batch size", "批大小"], doc_id="zh")
    update = await recall_nodes.recall_step(
        RecallStepTask(step=step, kb="lab", doc_ids=[], direct_doc_ids=[]),
        None)  # type: ignore[arg-type]
    assert [(q, ids) for q, ids, _ in searched] == [("batch size", ["zh"]), ("批大小", ["zh"])]
    recalled = {c["chunk_id"]: c["score"] for c in update["recalled"]}
    assert recalled and all(c.startswith("zh:") for c in recalled)
    english, chinese = searched[0][2], searched[1][2]
    assert recalled == {c: max(english.get(c, 0.0), chinese.get(c, 0.0))
                        for c in english.keys() | chinese.keys()}
    # Both searches found both chunks; each kept the score of the search that found it
    # better: the translation's (the second) for the one in Chinese words, the question's
    # for the one holding "batch size".
    assert english.keys() == chinese.keys() == {"zh:00000", "zh:00001"}
    assert chinese["zh:00000"] > english["zh:00000"]
    assert english["zh:00001"] > chinese["zh:00001"]
    assert update["completed_steps"] == [1]


# --- every document gets a step; a summary's fallback searches for the key parts -------------

LR_QUESTION = "Which learning rate does each paper use?"


def _eight_documents() -> dict[str, str]:
    """One long document whose many sections all talk of learning rates, and seven notes."""
    runs = "\n\n".join(
        f"## Run {i}\n\nThe learning rate of run {i} was 3e-{i % 5 + 2}; the learning rate "
        "warmed up, then the learning rate decayed with a cosine learning rate schedule."
        for i in range(30))
    docs = {"sweep": "# Learning Rate Sweep\n\n" + runs}
    for k in range(1, 8):
        docs[f"note{k}"] = (f"# Field Note {k}\n\nWe trained model N{k} on our corpus for "
                            f"{k} days and used a learning rate of {k}e-5 with Adam. "
                            + "The corpus was cleaned and deduplicated before training. " * 4)
    return docs


def _prompt_titles(server: FakeOpenAIServer) -> set[str]:
    return set(re.findall(r'<chunk n="\d+" title="([^"]*)"', _answer_prompt(server)))


@pytest.mark.parametrize("planner", ["fails", "aims_at_each"])
async def test_every_one_of_eight_documents_is_recalled(
    fake_llm: FakeOpenAIServer, planner: str
) -> None:
    docs = _eight_documents()
    # More sub-questions than the cap, one per document: the last two are cut off.
    aimed = json.dumps({"sub_questions": [
        {"question": "learning rate", "doc_id": d} for d in docs]})
    fake_llm.configure(rules=[
        {"match": SUBQ_RULE, "reply": aimed if planner == "aims_at_each" else "no JSON"},
        {"match": ANSWER_RULE, "reply": "They differ [1]."},
    ])
    out, events = await run_graph({"query": LR_QUESTION, "document_contents": docs,
                                   "mode_type": "LITERATURE_QA"})
    assert out["error"] is None and out["strategy"] == "chunk_recall", out["error"]
    assert _done(events, "plan_generation")[0]["steps"] == 8
    assert _prompt_titles(fake_llm) == {"Learning Rate Sweep",
                                        *(f"Field Note {k}" for k in range(1, 8))}


def _info(doc_id: str) -> DocumentInfo:
    return DocumentInfo(doc_id=doc_id, title=doc_id, tokens=1, content_hash=doc_id)


def test_recall_questions_cover_every_document_after_the_planned_ones() -> None:
    planned = [SubQuestion(question="lr", translation="学习率", doc_id="b"),
               SubQuestion(question="data", translation=None, doc_id=None)]
    docs = [_info("a"), _info("b"), _info("c")]
    assert [(q["question"], q["doc_id"]) for q in
            recall_questions(planned, "Q?", docs, "LITERATURE_QA")[0]] == [
        ("lr", "b"), ("data", None), ("Q?", "a"), ("Q?", "c")]
    one = [_info("a")]
    assert recall_questions([], "Q?", one, "PAPER_REVIEW")[0] == [
        SubQuestion(question="Q?", translation=None, doc_id=None)]
    assert recall_questions(planned, "Q?", one, "LITERATURE_SUMMARY")[0] == planned
    probes, _note = recall_questions([], "Summarize it", one, "REVIEW_GENERATION")
    assert [q["question"] for q in probes] == list(KEY_CHUNK_QUERIES)
    assert {q["doc_id"] for q in probes} == {"a"}
    # A whole large knowledge base: one search over all of it, not one per document.
    many = [_info(f"d{i}") for i in range(recall_nodes.MAX_LISTED_DOCUMENTS + 1)]
    assert recall_questions([], "Q?", many, "LITERATURE_QA")[0] == [
        SubQuestion(question="Q?", translation=None, doc_id=None)]


async def test_a_large_document_summary_falls_back_to_its_key_parts(
    fake_llm: FakeOpenAIServer,
) -> None:
    fake_llm.configure(rules=[
        {"match": SUBQ_RULE, "reply": "no JSON"},
        {"match": ANSWER_RULE, "reply": "A summary [1]."},
    ])
    ctx = Context(max_context_tokens=11_000, reserved_answer_tokens=8_000,
                  system_tokens_estimate=500)
    out, events = await run_graph({"query": "Summarize this paper", "mode_type":
                                   "LITERATURE_SUMMARY",
                                   "content": paper("en_sparse_attention.md")}, ctx)
    assert out["error"] is None and out["strategy"] == "chunk_recall", out["error"]
    assert _done(events, "plan_generation")[0]["steps"] == len(KEY_CHUNK_QUERIES)
    prompt = _answer_prompt(fake_llm)
    chunks = prompt[prompt.index("<chunk"):]
    # The method, the results and the limitations: not what "summarize this paper" finds.
    for part in ("2 Method", "3.2 Main results", "4 Limitations"):
        assert part in chunks, part
