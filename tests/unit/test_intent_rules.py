"""Keyword rules for intent recognition: accuracy on the routing set and key cases."""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path

import pytest

from scholarflow.intents import Intent
from scholarflow.nodes.intent_rules import RuleVerdict, classify_by_rules

DATA = Path(__file__).parents[1] / "data" / "route_queries.jsonl"


def _load() -> list[dict[str, str]]:
    with DATA.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


ROWS = _load()


def test_route_set_is_balanced() -> None:
    assert len(ROWS) >= 150
    langs = Counter(row["lang"] for row in ROWS)
    assert set(langs) == {"zh", "en"}
    assert min(langs.values()) >= 0.4 * len(ROWS)
    per_intent = Counter(row["intent"] for row in ROWS)
    assert set(per_intent) == {i.value for i in Intent}
    assert min(per_intent.values()) >= 25
    assert len({row["query"] for row in ROWS}) == len(ROWS), "duplicate queries"


def test_accuracy_and_recall_on_route_set() -> None:
    total: Counter[str] = Counter()
    right: Counter[str] = Counter()
    confusions: Counter[tuple[str, str]] = Counter()
    misses: list[str] = []
    for row in ROWS:
        verdict = classify_by_rules(row["query"], has_documents=True)
        total[row["intent"]] += 1
        if verdict.intent == row["intent"]:
            right[row["intent"]] += 1
        else:
            confusions[(row["intent"], verdict.intent.value)] += 1
            misses.append(f"  {row['intent']} -> {verdict.intent.value}: {row['query']}")
    accuracy = sum(right.values()) / len(ROWS)
    recall = {intent: right[intent] / total[intent] for intent in total}
    report = "\n".join(
        [f"accuracy {accuracy:.3f} over {len(ROWS)} queries"]
        + [f"  recall {intent}: {value:.3f}" for intent, value in sorted(recall.items())]
        + [f"  confused {a} -> {b}: {n}" for (a, b), n in confusions.most_common()]
        + misses[:40]
    )
    print(report)
    assert accuracy >= 0.95, report
    assert min(recall.values()) >= 0.80, report


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        # the cases named in the brief
        ("summarize the weaknesses", Intent.PAPER_REVIEW),
        ("Summarize the weaknesses of the proposed method.", Intent.PAPER_REVIEW),
        ("write a literature review", Intent.REVIEW_GENERATION),
        ("Write a literature review based on these papers.", Intent.REVIEW_GENERATION),
        ("review this paper", Intent.PAPER_REVIEW),
        ("总结一下这几篇论文的研究现状", Intent.REVIEW_GENERATION),
        ("你好，帮我总结一下", Intent.LITERATURE_SUMMARY),
        # the spec's trigger examples
        ("你好", Intent.SIMPLE_INTERACTION),
        ("你能做什么", Intent.SIMPLE_INTERACTION),
        ("总结一下", Intent.LITERATURE_SUMMARY),
        ("这篇论文讲了什么", Intent.LITERATURE_SUMMARY),
        ("写一篇文献综述", Intent.REVIEW_GENERATION),
        ("综合分析这些论文", Intent.REVIEW_GENERATION),
        ("评审这篇论文", Intent.PAPER_REVIEW),
        ("有什么缺陷", Intent.PAPER_REVIEW),
        ("使用了什么数据集", Intent.LITERATURE_QA),
        ("学习率是多少", Intent.LITERATURE_QA),
        # overlaps and negations
        ("what is this paper about?", Intent.LITERATURE_SUMMARY),
        ("这几篇论文分别讲了什么", Intent.LITERATURE_SUMMARY),  # 分别 holds 别, not a negation
        ("不要总结，直接告诉我用了什么数据集", Intent.LITERATURE_QA),
        ("don't summarize it, just tell me the learning rate", Intent.LITERATURE_QA),
        ("not a summary, I want a critique", Intent.PAPER_REVIEW),
        ("How was the model evaluated?", Intent.LITERATURE_QA),  # not an evaluation of the paper
        ("用的什么评价指标", Intent.LITERATURE_QA),
        ("Generate a review article integrating all five papers", Intent.REVIEW_GENERATION),
        ("这篇论文比较了哪些方法", Intent.LITERATURE_QA),  # comparing inside one paper
        ("周末去哪玩比较好", Intent.SIMPLE_INTERACTION),  # 比较 as "rather"
        ("帮我summarize一下这个pdf", Intent.LITERATURE_SUMMARY),  # mixed scripts
        ("帮我review一下这篇paper", Intent.PAPER_REVIEW),
        ("ＨＥＬＬＯ！", Intent.SIMPLE_INTERACTION),  # full-width
        # "earlier" is chat as an adverb ending its clause, not before a noun
        ("what did you say earlier?", Intent.SIMPLE_INTERACTION),
        ("which earlier studies does the introduction go over", Intent.LITERATURE_QA),
    ],
)
def test_specific_cases(query: str, expected: Intent) -> None:
    verdict = classify_by_rules(query, has_documents=True)
    assert verdict.intent is expected, verdict


