"""A multiple-choice question asked first without its options.

Shown the passages and the stem alone, Qwen2.5-1.5B answers in the passages' own words
("Asn326", "47% identical", "substrate-bound Get3"), and neither a letter it favours
nor the options' order sways it: on LitQA2's dev split (bench/README.md) that answer
named an option for 18 of 41 questions, the right one for 16, among them six that the
letter readings (nodes/option_pick.py) left unsettled or got wrong. So the letter
readings are asked only when this answer names no option: "not stated", an answer no
option matches, or one two options match alike.

An option is named when the answer (its first line, citations dropped) has the
option's words, or when, of the options whose words it has at least COVERED of, it has
most of that option's and its own words are most that option's: "5-fold more sensitive"
names "5-fold", and "East and southeast" names "East and southeast", not "East and
southeast: northeast", unless a passage goes on with the rest of the longer option
right where the answer's words stand ("the east and southeast: northeast pair"; the
model copied the pair's first half: `read_on`). Failing that, an answer of two words or
more names the one option that has all of them ("Y-shaped": "Supercoiled and doubly
tethered (Y-shape)"), and so does a name alone ("CXE": "CXE (Cas9-XTEN-hExo1)"). A word
with a short ending is the same word ("multipliers", "multiplier"). "Yes", "No" and the
like must be the whole answer, or its first word before a comma ("Yes, it does").
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from scholarflow.context import Context
from scholarflow.language import is_chinese
from scholarflow.llm import calls as llm
from scholarflow.nodes.attribution import is_refusal
from scholarflow.nodes.citations import drop_citations
from scholarflow.nodes.option_evidence import UNNAMEABLE, contains, option_words, words
from scholarflow.nodes.options import Options, says_insufficient
from scholarflow.prompts import FREE_ANSWER_EN, FREE_ANSWER_ZH
from scholarflow.state import LLMUsage, RecalledChunkState

__all__ = ["COVERED", "FREE_TOKENS", "first_line", "free_option", "read_free",
           "read_on", "same_word"]

FREE_TOKENS = 32  # a few words: the answer, not an explanation (3 tokens p50 on LitQA2)
COVERED = 0.6  # the share of an option's words an answer must have to name it
STEM_LETTERS = 4  # a word this long or longer may take an ending and stay itself
ENDING_LETTERS = 3  # "-s", "-ed", "-ing"
SHOWN_CHARS = 120  # the answer as quoted back to the reader
_CLAUSE_END = re.compile(r"\s*[,.;:]")
# A gene, protein or construct's name: letters with a digit or two capitals ("CXE",
# "Vamp2"), not a word of the language ("symmetrical") nor a number alone.
_NAME = re.compile(r"(?=\w*[^\W\d_])(?=\w*\d|\w*[A-Z]\w*[A-Z])\w+")


def first_line(answer: str) -> str:
    """The answer's first line without its citations, as the reader is shown it."""
    lines = [line.strip() for line in drop_citations(answer).splitlines() if line.strip()]
    return " ".join(lines[0].split())[:SHOWN_CHARS] if lines else ""


def same_word(a: str, b: str) -> bool:
    """`a` and `b` are one word: equal, or one is the other with a short ending ("shape",
    "shaped"; "multiplier", "multipliers"). Numbers must be equal: "100" is not "1000"."""
    if a == b:
        return True
    short, long = sorted((a, b), key=len)
    return (len(short) >= STEM_LETTERS and len(long) - len(short) <= ENDING_LETTERS
            and long.startswith(short) and long.isalpha())


def _share(these: list[str], among: list[str]) -> float:
    """The share of `these` words that `among` has."""
    return sum(any(same_word(w, x) for x in among) for w in these) / len(these)


def free_option(answer: str, asked: Options) -> str | None:
    """The letter of the one option `answer` names; None for "not stated", for an answer
    naming none, and for one naming two alike."""
    line = first_line(answer)
    said = words(line)
    # "Not stated", "insufficient information": the model found no answer; the letter
    # readings decide whether to abstain.
    if not said or is_refusal(line) or says_insufficient(line):
        return None
    scored: list[tuple[tuple[float, float], str]] = []
    for letter, option in option_words(asked):
        if option == said:
            return letter
        if not option or option in UNNAMEABLE:
            # "Yes, metabolic labelling ..." says yes; "No change in ..." does not say no.
            if option and said[0] == option[0] and _CLAUSE_END.match(line, len(option[0])):
                return letter
            continue
        scored.append(((_share(option, said), _share(said, option)), letter))
    scored.sort(reverse=True)
    if scored and scored[0][0][0] >= COVERED and (
            len(scored) == 1 or scored[0][0] != scored[1][0]):
        return scored[0][1]
    # "Y-shaped" names "Supercoiled and doubly tethered (Y-shape)" when no other option
    # has both its words; one word ("symmetrical") is too little to go on, unless it is a
    # name ("CXE" names "CXE (Cas9-XTEN-hExo1)").
    whole = [letter for (_, own), letter in scored if own == 1.0]
    one_name = len(said) == 1 and _NAME.fullmatch(line.strip(" .")) is not None
    return whole[0] if (len(said) >= 2 or one_name) and len(whole) == 1 else None


def read_on(letter: str, answer: str, asked: Options,
            passages: Sequence[RecalledChunkState]) -> str:
    """The letter of the option that begins with option `letter`'s words and goes on as a
    passage does right after the answer's words; else `letter`. The answer copied "east
    and southeast" from "the east and southeast: northeast pair": its option is "East and
    southeast: northeast", not "East and southeast"."""
    named = dict(option_words(asked))[letter]
    said = words(first_line(answer))
    longer = [(k, option[len(named):]) for k, option in option_words(asked)
              if len(option) > len(named) and option[:len(named)] == named]
    if not longer or not said:
        return letter
    for passage in passages:
        text = words(passage["text"])
        for k, rest in longer:
            if contains(text, said + rest):
                return k
    return letter


async def read_free(ctx: Context, head: llm.Prompt, asked: Options,
                    passages: Sequence[RecalledChunkState], *, node: str,
                    usage: list[LLMUsage]) -> tuple[str | None, str]:
    """(the letter of the option it names or None, the answer's first line): the stem
    alone after `head`, the answer prompt's system message with the passages."""
    template = FREE_ANSWER_ZH if is_chinese(asked.stem) else FREE_ANSWER_EN
    result = await llm.complete(ctx, [*head, ("user", template.format(stem=asked.stem))],
                                node=node, max_tokens=FREE_TOKENS)
    usage.append(result.usage)
    named = free_option(result.text, asked)
    if named is not None:
        named = read_on(named, result.text, asked, passages)
    return named, first_line(result.text)
