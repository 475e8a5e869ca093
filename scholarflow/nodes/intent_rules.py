"""Keyword rules for intent recognition, Chinese and English, without an LLM.

They serve twice: as the fast path (an unambiguous verdict skips the LLM) and as
the fallback when no LLM answers, so `classify_by_rules` always returns a guess.

The cues and their weights are `intent_cues.RULE_TABLE`. An intent
scores its strongest cue whole and its other cues at half (two hits per rule at
most). Ties go to the more specific intent: PAPER_REVIEW > REVIEW_GENERATION >
LITERATURE_SUMMARY > LITERATURE_QA > SIMPLE_INTERACTION.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from scholarflow.intents import Intent
from scholarflow.language import HAN
from scholarflow.nodes.intent_cues import RULE_TABLE, alts
from scholarflow.nodes.intent_form import (
    PRECISE_QUESTION_MIN_TERMS,
    content_terms,
    is_question,
    misspelt_task,
    names_a_task,
)

__all__ = ["AMBIGUITY_MARGIN", "REAL_CUE", "RuleVerdict", "asks_for_no_task", "classify_by_rules",
           "has_subject", "message_ends"]

# The margin rule: the rules are sure when the winner has a real cue (weight >=
# REAL_CUE, not a pile of weak ones) and leads every other intent that has a real
# cue by AMBIGUITY_MARGIN. So a task verb against a task object ("summarize the
# weaknesses", 2.5 vs 3) goes to the LLM, while a greeting or a "this paper?" next
# to a request ("你好，帮我总结一下", "Can you summarize this paper?") does not.
AMBIGUITY_MARGIN = 1.5
REAL_CUE = 2.0
_SCORE_CAP = 6.0  # many cues of one kind must not drown one strong cue of another
# LITERATURE_QA is what a question about a paper is by default; its topic words
# ("数据集", "模型") corroborate each other but never outweigh a named task (3),
# so "比较这三篇论文在数据集、模型上的差异" stays a literature review.
_QA_CAP = 3.0
_CHAT_ONLY_BONUS = 1.5  # chit-chat with nothing else in the message is the message

S, L, R, P, Q = (Intent.SIMPLE_INTERACTION, Intent.LITERATURE_SUMMARY,
                 Intent.REVIEW_GENERATION, Intent.PAPER_REVIEW, Intent.LITERATURE_QA)
_TIE_ORDER = (P, R, L, Q, S)
_TASKS = (L, R, P)
PRECISE_QUESTION_CONFIDENCE = 0.9
_CHAT_CORROBORATION = 2  # research terms a question needs beyond its everyday words


@dataclass(frozen=True, slots=True)
class RuleVerdict:
    intent: Intent
    confidence: float  # 0..1
    unambiguous: bool  # True when the rules are sure enough to skip the LLM
    reason: str  # short, e.g. "matched '总结' (LITERATURE_SUMMARY)"
    # The words by which the message asks for a summary, a review or a critique, not
    # negated ("不要总结") and not the topic of a precise question ("compared to placebo").
    tasks: tuple[str, ...] = ()


_RULES = tuple(
    (re.compile(pattern), intent, weight, "n" in flags, "m" in flags, "s" in flags, "q" in flags)
    for pattern, intent, weight, flags in RULE_TABLE
)
_SOFT_CHAT = re.compile("|".join(pattern for pattern, intent, _, flags in RULE_TABLE
                                 if intent is S and "s" in flags))
# A refusal right before a task cue: "不要总结", "don't summarize", "not a summary".
# "别" only counts where it starts a clause, because it also ends 分别, 区别, 类别.
_NEGATION = re.compile(
    r"(?:不要|(?:^|[你请也就先可千万,，\s])别|不用|无需|不需要|不必|并非|而不是|不是要|不是让|"
    r"(?<![a-z])(?:don'?t|do\s+not|no\s+need\s+to|not|never|without|instead\s+of|rather\s+than))"
    r"[\s,，]*(?:\S{0,4}|(?:[a-z]+\s+){0,2})$"
)
# Addressed to the assistant: with no paper in sight, that is conversation.
_YOU = re.compile(alts("你 您 you your u"))
_DOC_REFERENCE = re.compile(alts("""论文 文章 文献 文档 本文 文中 作者 这篇 该文 报告 材料 资料
    papers? articles? authors? pdf study"""))
# Acronyms, CamelCase and model-number names (BERT, ImageNet, GPT-4, λ) in the raw
# query: research terms the word lists cannot know.
_TECHNICAL = re.compile(r"[A-Z]{2,}|[a-z][A-Z]|[A-Za-z]-?\d|[\u0370-\u03ff]")
_CONTENT_CHARS = re.compile(f"[0-9a-z{HAN}]")
_Cues = dict[Intent, tuple[float, str]]  # each intent's strongest cue: (weight, text)
_Hits = list[tuple[Intent, str, int]]  # every cue found: (intent, text, end offset)


def _prepare(query: str) -> tuple[str, str]:
    """The query as read (head and tail of a long one) and its normalised form."""
    # A pasted passage carries the request at one end ("<text> 总结一下" or
    # "Summarize: <text>"); reading both ends keeps the rules fast on any input.
    if len(query) > 1500:
        query = query[:1000] + " … " + query[-500:]
    # NFKC folds full-width forms ("？", "ＧＰＴ") into ASCII so one pattern fits both.
    return query, " ".join(unicodedata.normalize("NFKC", query).lower().split())


def _score(text: str) -> tuple[dict[Intent, float], _Cues, float, bool, _Hits]:
    """Scores per intent, their strongest cues, the chit-chat score, whether work is asked,
    and the cues found but chit-chat's."""
    weights: dict[Intent, list[float]] = {}
    cues: _Cues = {}
    found_cues: _Hits = []
    soft, question, work = 0.0, False, text
    for pattern, intent, weight, negatable, mask, is_soft, question_word in _RULES:
        hits: list[str] = []
        for match in pattern.finditer(work):
            found, start = match.group(0), match.start()
            if found in hits or (negatable and _NEGATION.search(work[max(0, start - 16) : start])):
                continue
            hits.append(found)
            if not is_soft:
                found_cues.append((intent, found, match.end()))
            if mask:  # blank it out, keeping offsets, so "literature review" ≠ "review"
                work = work[:start] + " " * len(found) + work[match.end() :]
            # Two different words of one rule ("研究现状", "综述") corroborate; more add
            # nothing, and the question form or a greeting counts once.
            if len(hits) == (1 if question_word or is_soft else 2):
                break
        if not hits:
            continue
        question = question or question_word
        if is_soft:
            soft += weight
        else:
            weights.setdefault(intent, []).extend([weight] * len(hits))
        if weight > cues.get(intent, (0.0, ""))[0]:
            cues[intent] = (weight, hits[0].strip())
    if not soft and _YOU.search(text) and not _DOC_REFERENCE.search(text):
        soft = 1.0
        cues.setdefault(S, (1.0, "you"))
    # Work is asked for when a cue other than the mere question form points at it.
    asked = any(i in weights for i in (L, R, P)) or len(weights.get(Q, ())) > int(question)
    scores = dict.fromkeys(Intent, 0.0)
    for intent, found_weights in weights.items():
        # The strongest cue counts whole, the others half: corroboration helps, but
        # a pile of weak cues ("这篇" + "实验" + "吗") must not bury one decisive cue.
        top = max(found_weights)
        cap = _QA_CAP if intent is Q else _SCORE_CAP
        scores[intent] = min(cap, top + 0.5 * (sum(found_weights) - top))
    return scores, cues, soft, asked, found_cues


