"""Parsing the intent LLM's reply: every drift we have seen, and the invalid cases."""

from __future__ import annotations

import pytest

from scholarflow.intents import Intent
from scholarflow.nodes.intent_parse import ParsedIntent, intent_from_name, parse_intent_reply


def test_plain_json() -> None:
    parsed = parse_intent_reply(
        '{"intent": "LITERATURE_QA", "confidence": 0.92, "reason": "asks for a dataset"}'
    )
    assert parsed == ParsedIntent(Intent.LITERATURE_QA, 0.92, "asks for a dataset")


@pytest.mark.parametrize(
    "reply",
    [
        '```json\n{"intent": "PAPER_REVIEW", "confidence": 0.8, "reason": "critique"}\n```',
        '```\n{"intent": "PAPER_REVIEW", "confidence": 0.8, "reason": "critique"}\n```',
        'Sure! Here is my answer:\n{"intent": "PAPER_REVIEW", "confidence": 0.8, '
        '"reason": "critique"}\nLet me know if you need more.',
        "{'intent': 'PAPER_REVIEW', 'confidence': 0.8, 'reason': 'critique'}",
        '{"intent": "PAPER_REVIEW", "confidence": 0.8, "reason": "critique",}',
        '{"Intent": "PAPER_REVIEW", "CONFIDENCE": 0.8, "Reason": "critique"}',
        '{“intent”: “PAPER_REVIEW”, “confidence”: 0.8, “reason”: “critique”}',
        '<think>maybe LITERATURE_QA? no.</think>{"intent": "PAPER_REVIEW", '
        '"confidence": 0.8, "reason": "critique"}',
        '{"result": {"intent": "PAPER_REVIEW", "confidence": 0.8, "reason": "critique"}}',
    ],
)
def test_json_drift(reply: str) -> None:
    parsed = parse_intent_reply(reply)
    assert parsed == ParsedIntent(Intent.PAPER_REVIEW, 0.8, "critique")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("literature qa", Intent.LITERATURE_QA),
        ("Literature-Summary", Intent.LITERATURE_SUMMARY),
        ("review_generation", Intent.REVIEW_GENERATION),
        (" Simple Interaction ", Intent.SIMPLE_INTERACTION),
        ("Intent.PAPER_REVIEW", Intent.PAPER_REVIEW),
        ("LITERATURE_QA (文献问答)", Intent.LITERATURE_QA),
        ("简单交互", Intent.SIMPLE_INTERACTION),
        ("文献总结", Intent.LITERATURE_SUMMARY),
        ("综述生成", Intent.REVIEW_GENERATION),
        ("论文评审", Intent.PAPER_REVIEW),
        ("文献问答", Intent.LITERATURE_QA),
        ("文献综述", Intent.REVIEW_GENERATION),
        ("问答", Intent.LITERATURE_QA),
        ("闲聊", Intent.SIMPLE_INTERACTION),
        ("审稿", Intent.PAPER_REVIEW),
        ("literature review", Intent.REVIEW_GENERATION),
        ("QA", Intent.LITERATURE_QA),
    ],
)
def test_intent_names_in_any_form(value: str, expected: Intent) -> None:
    parsed = parse_intent_reply(f'{{"intent": "{value}", "confidence": 0.7, "reason": "r"}}')
    assert parsed is not None and parsed.intent is expected
    assert intent_from_name(value) is expected


@pytest.mark.parametrize(
    ("confidence", "expected"),
    [
        ("0.85", 0.85),
        ('"85%"', 0.85),
        ("85", 0.85),
        ('"0.6"', 0.6),
        ('"high"', 0.85),
        ('"高"', 0.85),
        ("1.7e3", 1.0),  # beyond a percentage: clamped
        ("-0.2", 0.0),
        ("1", 1.0),
        ("0", 0.0),
        ("null", 0.5),
        ("true", 0.5),
        ('"sure"', 0.5),
        ("[0.9]", 0.5),
    ],
)
def test_confidence_forms(confidence: str, expected: float) -> None:
    parsed = parse_intent_reply(
        f'{{"intent": "LITERATURE_QA", "confidence": {confidence}, "reason": "r"}}'
    )
    assert parsed is not None
    assert parsed.confidence == pytest.approx(expected)