@pytest.mark.parametrize(
    "query",
    [
        "hi",
        "你好",
        "谢谢",
        "总结一下",
        "Summarize this paper.",
        "写一篇文献综述",
        "review this paper",
        "这篇论文有什么缺陷？",
        "What dataset did they use?",
        "学习率是多少",
        "who are you",
        "你好，帮我总结一下",
        "Can you summarize this paper?",
    ],
)
def test_clear_cases_are_unambiguous(query: str) -> None:
    verdict = classify_by_rules(query, has_documents=True)
    assert verdict.unambiguous, verdict
    assert verdict.confidence >= 0.7


@pytest.mark.parametrize(
    "query",
    [
        "summarize the weaknesses",  # a task verb against a task object
        "总结一下这几篇论文的研究现状",
        "summarize and critique this paper",
        "compare",  # one weak cue
        "方法呢？",  # only weak cues
        "what is BERT?",  # nothing matched: a fallback guess
        "BERT",
        "",
    ],
)
def test_mixed_or_unclear_cases_are_ambiguous(query: str) -> None:
    verdict = classify_by_rules(query, has_documents=True)
    assert not verdict.unambiguous, verdict


def test_fallback_always_guesses() -> None:
    # Nothing matches: with documents a content question is about them ...
    assert classify_by_rules("what is BERT?", has_documents=True).intent is Intent.LITERATURE_QA
    # ... without documents it is conversation, unless it names a paper.
    assert classify_by_rules("what is BERT?", has_documents=False).intent is (
        Intent.SIMPLE_INTERACTION
    )
    no_docs = classify_by_rules("为什么这篇论文这样做", has_documents=False)
    assert no_docs.intent is Intent.LITERATURE_QA
    # Short plain chatter is chat even with documents attached.
    assert classify_by_rules("下次再聊", has_documents=True).intent is Intent.SIMPLE_INTERACTION
    for query in ["", "   ", "?!", "🙂", "\n\t"]:
        verdict = classify_by_rules(query, has_documents=True)
        assert verdict.intent is Intent.SIMPLE_INTERACTION
        assert not verdict.unambiguous


def test_verdict_shape() -> None:
    for row in ROWS[:50]:
        for has_documents in (True, False):
            verdict = classify_by_rules(row["query"], has_documents=has_documents)
            assert isinstance(verdict, RuleVerdict)
            assert isinstance(verdict.intent, Intent)
            assert 0.0 <= verdict.confidence <= 1.0
            assert verdict.reason
    verdict = classify_by_rules("总结一下", has_documents=True)
    assert "总结" in verdict.reason and "LITERATURE_SUMMARY" in verdict.reason
    with pytest.raises(AttributeError):
        verdict.intent = Intent.LITERATURE_QA  # type: ignore[misc]


def test_fast_enough() -> None:
    # Not a benchmark: a generous bound that only catches a regex gone quadratic.
    queries = [row["query"] for row in ROWS]
    start = time.perf_counter()
    for i in range(1000):
        classify_by_rules(queries[i % len(queries)], has_documents=True)
    assert time.perf_counter() - start < 5.0
    pathological = ["a" * 50_000, "这些" * 20_000, "what " * 10_000 + "about", "不要" * 10_000]
    for query in pathological:
        start = time.perf_counter()
        classify_by_rules(query, has_documents=True)
        assert time.perf_counter() - start < 1.0


def test_long_paste_keeps_the_request_at_either_end() -> None:
    passage = "The model is trained on a corpus of web text. " * 200
    head = classify_by_rules("Summarize this: " + passage, has_documents=True)
    tail = classify_by_rules(passage + " 总结一下上面这段", has_documents=True)
    assert head.intent is Intent.LITERATURE_SUMMARY
    assert tail.intent is Intent.LITERATURE_SUMMARY


@pytest.mark.parametrize(("query", "intent", "unambiguous"), [
    # no cue but a question beside a document: a guess the LLM is asked to confirm
    ("Could you go over the attention part of this?", Intent.LITERATURE_QA, False),
    ("Would you walk me through the second part of this?", Intent.LITERATURE_SUMMARY, True),
])
def test_a_you_question_beside_a_document_is_not_taken_as_chat(
    query: str, intent: Intent, unambiguous: bool
) -> None:
    # Seen with a real model (bench/real_model.py): the rules took the first as chat,
    # unambiguously, so the attached paper was never read.
    with_paper = classify_by_rules(query, has_documents=True)
    assert (with_paper.intent, with_paper.unambiguous) == (intent, unambiguous), with_paper
    # A real chat cue still decides beside a document.
    chat = classify_by_rules("Could you tell me a joke?", has_documents=True)
    assert chat.intent is Intent.SIMPLE_INTERACTION and chat.unambiguous
