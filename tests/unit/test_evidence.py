"""Evidence selection (nodes/evidence.py), and the bounds on summaries and partial reports.

bench/evidence.py measures the rule on the labelled questions; these tests pin
its properties on small fixtures, and that the graph uses it.
"""

from __future__ import annotations

from typing import Any

from scholarflow import Context
from scholarflow.llm.budget import answer_reserve
from scholarflow.nodes.citations import format_chunks
from scholarflow.nodes.evidence import (
    EvidenceRule,
    common_scores,
    deduplicate,
    is_reference_chunk,
    relevant,
    select_evidence,
)
from scholarflow.nodes.summary import SUMMARY_MAX_WORDS, TOKENS_PER_WORD_BOUND, summary_words
from scholarflow.state import RecalledChunkState
from scholarflow.tokens import count_tokens
from tests.conftest import SUMMARY_RULE, paper, run_graph
from tests.support import FakeOpenAIServer
from tests.support.embeddings import HashingEmbedder

ANSWER_RULE = "numbered passages recalled"  # CITED_MATERIAL_PROMPT
SUBQ_RULE = "search questions that together retrieve"  # SUB_QUESTION_GENERATION_PROMPT

ENTRIES = """[1] A. Vaswani, N. Shazeer, et al. Attention is all you need. In Proc. NeurIPS, 2017.
[2] K. He, X. Zhang, S. Ren, and J. Sun. Deep residual learning. In CVPR, pp. 770-778, 2016.
[3] J. Devlin, M. Chang, K. Lee. BERT: pre-training of deep bidirectional transformers. \
arXiv:1810.04805, 2018.
[4] 周宁、黄磊（2023）。多语言稠密检索中的难负例挖掘。《中文信息学报》，37(5)，88–97。"""


def chunk(cid: str, score: float, text: str = "", *, doc: str = "a", step: int = 1,
          heading: str | None = None) -> RecalledChunkState:
    return RecalledChunkState(step=step, doc_id=doc, chunk_id=cid, score=score,
                              text=text or f"Passage {cid} about learning rates.",
                              title=doc.upper(), location=heading or "", heading=heading)


def ids(chunks: list[RecalledChunkState]) -> list[str]:
    return [c["chunk_id"] for c in chunks]


def test_reference_lists_are_recognised_by_heading_or_by_their_entries() -> None:
    for heading in ("References", "Paper > 7 References", "参考文献", "Bibliography:",
                    "Works Cited", "VI. REFERENCES"):
        assert is_reference_chunk(chunk("r", 1, "Anything at all.", heading=heading)), heading
    assert is_reference_chunk(chunk("e", 1, ENTRIES, heading="Appendix"))  # no heading needed
    numbered = ("1. Hartmann, L., Okafor, R., and Tanaka, M. (2024). AnchorWindow. "
                "*Proceedings of the Conference on Efficient NLP*.\n") * 3
    assert is_reference_chunk(chunk("n", 1, numbered))
    # Prose that cites papers, results with years, a numbered method: not a reference list.
    prose = ("We follow Vaswani et al. (2017) [1] and He et al. (2016) [2]. Our model, trained "
             "in 2023 on 8 GPUs, improves BLEU by 2.1 points over the 2019 baseline [3].")
    steps = "1. Tokenise the text.\n2. Embed each chunk.\n3. Search the index.\n"
    for text, heading in ((prose, "2 Related Work"), (steps, "3 Method"), (prose, None)):
        assert not is_reference_chunk(chunk("p", 1, text, heading=heading)), text


async def test_a_reference_chunk_never_becomes_evidence_even_when_it_scores_best() -> None:
    recalled = [chunk("refs", 0.9, ENTRIES, heading="References"), chunk("body", 0.5)]
    assert ids(await select_evidence(recalled, 10_000)) == ["body"]
    assert await select_evidence(recalled[:1], 10_000) == []  # nothing but references: no evidence


def test_relevance_keeps_the_best_the_floor_allows_and_each_steps_best() -> None:
    rule = EvidenceRule(relative_floor=0.5, max_passages=3, step_passages=1, common_passages=0)
    # Step 1 found six passages, step 2 (another search) one, ranked 7th overall.
    recalled = [chunk(f"s{i}", 1.0 - 0.05 * i) for i in range(6)]
    recalled += [chunk("other", 0.6, step=2), chunk("weak", 0.3, step=3)]
    chosen = relevant(recalled, sorted(recalled, key=lambda c: -c["score"]), (), rule)
    # The 3 best overall, and step 2's best; "weak" is its step's best but under half the best.
    assert ids(chosen) == ["s0", "s1", "s2", "other"]