def test_missing_fields() -> None:
    parsed = parse_intent_reply('{"intent": "LITERATURE_SUMMARY"}')
    assert parsed == ParsedIntent(Intent.LITERATURE_SUMMARY, 0.5, "")


def test_chinese_keys() -> None:
    parsed = parse_intent_reply('{"意图": "文献总结", "置信度": 0.9, "理由": "用户要求总结"}')
    assert parsed == ParsedIntent(Intent.LITERATURE_SUMMARY, 0.9, "用户要求总结")


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("LITERATURE_QA", Intent.LITERATURE_QA),
        ("  paper review.  ", Intent.PAPER_REVIEW),
        ("`REVIEW_GENERATION`", Intent.REVIEW_GENERATION),
        ("文献问答", Intent.LITERATURE_QA),
        ("Intent: SIMPLE_INTERACTION", Intent.SIMPLE_INTERACTION),
        ("The user wants a critique, so the intent is PAPER_REVIEW.", Intent.PAPER_REVIEW),
        ("意图：综述生成", Intent.REVIEW_GENERATION),
    ],
)
def test_bare_intent_without_json(reply: str, expected: Intent) -> None:
    parsed = parse_intent_reply(reply)
    assert parsed is not None
    assert parsed.intent is expected
    assert parsed.confidence == 0.5


def test_broken_json_still_yields_intent_and_confidence() -> None:
    parsed = parse_intent_reply('{"intent": "PAPER_REVIEW", "confidence": 0.9, "reason": "unclosed')
    assert parsed is not None
    assert parsed.intent is Intent.PAPER_REVIEW
    assert parsed.confidence == pytest.approx(0.9)


@pytest.mark.parametrize(
    "reply",
    [
        "",
        "   \n ",
        "I don't know",
        "我不确定",
        '{"intent": "KNOWLEDGE_QUERY", "confidence": 0.9, "reason": "r"}',
        '{"intent": "", "confidence": 0.9}',
        '{"intent": null}',
        '{"intent": 3}',
        '{"confidence": 0.9, "reason": "no intent key"}',
        # a valid name in prose does not rescue an invalid answer in the format
        '{"intent": "CHAT_AND_QA", "reason": "between SIMPLE_INTERACTION and LITERATURE_QA"}',
        "It is either LITERATURE_SUMMARY or REVIEW_GENERATION.",  # two names: no decision
        "{{{{{{",
        "[1, 2, 3]",
    ],
)
def test_invalid_replies_return_none(reply: str) -> None:
    assert parse_intent_reply(reply) is None


def test_braces_inside_strings() -> None:
    reply = 'Answer: {"intent": "LITERATURE_QA", "confidence": 0.6, "reason": "asks about {x}"}'
    assert parse_intent_reply(reply) == ParsedIntent(Intent.LITERATURE_QA, 0.6, "asks about {x}")


def test_valid_json_after_a_broken_fragment() -> None:
    reply = 'Draft: {"intent": \n\nFinal: {"intent": "PAPER_REVIEW", "confidence": 0.9}'
    parsed = parse_intent_reply(reply)
    assert parsed is not None and parsed.intent is Intent.PAPER_REVIEW


def test_first_valid_object_wins() -> None:
    reply = 'Example: {"foo": 1}\nAnswer: {"intent": "LITERATURE_QA", "confidence": 0.7}'
    parsed = parse_intent_reply(reply)
    assert parsed is not None and parsed.intent is Intent.LITERATURE_QA


def test_huge_reply_is_bounded() -> None:
    assert parse_intent_reply("{" * 100_000) is None
    parsed = parse_intent_reply('{"intent": "LITERATURE_QA"}' + " filler" * 100_000)
    assert parsed is not None and parsed.intent is Intent.LITERATURE_QA