def classify_by_rules(
    query: str, *, has_documents: bool, min_terms: int = PRECISE_QUESTION_MIN_TERMS
) -> RuleVerdict:
    """The rules' best guess for `query`; never fails, never does I/O.

    A precise question about a finding (`intent_form`) with documents at hand, no task
    and no chat cue is a question for recall, sure enough to skip the LLM; `min_terms`
    is the research terms it needs to count as precise.
    """
    query, text = _prepare(query)
    scores, cues, soft, work_asked, hits = _score(text)
    # An everyday word ("film", "today") in a question is a research term only beside
    # enough others: "At what temperature does the thin film ...?", not "天气怎么样？".
    topic = _SOFT_CHAT.sub(lambda m: " " * len(m.group(0)), text)
    needed = min_terms + (_CHAT_CORROBORATION if topic != text else 0)
    precise = ((has_documents or bool(_DOC_REFERENCE.search(text)))
               and not any(intent is S for intent, _, _ in hits)  # about the assistant
               and is_question(text) and len(content_terms(topic)) >= needed)
    tasks = tuple(dict.fromkeys(
        cue.strip() for intent, cue, end in hits if intent in _TASKS
        and (not precise or names_a_task(cue, text[: end - len(cue)], text[end:]))))
    if precise and not tasks:
        terms = ", ".join(content_terms(topic)[:4])
        return RuleVerdict(Q, PRECISE_QUESTION_CONFIDENCE, True,
                           f"a question about a finding ({terms}), no task asked")
    if has_documents and cues.get(S, (0.0, ""))[1] == "you" and not work_asked:
        # "Could you go over the attention part of this?" with a paper attached is
        # about the paper: a mere "you" is not chit-chat then (no cue decides).
        soft, scores[S] = 0.0, 0.0
        cues.pop(S)
    if soft and not work_asked:
        # Chit-chat and nothing else ("hi", "好的，谢谢"): the chat is the message.
        scores[S] += soft + _CHAT_ONLY_BONUS
        cues[S] = (max(cues[S][0], scores[S]), cues[S][1])
    else:  # beside a request, chit-chat is a greeting's worth at most
        scores[S] += min(soft, 1.0)
    best, runner = sorted(_TIE_ORDER, key=lambda i: -scores[i])[:2]  # stable: ties keep order
    top, second = scores[best], scores[runner]
    if top < REAL_CUE and not work_asked:
        return _fallback(text, query, has_documents, question=scores[Q] > 0)
    # Weak cues piling up ("方法" + "?") never make the rules sure, and never make a
    # rival: only intents with a real cue compete for the margin.
    real = [i for i in Intent if i is not best and cues.get(i, (0.0, ""))[0] >= REAL_CUE]
    rival = max((scores[i] for i in real), default=0.0)
    strongest = cues.get(best, (0.0, ""))[0]
    unambiguous = top > second and strongest >= REAL_CUE and top - rival >= AMBIGUITY_MARGIN
    confidence = min(0.95, 0.5 + 0.15 * (top - second) + 0.05 * min(top, 3.0))
    reason = f"matched {cues.get(best, (0, ''))[1]!r} ({best.value})"
    if second > 0 and runner in cues:
        reason += f" over {cues[runner][1]!r} ({runner.value})"
    return RuleVerdict(best, round(confidence, 2), unambiguous, reason, tasks)