def test_each_document_a_step_was_aimed_at_keeps_its_best_passage() -> None:
    rule = EvidenceRule(relative_floor=0.8, max_passages=2, step_passages=0, common_passages=0)
    recalled = [chunk("a1", 1.0, doc="a"), chunk("a2", 0.95, doc="a"),
                chunk("b1", 0.2, doc="b", step=2), chunk("b2", 0.1, doc="b", step=2),
                chunk("c1", 0.3, doc="c", step=3)]
    chunks = sorted(recalled, key=lambda c: -c["score"])
    assert ids(relevant(recalled, chunks, {"b"}, rule)) == ["a1", "a2", "b1"]  # not c: not aimed
    assert ids(relevant(recalled, chunks, (), rule)) == ["a1", "a2"]


# Two recall steps, each scaled by its own best: step 2's every chunk scored low
# (a paraphrased question), so the one that answers ranks last overall.
STEPS = [chunk("a1", 1.0, "Sparse attention keeps a sliding window of tokens.", doc="a"),
         chunk("a2", 0.95, "The window size trades memory for context length.", doc="a"),
         chunk("a3", 0.9, "Global tokens attend to every position in the sequence.", doc="a"),
         chunk("b1", 0.5, "Retrieval uses dense passage vectors and BM25.", doc="b", step=2),
         chunk("b2", 0.45, "SectionRAG was fine-tuned with a learning rate of 2e-5 and a "
               "batch size of 32.", doc="b", step=2)]
QUESTION = "Which learning rate and batch size was SectionRAG fine-tuned with?"


async def test_the_common_score_ranks_every_step_against_the_question() -> None:
    for embedder in (False, HashingEmbedder()):  # lexical alone, and with a cosine
        scores = await common_scores(QUESTION, STEPS, embedder=embedder)
        assert max(scores, key=scores.__getitem__) == "b2", embedder
        assert all(0.0 <= s <= 1.0 for s in scores.values())
    assert await common_scores(QUESTION, [], embedder=False) == {}


def test_the_common_scores_best_are_kept_besides_the_recall_rule() -> None:
    rule = EvidenceRule(relative_floor=0.55, max_passages=2, step_passages=0,
                        common_passages=0)
    common = {"a1": 0.2, "a2": 0.1, "a3": 0.05, "b1": 0.3, "b2": 0.9}
    assert ids(relevant(STEPS, STEPS, (), rule, common)) == ["a1", "a2"]  # not used: off
    with_best = EvidenceRule(relative_floor=0.55, max_passages=2, step_passages=0,
                             common_passages=2, common_floor=0.5, dense=False)
    # b2 is the common score's best; b1 its second but under half of b2's score.
    assert ids(relevant(STEPS, STEPS, (), with_best, common)) == ["a1", "a2", "b2"]
    per_doc = EvidenceRule(relative_floor=0.55, max_passages=1, step_passages=0,
                           common_passages=0, doc_passages=1)
    assert ids(relevant(STEPS, STEPS, (), per_doc, common)) == ["a1", "b2"]


async def test_select_evidence_rescores_with_the_question_when_the_rule_says_so() -> None:
    rule = EvidenceRule(relative_floor=0.55, max_passages=2, step_passages=0,
                        common_passages=1, dense=False)
    assert ids(await select_evidence(STEPS, 10_000, question=QUESTION, rule=rule)) == [
        "a1", "a2", "b2"]
    # Without the question (or a rule that does not use it), the recall scores alone.
    assert ids(await select_evidence(STEPS, 10_000, rule=rule)) == ["a1", "a2"]


def test_duplicates_are_dropped_and_a_cut_paragraphs_overlap_trimmed() -> None:
    words = [f"w{i}" for i in range(120)]
    first = chunk("a:1", 0.9, " ".join(words[:80]))
    nxt = chunk("a:2", 0.8, " ".join(words[50:120]))  # repeats w50..w79 of the first
    copy = chunk("b:7", 0.7, "  ".join(words[10:40]), doc="b")  # inside the first, spaced apart
    zh = chunk("a:3", 0.6, "甲乙丙丁" * 30)
    zh_next = chunk("a:4", 0.5, "甲乙丙丁" * 25 + "戊己庚")
    out = deduplicate([first, nxt, copy, zh, zh_next])
    assert ids(out) == ["a:1", "a:2", "a:3", "a:4"]
    assert out[1]["text"] == " ".join(words[80:120])
    assert out[3]["text"] == "戊己庚"
    assert out[0] is first  # untouched chunks are the same objects
    assert deduplicate([nxt, chunk("z:1", 0.1, " ".join(words[50:120]), doc="z")]) == [nxt]


