"""Robust parsing of the intent LLM's reply.

The LLM is asked for `{"intent": ..., "confidence": ..., "reason": ...}` but
replies drift: code fences, prose around the JSON, Python-style quotes, trailing
commas, keys in any case, intent names with spaces, hyphens or in Chinese, or a
bare intent name. `parse_intent_reply` accepts all of these and returns None
only when no valid intent can be found, so the caller can retry.
"""

from __future__ import annotations

import ast
import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from scholarflow.intents import Intent

__all__ = ["ParsedIntent", "intent_from_name", "parse_intent_reply"]

_DEFAULT_CONFIDENCE = 0.5
_MAX_CHARS = 20_000  # a reply longer than this is not a classification; don't scan it all
_MAX_OBJECTS = 50  # brace scanning is quadratic in the worst case; bound it
_DECODER = json.JSONDecoder()


@dataclass(frozen=True, slots=True)
class ParsedIntent:
    intent: Intent
    confidence: float  # clamped to [0, 1]; missing or unparsable -> 0.5; "85%" or 85 -> 0.85
    reason: str


# Names an LLM plausibly uses for each intent, compared after _key() folding.
_ALIASES: dict[str, Intent] = {
    **{name: Intent.SIMPLE_INTERACTION for name in (
        "SIMPLE", "CHAT", "SIMPLE_CHAT", "CHITCHAT", "CHIT_CHAT", "SMALL_TALK", "GREETING",
        "SIMPLE_INTERACTIONS", "简单交互", "简单对话", "简单互动", "闲聊", "日常对话", "日常闲聊",
        "问候", "普通对话")},
    **{name: Intent.LITERATURE_SUMMARY for name in (
        "SUMMARY", "SUMMARIZATION", "SUMMARISATION", "LITERATURE_SUMMARIZATION",
        "DOCUMENT_SUMMARY", "PAPER_SUMMARY", "文献总结", "文献摘要", "论文总结", "文档总结",
        "总结", "摘要", "文献概括")},
    **{name: Intent.REVIEW_GENERATION for name in (
        "LITERATURE_REVIEW", "REVIEW_GEN", "SURVEY", "LITERATURE_REVIEW_GENERATION",
        "SURVEY_GENERATION", "综述生成", "文献综述", "综述", "生成综述", "综述撰写", "综述写作")},
    **{name: Intent.PAPER_REVIEW for name in (
        "PEER_REVIEW", "PAPER_CRITIQUE", "CRITIQUE", "PAPER_EVALUATION", "论文评审", "评审",
        "论文审稿", "审稿", "论文评价", "论文审阅")},
    **{name: Intent.LITERATURE_QA for name in (
        "QA", "Q_A", "QUESTION_ANSWERING", "LITERATURE_QUESTION_ANSWERING", "DOCUMENT_QA",
        "PAPER_QA", "LIT_QA", "LITERATURE_Q_A", "文献问答", "问答", "论文问答", "文档问答")},
}

# Intent names worth finding inside prose: the canonical ones and the Chinese
# names of the spec. Generic words ("summary", "review") are left out, since
# prose uses them without naming an intent.
_NAME_IN_PROSE = re.compile(
    r"(?<![a-z])(simple[\s_-]*interaction|literature[\s_-]*summary|review[\s_-]*generation"
    r"|paper[\s_-]*review|literature[\s_-]*q[\s&/_-]*a)(?![a-z])"
    r"|(简单交互|文献总结|综述生成|论文评审|文献问答|文献综述)",
    re.IGNORECASE,
)
_THINK_BLOCK = re.compile(r"<think(?:ing)?>.*?</think(?:ing)?>", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"```[a-zA-Z]*\s*(.*?)```", re.DOTALL)
# Last resort for broken JSON: `"intent": "x"` / `intent = x` / `意图：x`.
_KEY_VALUE = re.compile(
    r"""["']?(?:intent|意图)["']?\s*[:：=]\s*["']?([^"'\n,，}]+)""", re.IGNORECASE
)
_INTENT_KEYS = ("intent", "意图", "intent_type", "label", "category", "class", "type")
_CONFIDENCE_KEYS = ("confidence", "置信度", "confidence_score", "score", "probability", "conf")
_REASON_KEYS = ("reason", "reasoning", "理由", "原因", "rationale", "explanation", "说明")
_CONFIDENCE_VALUE = re.compile(
    r"""(?:confidence|置信度)["']?\s*[:：=]\s*["']?([^"',，}\n]+)""", re.IGNORECASE
)
_TRAILING_COMMA = re.compile(r",\s*([}\]])")
_SMART_QUOTES = str.maketrans({"“": '"', "”": '"', "‘": "'", "’": "'"})
_WORDY_CONFIDENCE = {"very high": 0.95, "high": 0.85, "medium": 0.6, "moderate": 0.6,
                     "low": 0.3, "very low": 0.15, "高": 0.85, "中": 0.6, "低": 0.3}


def _key(name: str) -> str:
    # Fold case, spaces and hyphens the way Intent.parse does, and drop wrapping
    # punctuation ("`LITERATURE_QA`.", "Intent.LITERATURE_QA").
    folded = re.sub(r"[\s\-]+", "_", name.strip().strip("\"'`*.,;:!?()[]{}<>。，；：！？"))
    folded = folded.upper()
    return folded.removeprefix("INTENT.").removeprefix("INTENT_")


def intent_from_name(name: str) -> Intent | None:
    """The intent a name denotes, tolerating case, spacing, hyphens and Chinese names."""
    key = _key(name)
    if not key:
        return None
    try:
        return Intent.parse(key)
    except ValueError:
        pass
    if key in _ALIASES:
        return _ALIASES[key]
    # A value with extras, e.g. "LITERATURE_QA (文献问答)": accept one named intent.
    found = _intents_in_prose(name)
    return found.pop() if len(found) == 1 else None