def _fallback(text: str, original: str, has_documents: bool, *, question: bool) -> RuleVerdict:
    """No decisive cue: guess from what the message is and what came with it."""
    if not _CONTENT_CHARS.search(text):
        return RuleVerdict(S, 0.5, False, "no words; chat")
    plain = not _TECHNICAL.search(original) and not _DOC_REFERENCE.search(text)
    if not question and len(text) <= 24 and plain:
        # A short plain statement ("hallo", "下次再聊") with no research term is chat.
        return RuleVerdict(S, 0.4, False, "short message without a task or research term")
    if has_documents:
        # With documents attached, an unrecognised message is most often about them.
        why = "a question" if question else "no keyword"
        return RuleVerdict(Q, 0.4, False, f"{why}, documents attached")
    if _DOC_REFERENCE.search(text):
        return RuleVerdict(Q, 0.35, False, "mentions a paper, none attached")
    return RuleVerdict(S, 0.45, False, "no task keyword, no documents")


def message_ends(query: str) -> str:
    """`query` as the rules read it: a long one's head and tail, where its request is."""
    return _prepare(query)[0]


def has_subject(query: str) -> bool:
    """Whether `query` names something of its own, beyond grammar, documents and tasks."""
    return bool(content_terms(_prepare(query)[1]))


def asks_for_no_task(query: str, verdict: RuleVerdict) -> bool:
    """Whether `query`, which the rules read as `verdict`, asks about something of its own
    and names no summary, review or critique, not even misspelt.

    Such a message is a question for recall whatever a model says; a message with no
    subject of its own ("Thoughts?", "And the second one?") is left to the model, which
    reads it with the conversation.
    """
    _, text = _prepare(query)
    return not verdict.tasks and not misspelt_task(text) and bool(content_terms(text))

