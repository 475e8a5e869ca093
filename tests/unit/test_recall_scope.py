"""Recall over a knowledge base and documents given directly, in one request.

`ask --kb lab --doc ID --file paper.md`: the stored document is searched in
its knowledge base, the file in the scratch one, and the chunks of both are
merged by score. Documents named by id without `--kb` live in "default".
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from scholarflow.ingest.documents import document_from_text
from scholarflow.ingest.pipeline import add_document
from scholarflow.nodes.recall_scope import recall_scope
from scholarflow.retrieval.index import DEFAULT_KB
from scholarflow.retrieval.kb import KnowledgeBase
from scholarflow.retrieval.kb_registry import open_knowledge_base
from scholarflow.state import DocumentInfo
from tests.conftest import SUMMARY_RULE, big_paper, paper, run_graph, small_context
from tests.support import FakeOpenAIServer

SUBQ_RULE = "search questions that together retrieve"  # SUB_QUESTION_GENERATION_PROMPT
ANSWER_RULE = "numbered passages recalled"  # CITED_MATERIAL_PROMPT


def _info(doc_id: str) -> DocumentInfo:
    return DocumentInfo(doc_id=doc_id, title=doc_id, tokens=1, content_hash=doc_id)


def test_recall_scope_keeps_stored_and_given_documents_apart() -> None:
    docs = [_info("stored"), _info("given")]
    assert recall_scope("lab", ["stored"], docs, {"given": "text"}) == (
        "lab", ["stored"], ["given"])
    assert recall_scope("lab", [], docs, {"given": "text"}) == ("lab", [], ["given"])
    assert recall_scope(None, ["stored"], docs, {"given": "text"}) == (
        DEFAULT_KB, ["stored"], ["given"])
    assert recall_scope(None, [], [_info("given")], {"given": "text"}) == (None, [], ["given"])


def _prompt(server: FakeOpenAIServer, rule: str) -> str:
    requests = [r for r in server.stats().requests if rule in str(r["messages"])]
    assert len(requests) == 1
    return str(requests[0]["messages"][0]["content"])


@pytest.fixture
async def lab(fake_llm: FakeOpenAIServer) -> KnowledgeBase:
    """Knowledge base "lab" holding en_sparse_attention.md as "anchor"."""
    kb = await open_knowledge_base("lab", create=True)
    await add_document(kb, document_from_text(paper("en_sparse_attention.md"), doc_id="anchor"))
    return kb


async def test_a_knowledge_base_and_a_given_file_are_both_searched(
    fake_llm: FakeOpenAIServer, lab: KnowledgeBase,
) -> None:
    await add_document(lab, document_from_text(paper("zh_hybrid_retrieval.md"), doc_id="other"))
    fake_llm.configure(rules=[
        {"match": SUBQ_RULE, "reply": "no JSON: the question is the one step"},
        {"match": ANSWER_RULE, "reply": "Both [1][2]."},
    ])
    out, _events = await run_graph({
        "query": "Which learning rate and batch size does each paper use?", "kb": "lab",
        "doc_ids": ["anchor"], "document_contents": {"rag": paper("en_retrieval_qa.md")},
        "mode_type": "LITERATURE_QA",
    })
    assert out["error"] is None, out["error"]
    assert out["strategy"] == "chunk_recall"
    prompt = _prompt(fake_llm, ANSWER_RULE)
    chunks = prompt[prompt.index("<chunk"):]
    assert "3e-4" in chunks and "2e-5" in chunks  # from the stored document and from the file
    assert {s["doc_id"] for s in out["sources"]} <= {"anchor", "rag"}


@pytest.mark.usefixtures("lab")
async def test_a_step_aimed_at_the_given_file_searches_it_with_a_kb_named(
    fake_llm: FakeOpenAIServer,
) -> None:
    fake_llm.configure(rules=[
        {"match": SUBQ_RULE, "reply": '{"sub_questions": ['
         '{"question": "learning rate", "doc_id": "rag"}]}'},
        {"match": ANSWER_RULE, "reply": "It is [1]."},
    ])
    out, _events = await run_graph({
        "query": "Which learning rate does SectionRAG use?", "kb": "lab",
        "doc_ids": ["anchor"], "document_contents": {"rag": paper("en_retrieval_qa.md")},
        "mode_type": "LITERATURE_QA",
    })
    assert out["error"] is None, out["error"]
    assert [s["doc_id"] for s in out["sources"]] == ["rag"]


async def test_a_large_given_file_summarised_with_a_kb_named_uses_its_own_chunks(
    fake_llm: FakeOpenAIServer,
) -> None:
    kb = await open_knowledge_base("lab", create=True)
    await add_document(kb, document_from_text("# Small\n\nA short stored note.", doc_id="note"))
    fake_llm.configure(rules=[
        {"match": SUMMARY_RULE, "reply": "summary"},
        {"match": "summarise a set", "reply": "ALL"},
    ])
    out, _events = await run_graph({"query": "Summarize these papers", "kb": "lab",
                                    "doc_ids": ["note"],
                                    "document_contents": {"big": big_paper()}},
                                   small_context())
    assert out["error"] is None and out["answer"] == "ALL", out["error"]
    prompts = [str(r["messages"][0]["content"]) for r in fake_llm.stats().requests
               if SUMMARY_RULE in str(r["messages"])]
    assert any("AnchorWindow" in p for p in prompts)  # the big file's key chunks, not nothing


async def test_documents_named_by_id_without_a_kb_are_recalled_from_default(
    fake_llm: FakeOpenAIServer,
) -> None:
    kb = await open_knowledge_base(DEFAULT_KB, create=True)
    await add_document(kb, document_from_text(paper("en_sparse_attention.md"), doc_id="anchor"))
    await add_document(kb, document_from_text(paper("en_retrieval_qa.md"), doc_id="rag"))
    fake_llm.configure(rules=[
        {"match": SUBQ_RULE, "reply": "no JSON: the question is the one step"},
        {"match": ANSWER_RULE, "reply": "Both [1][2]."},
    ])
    out, _events = await run_graph({
        "query": "Which learning rate and batch size does each paper use?",
        "doc_ids": ["anchor", "rag"], "mode_type": "LITERATURE_QA",
    })
    assert out["error"] is None, out["error"]
    assert out["strategy"] == "chunk_recall" and len(out["sources"]) == 2


def test_the_scratch_folder_is_measured_while_a_snapshot_renames_its_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A background snapshot write renames its temporary file over the snapshot at any
    moment: a file listed and gone before it is measured counts nothing, not an error."""
    from scholarflow.nodes import recall_scope as scope

    (tmp_path / "chunks.sqlite").write_bytes(b"x" * 100)
    vanishing = tmp_path / "snapshot.npzab12.tmp"
    vanishing.write_bytes(b"y" * 50)
    real_stat = Path.stat
    seen: list[Path] = []

    def stat(path: Path, **kwargs: Any) -> Any:
        if path == vanishing and path in seen:  # renamed after `is_file`, before its size
            path.unlink(missing_ok=True)
        seen.append(path)
        return real_stat(path, **kwargs)

    monkeypatch.setattr(Path, "stat", stat)
    assert scope._folder_bytes(tmp_path) == 100
