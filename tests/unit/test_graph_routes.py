"""Every route through the graph, against the scripted OpenAI-compatible server."""

from __future__ import annotations

from scholarflow import Context
from scholarflow.sessions.conversation import as_session_messages
from scholarflow.sessions.models import MessageType
from tests.conftest import INTENT_RULE, SUMMARY_RULE, paper, run_graph, types
from tests.support import FakeOpenAIServer


async def test_no_documents_goes_to_chat_and_saves_the_turn(fake_llm: FakeOpenAIServer) -> None:
    fake_llm.configure(rules=[{"match": "scholarflow, an assistant",
                               "reply": "Hello! I can help."}])
    out, events = await run_graph({"query": "hi there"})
    assert out["answer"] == "Hello! I can help."
    assert out["detected_intent"] == "SIMPLE_INTERACTION"
    assert out["strategy"] is None
    assert "".join(e["content"] for e in events if e["type"] == "answer_chunk") == out["answer"]
    assert types(events)[-1] == "final_answer"
    messages = as_session_messages(out["messages"])
    assert [(m.type, m.content) for m in messages] == [
        (MessageType.USER, "hi there"), (MessageType.ASSISTANT, "Hello! I can help."),
    ]


async def test_one_small_document_is_read_whole(fake_llm: FakeOpenAIServer) -> None:
    fake_llm.configure(rules=[{"match": "precise question", "reply": "3e-4 [AnchorWindow]"}])
    out, _ = await run_graph({
        "query": "What learning rate did they use?",
        "content": paper("en_sparse_attention.md"),
    })
    assert (out["detected_intent"], out["strategy"]) == ("LITERATURE_QA", "full_content")
    assert out["intent_decided_by"] == "rules"
    assert out["answer"] == "3e-4 [AnchorWindow]"
    prompt = fake_llm.stats().requests[-1]["messages"][0]["content"]
    assert "AnchorWindow" in prompt and "of 3e-4 with 2,000 warmup steps" in prompt


async def test_several_documents_summary_uses_the_summary_subgraph(
    fake_llm: FakeOpenAIServer,
) -> None:
    fake_llm.configure(rules=[
        {"match": SUMMARY_RULE + ".*AnchorWindow", "reply": "S1: anchors cut memory 3.1x."},
        {"match": SUMMARY_RULE + ".*SectionRAG", "reply": "S2: sections help QA."},
        {"match": SUMMARY_RULE, "reply": "S-other."},
        {"match": "summarise a set of academic documents", "reply": "Both papers agree."},
    ])
    docs = {"a": paper("en_sparse_attention.md"), "b": paper("en_retrieval_qa.md"),
            "c": paper("zh_hybrid_retrieval.md")}
    out, events = await run_graph({"query": "Summarize these papers", "document_contents": docs})
    assert (out["detected_intent"], out["strategy"]) == ("LITERATURE_SUMMARY", "multi_doc_summary")
    assert out["answer"] == "Both papers agree."
    final_prompt = fake_llm.stats().requests[-1]["messages"][0]["content"]
    assert "S1: anchors cut memory 3.1x." in final_prompt
    assert "S2: sections help QA." in final_prompt
    kinds = types(events)
    assert kinds.count("doc_summary_start") == 3 and kinds.count("doc_summary_complete") == 3
    assert "doc_summary_init" in kinds and "doc_summary_chunk" in kinds
    assert {u["node"] for u in out["usage"]} == {"summarize_document", "answer_generation"}


async def test_mode_type_overrides_recognition(fake_llm: FakeOpenAIServer) -> None:
    out, _ = await run_graph({
        "query": "What learning rate did they use?", "mode_type": "paper_review",
        "content": paper("en_retrieval_qa.md"),
    })
    assert (out["detected_intent"], out["intent_decided_by"]) == ("PAPER_REVIEW", "override")
    assert out["intent_confidence"] == 1.0
    assert "expert, fair referee" in fake_llm.stats().requests[-1]["messages"][0]["content"]


async def test_ambiguous_question_asks_the_llm(fake_llm: FakeOpenAIServer) -> None:
    fake_llm.configure(rules=[{
        "match": INTENT_RULE,
        "reply": 'Sure! ```json\n{"Intent": "论文评审", "confidence": "80%", "reason": "r"}\n```',
    }])
    out, _ = await run_graph({"query": "Thoughts?", "content": paper("en_retrieval_qa.md")})
    assert (out["detected_intent"], out["intent_decided_by"]) == ("PAPER_REVIEW", "llm")
    assert out["intent_confidence"] == 0.8


async def test_invalid_intent_is_retried_then_rules_decide(fake_llm: FakeOpenAIServer) -> None:
    fake_llm.configure(rules=[{"match": INTENT_RULE, "reply": '{"intent": "DANCE"}'}])
    out, _ = await run_graph(
        {"query": "Thoughts?", "content": paper("en_retrieval_qa.md")},
        Context(max_intent_recognition_retries=3),
    )
    intent_calls = [r for r in fake_llm.stats().requests
                    if INTENT_RULE in r["messages"][0]["content"]]
    assert len(intent_calls) == 3
    assert out["intent_decided_by"] == "fallback"
    assert out["answer"]


async def test_llm_failure_in_recognition_falls_back_to_rules(
    fake_llm: FakeOpenAIServer,
) -> None:
    fake_llm.configure(rules=[{"match": INTENT_RULE, "status": 500}])
    out, _ = await run_graph({"query": "Thoughts?", "content": paper("en_retrieval_qa.md")})
    assert out["intent_decided_by"] == "fallback"
    assert out["error"] is None and out["answer"]


async def test_recall_that_finds_nothing_is_a_clear_error_and_keeps_the_question(
    fake_llm: FakeOpenAIServer,
) -> None:
    out, events = await run_graph(
        {"query": "What learning rate did they use?", "content": paper("en_sparse_attention.md")},
        Context(max_context_tokens=3_000, similarity_threshold=1.0),  # the paper does not fit
    )
    assert out["strategy"] == "chunk_recall"
    assert (out["error"] or "").startswith("recall found nothing relevant")
    errors = [e for e in events if e["type"] == "node_error"]
    assert [e["node"] for e in errors] == ["evidence_selection"]
    assert types(events)[-1] == "error"
    messages = as_session_messages(out["messages"])
    assert [m.type for m in messages] == [MessageType.USER]  # the question is kept


async def test_several_documents_qa_goes_to_chunk_recall(fake_llm: FakeOpenAIServer) -> None:
    out, _ = await run_graph({
        "query": "Which dataset does each paper use?",
        "document_contents": {"a": paper("en_sparse_attention.md"),
                              "b": paper("en_retrieval_qa.md")},
    })
    assert (out["detected_intent"], out["strategy"]) == ("LITERATURE_QA", "chunk_recall")
    assert out["error"] is None and out["answer"]


async def test_chinese_question_gets_a_chinese_answer_prompt(fake_llm: FakeOpenAIServer) -> None:
    await run_graph({"query": "这篇论文的学习率是多少？",
                     "content": paper("en_sparse_attention.md")})
    system = fake_llm.stats().requests[-1]["messages"][0]["content"]
    assert "Write your answer in Chinese" in system