def _intents_in_prose(text: str) -> set[Intent]:
    found: set[Intent] = set()
    for match in _NAME_IN_PROSE.finditer(text):
        name = match.group(1) or match.group(2)
        key = _key(name)
        intent = _ALIASES.get(key)
        if intent is None:
            try:
                intent = Intent.parse(re.sub(r"Q_?[&/_]?_?A$", "QA", key))
            except ValueError:
                continue
        found.add(intent)
    return found


def _objects(text: str) -> Iterator[dict[str, Any]]:
    """Every dict the reply holds: fenced blocks first, then each `{` in order."""
    for fenced in _FENCE.finditer(text):
        if (obj := _load_object(fenced.group(1).strip())) is not None:
            yield obj
    for start in [i for i, char in enumerate(text) if char == "{"][:_MAX_OBJECTS]:
        try:  # strict JSON first: it knows that a "}" inside a string is no brace
            value, _ = _DECODER.raw_decode(text, start)
        except ValueError:
            value = _load_object(_balanced(text, start))
        if isinstance(value, dict):
            yield value


def _balanced(text: str, start: int) -> str:
    """The brace-balanced span from `start`, or the rest of the text if it never closes."""
    depth = 0
    for end in range(start, len(text)):
        depth += {"{": 1, "}": -1}.get(text[end], 0)
        if depth == 0:
            return text[start : end + 1]
    return text[start:]


def _load_object(candidate: str) -> dict[str, Any] | None:
    """A dict from JSON, or from JSON-ish text: single quotes, trailing commas, True."""
    attempts = (
        json.loads,
        lambda s: json.loads(_TRAILING_COMMA.sub(r"\1", s)),
        ast.literal_eval,  # Python-style dicts: single quotes, trailing commas, True/None
        lambda s: json.loads(_TRAILING_COMMA.sub(r"\1", s.translate(_SMART_QUOTES))),
    )
    for attempt in attempts:
        try:
            value = attempt(candidate)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        if isinstance(value, dict):
            return value
    return None


def _find_field(obj: dict[str, Any], keys: tuple[str, ...]) -> tuple[bool, Any]:
    """The value of the first of `keys` present (any case), searching nested dicts."""
    lowered = {str(k).strip().lower(): v for k, v in obj.items()}
    for key in keys:
        if key in lowered:
            return True, lowered[key]
    for value in obj.values():
        if isinstance(value, dict):
            found, nested = _find_field(value, keys)
            if found:
                return True, nested
    return False, None


def _confidence(value: Any) -> float:
    """`value` as a probability: 0.85, 85, "85%", "0.85", "high" all give 0.85-ish."""
    if isinstance(value, bool) or value is None:
        return _DEFAULT_CONFIDENCE
    number: float
    if isinstance(value, int | float):
        number = float(value)
    elif isinstance(value, str):
        text = value.strip().lower()
        if text in _WORDY_CONFIDENCE:
            return _WORDY_CONFIDENCE[text]
        match = re.search(r"-?\d+(?:\.\d+)?", text)
        if match is None:
            return _DEFAULT_CONFIDENCE
        number = float(match.group(0))
        if "%" in text:
            number /= 100
    else:
        return _DEFAULT_CONFIDENCE
    if math.isnan(number):
        return _DEFAULT_CONFIDENCE
    if 1 < number <= 100:  # a percentage written without its sign
        number /= 100
    return min(1.0, max(0.0, number))


def _from_object(obj: dict[str, Any]) -> tuple[bool, ParsedIntent | None]:
    """(has an intent field, the parsed answer if that field names a valid intent)."""
    found, raw = _find_field(obj, _INTENT_KEYS)
    if not found:
        return False, None
    if isinstance(raw, list) and raw:
        raw = raw[0]
    intent = intent_from_name(str(raw)) if isinstance(raw, str) else None
    if intent is None:
        return True, None
    _, confidence = _find_field(obj, _CONFIDENCE_KEYS)
    _, reason = _find_field(obj, _REASON_KEYS)
    reason_text = "" if reason is None else str(reason)
    return True, ParsedIntent(intent, _confidence(confidence), reason_text)


def parse_intent_reply(text: str) -> ParsedIntent | None:
    """The intent in the LLM's reply, or None when it names no valid intent."""
    if not text or not text.strip():
        return None
    text = _THINK_BLOCK.sub(" ", text[:_MAX_CHARS]).strip()

    saw_intent_field = False
    for obj in _objects(text):
        has_field, parsed = _from_object(obj)
        if parsed is not None:
            return parsed
        saw_intent_field = saw_intent_field or has_field
    if saw_intent_field:
        # The model answered in the format but with a name we don't know: that's
        # an invalid intent, not a licence to guess from its prose.
        return None

    # Broken JSON: pick the intent (and confidence) out of the text itself.
    match = _KEY_VALUE.search(text)
    if match is not None:
        intent = intent_from_name(match.group(1))
        if intent is None:
            return None
        conf = _CONFIDENCE_VALUE.search(text)
        return ParsedIntent(intent, _confidence(conf.group(1) if conf else None), "")

    # A bare name ("LITERATURE_QA", "文献问答", "paper review."), or prose that
    # names exactly one intent; then the prose itself is the reason.
    intent = intent_from_name(text)
    if intent is not None:
        return ParsedIntent(intent, _DEFAULT_CONFIDENCE, "")
    found = _intents_in_prose(text)
    if len(found) != 1:
        return None
    return ParsedIntent(found.pop(), _DEFAULT_CONFIDENCE, text[:300])