async def test_selection_fits_the_room_best_first_and_cuts_only_a_lone_best() -> None:
    recalled = [chunk(f"c{i}", 1.0 - 0.01 * i, f"token{i} " * 300) for i in range(10)]
    room = 3 * (count_tokens(format_chunks(recalled[:1])) + 2) + 10
    kept = await select_evidence(recalled, room)
    assert ids(kept) == ["c0", "c1", "c2"]
    assert count_tokens(format_chunks(kept)) <= room
    cut = await select_evidence(recalled, 100)
    assert ids(cut) == ["c0"] and count_tokens(format_chunks(cut)) <= 100


async def test_the_answer_prompt_gets_the_relevant_passages_not_everything(
    fake_llm: FakeOpenAIServer,
) -> None:
    """Four papers, a question about one: the prompt holds fewer passages than recall
    found, and no reference list even though the question names cited papers."""
    fake_llm.configure(rules=[{"match": SUBQ_RULE, "reply": "no JSON"},
                              {"match": ANSWER_RULE, "reply": "It is 2e-5 [1]."}])
    docs = {name: paper(f"{name}.md") for name in
            ("en_retrieval_qa", "en_sparse_attention", "zh_hybrid_retrieval",
             "zh_multidoc_summary")}
    out, events = await run_graph({
        "query": "Which learning rate does SectionRAG use, and does it cite Dense Passage "
                 "Retrieval for Scholarly Search?", "document_contents": docs})
    assert out["error"] is None and out["strategy"] == "chunk_recall", out["error"]
    recalled = sum(e["chunks"] for e in events
                   if e["type"] == "node_complete" and e["node"] == "recall_step")
    prompt = next(str(r["messages"][0]["content"]) for r in fake_llm.stats().requests
                  if ANSWER_RULE in str(r["messages"]))
    assert 4 <= prompt.count("<chunk n=") < recalled  # each paper heard, not all recalled
    assert "Lindqvist" not in prompt and "Robertson, S." not in prompt  # the reference lists
    assert "2e-5" in prompt  # the passage that answers


def test_summary_length_scales_down_with_a_small_window_only() -> None:
    assert summary_words(Context(max_context_tokens=128_000)) == SUMMARY_MAX_WORDS
    small = Context(max_context_tokens=4_096, reserved_answer_tokens=1_024)
    words = summary_words(small)
    assert words < SUMMARY_MAX_WORDS
    # Ten summaries at the bound still fit one prompt of the small window.
    assert 10 * words * TOKENS_PER_WORD_BOUND <= 4_096 - 1_024


async def test_summaries_and_partial_reports_carry_a_length_bound(
    fake_llm: FakeOpenAIServer,
) -> None:
    fake_llm.configure(rules=[
        {"match": SUMMARY_RULE, "reply": " ".join(f"finding{i}" for i in range(400))},
        {"match": "You are writing part", "reply": "Partial report."},
        {"match": "intermediate reports", "reply": "MERGED ANSWER"},
    ])
    # Summaries of ~1000 tokens (the scripted server ignores the bound): 30 of them
    # need ~4 groups, so each report's share of the merge is under the answer reserve.
    ctx = Context(max_context_tokens=14_000, reserved_answer_tokens=4_000,
                  system_tokens_estimate=500, approval_documents=None)  # 30: no pause
    docs = {f"d{i}": f"# Paper {i}\n\n" + "text " * 200 for i in range(30)}
    out, _ = await run_graph({"query": "Summarize these papers", "document_contents": docs},
                             ctx)
    assert out["answer"] == "MERGED ANSWER", out["error"]
    requests: list[dict[str, Any]] = fake_llm.stats().requests
    summaries = [r for r in requests if SUMMARY_RULE in str(r["messages"])]
    reports = [r for r in requests if "You are writing part" in str(r["messages"])]
    words = summary_words(ctx)
    assert len(summaries) == 30 and len(reports) >= 2
    for r in summaries:  # the bound, and the prompt asks for that length
        assert r["max_tokens"] == words * TOKENS_PER_WORD_BOUND
        assert f"about {words} words" in str(r["messages"][0]["content"])
    bounds = {r["max_tokens"] for r in reports}
    assert len(bounds) == 1 and (bound := bounds.pop()) < answer_reserve(ctx)
    # The reports together fit one merge prompt's material.
    assert len(reports) * bound < ctx.max_context_tokens - answer_reserve(ctx)
