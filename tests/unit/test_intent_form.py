"""A precise question about a finding goes to recall by the rules alone; a task does not.

Every case here is written for the behaviour, about made-up findings of any field;
none comes from a benchmark. Each states the route the rules must give it, with
documents attached (as intent recognition always runs with them).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from scholarflow.intents import Intent
from scholarflow.nodes.intent_form import (
    content_terms,
    is_precise_question,
    is_question,
    misspelt_task,
    names_a_task,
)
from scholarflow.nodes.intent_rules import asks_for_no_task, classify_by_rules

PRECISE = Path(__file__).parents[1] / "data" / "route_precise.jsonl"
QA, SUMMARY, REVIEW, CRITIQUE, CHAT = (Intent.LITERATURE_QA, Intent.LITERATURE_SUMMARY,
                                       Intent.REVIEW_GENERATION, Intent.PAPER_REVIEW,
                                       Intent.SIMPLE_INTERACTION)


@pytest.mark.parametrize("query", [
    # words that name a task elsewhere are the topic of these questions
    "Which soil bacteria showed the greatest differences in abundance after fertilisation?",
    "How many genes changed expression in the treated mice compared to placebo?",
    "How was tumour volume assessed in the xenograft experiments?",
    "Is a 10 mM dose sufficient to block glucose uptake in neurons?",
    "What is the relationship between household income and vaccination uptake?",
    "During directed evolution of the enzyme, which mutation raised thermostability most?",
    "Were the strengths of the hydrogen bonds measured by infrared spectroscopy?",
    "Which summary statistic was used to describe the skewed cytokine data?",
    "In which cities did the field trials run?",
    "How significant was the reduction in HbA1c in the treatment group?",
    # forms: a leading clause, a wh-word inside, yes/no, no question mark, a frame
    "Relative to wild-type plants, how much taller did the overexpression lines grow?",
    "Knockdown of which kinase abolished the migration of the fibroblasts?",
    "Does deletion of the C-terminal domain abolish binding of the kinase to its scaffold?",
    "what dropout rate did the authors use when fine-tuning on the small dataset",
    "Can you tell me which buffer was used for the size-exclusion chromatography?",
    # Chinese
    "在该研究中，治疗组的中位总生存期是多少？",
    "哪个残基被蛋白激酶A磷酸化？",
    "该综合征患者的平均发病年龄是多少？",
    "缺陷型突变体在高温下的存活率是多少？",
    "对照组与治疗组的血压差异是多少？",
    "请问野生小麦的哪个群体遗传多样性最高？",
])
def test_a_precise_question_is_qa_sure_enough_to_skip_the_llm(query: str) -> None:
    verdict = classify_by_rules(query, has_documents=True)
    assert verdict.intent is QA, verdict
    assert verdict.unambiguous, verdict
    assert verdict.tasks == (), verdict
    assert verdict.reason.startswith("a question about a finding"), verdict


@pytest.mark.parametrize(("query", "expected"), [
    ("Summarize what these papers found about soil bacteria and nitrogen.", SUMMARY),
    ("What are the main findings of this paper?", SUMMARY),
    ("总结一下这些论文关于土壤细菌的发现", SUMMARY),
    ("Write a literature review on directed evolution of enzymes based on these papers.",
     REVIEW),
    ("比较这几篇论文的方法并写一篇综述", REVIEW),
    ("How do these studies differ in how they measure vaccination uptake?", REVIEW),
    ("Review the methods of this paper.", CRITIQUE),
    ("Is the sample size sufficient to support the paper's conclusions?", CRITIQUE),
    ("How convincing is the evidence that the drug extends lifespan?", CRITIQUE),
    ("What are the biggest weaknesses in the methodology?", CRITIQUE),
    ("这项研究的样本量是否充分？", CRITIQUE),
])
def test_a_question_that_asks_for_a_task_keeps_its_task(query: str, expected: Intent) -> None:
    verdict = classify_by_rules(query, has_documents=True)
    assert verdict.intent is expected, verdict
    assert verdict.tasks, verdict  # the guard lets a model's task verdict stand
    assert not asks_for_no_task(query, verdict)


@pytest.mark.parametrize(("query", "expected"), [
    ("What's the weather like in Shanghai today?", CHAT),  # everyday words only
    ("What is the tallest mountain in the world?", CHAT),
    ("推荐几部好看的电影", CHAT),
    ("What is this paper about?", SUMMARY),  # about the work, no research term
    ("Is the methodology sound?", CRITIQUE),
])
def test_questions_that_are_not_precise_are_left_to_the_other_rules(
    query: str, expected: Intent
) -> None:
    verdict = classify_by_rules(query, has_documents=True)
    assert not verdict.reason.startswith("a question about a finding"), verdict
    assert verdict.intent is expected, verdict


def test_a_question_about_the_user_is_left_to_the_llm() -> None:
    verdict = classify_by_rules("how do I upload my files here?", has_documents=True)
    assert not verdict.unambiguous, verdict


def test_an_everyday_word_beside_enough_research_terms_does_not_make_a_question_chat() -> None:
    verdict = classify_by_rules(
        "At what temperature does the thin film undergo the superconducting transition?",
        has_documents=True)
    assert (verdict.intent, verdict.unambiguous) == (QA, True), verdict


def test_without_documents_a_general_question_is_not_forced_to_recall() -> None:
    query = "Which country has the largest population in Africa?"
    assert classify_by_rules(query, has_documents=False).intent is CHAT
    # ... but naming a paper makes it a question about one.
    named = classify_by_rules("In this paper, which residue does the kinase phosphorylate?",
                              has_documents=False)
    assert (named.intent, named.unambiguous) == (QA, True), named


@pytest.mark.parametrize(("text", "question"), [
    ("which residue binds the zinc ion?", True),
    ("deleting which residues reduces binding?", True),
    ("is the dose sufficient to block uptake", True),
    ("the gene has two introns, do they splice in order?", True),
    ("哪个残基被蛋白激酶A磷酸化？", True),
    ("summarize these papers", False),
    ("can you summarize the results?", False),  # a request, not a question
    ("what can you do?", False),  # about the assistant
    ("thoughts?", False),  # no interrogative
    ("帮我总结一下这篇论文", False),
])
def test_question_form(text: str, question: bool) -> None:
    assert is_question(text) is question


def test_content_terms_leave_out_grammar_the_work_and_task_words() -> None:
    assert content_terms("what is this paper about?") == []
    assert content_terms("what are the weaknesses of the proposed method?") == []
    assert content_terms("which residue binds the zinc ion?") == ["residue", "binds", "zinc", "ion"]
    assert content_terms("实验中使用的乙醇浓度是多少？") == ["乙醇", "浓度"]
    assert is_precise_question("which residue binds the zinc ion?")
    assert not is_precise_question("which residue binds the zinc ion?", min_terms=5)


@pytest.mark.parametrize(("before", "cue", "after", "task"), [
    ("how many genes changed ", "compared", " to placebo?", False),  # a relation word
    ("is a 10 mm dose ", "sufficient", " to block uptake?", False),  # a complement
    ("is the evaluation ", "sufficient", "?", True),  # the clause ends on it
    ("is the sample size ", "sufficient", " to support the claims?", True),  # about the work
    ("", "how convincing", " is the evidence?", True),  # a judgement put first
    ("", "how significant", " was the reduction?", False),  # a statistical word
    ("were the ", "strengths", " of the hydrogen bonds measured?", False),  # a noun of the topic
    ("what are the ", "strengths", " of this study?", True),
    ("which genes rose? ", "summarize", " them.", True),  # a verb: the task itself
])
def test_names_a_task(before: str, cue: str, after: str, task: bool) -> None:
    assert names_a_task(cue, before, after) is task


@pytest.mark.parametrize(("text", "found"), [
    ("sumarize the paper pls", "sumarize"),
    ("wrtie a literature reivew for these papers", "reivew"),
    ("critiqe this", "critiqe"),
    ("limitation of detection", None),  # a form of the word, not a misspelling
    ("reverse transcription rate", None),
    ("which reviews mention the kinase", None),
])
def test_misspelt_task(text: str, found: str | None) -> None:
    assert misspelt_task(text) == found


def test_own_eval_set_of_precise_questions_and_near_miss_tasks() -> None:
    rows = [json.loads(line) for line in PRECISE.read_text(encoding="utf-8").splitlines()]
    assert {r["lang"] for r in rows if r["intent"] == QA} == {"en", "zh"}
    assert len({r["intent"] for r in rows}) == 4  # QA and the three tasks, as near misses
    misses: Counter[tuple[str, str]] = Counter()
    for row in rows:
        verdict = classify_by_rules(row["query"], has_documents=True)
        if row["intent"] == QA:
            # Every precise question decided by the rules, without the LLM.
            assert (verdict.intent, verdict.unambiguous) == (QA, True), row
        elif verdict.intent != row["intent"]:
            misses[(row["intent"], verdict.intent.value)] += 1
        if row["intent"] != QA:
            assert verdict.tasks, row  # a task is always seen as one by the guard
    assert sum(misses.values()) / len(rows) <= 0.05, misses
