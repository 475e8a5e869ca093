"""A multiple-choice question's answer in words, matched to one of its options.

Asked the stem without its options, a model answers in the passages' own words, and
neither a letter it favours nor the options' order sways it: the answer is then
matched to the options here, by words, and a reading that names no option is no
answer at all (nodes/option_reading.py says what happens then).

An option is named when the answer (its first line, citations dropped) has the
option's words, or when, of the options whose words it holds at least
`Context.option_match_share` of, it holds most of that option's and its own words are
most that option's ("5-fold more sensitive" names "5-fold"), unless one other option
it holds that share of has all that option's words and more: the longer match is the
one meant ("the IL-6/STAT3 axis" names "IL-6/STAT3 signalling", not "IL-6"). Failing
that, an answer of two words or more names the one option that has all of them. A
word with a short ending is the same word ("multipliers", "multiplier"), and so is a
compound whole or in pieces ("upregulation", "up-regulation"); numbers must
be equal. "Yes", "No" and the like must be the whole answer, or its first word before
a comma ("Yes, it does"). "Not stated" and "insufficient information" name none. An
answer naming none is matched again with each abbreviation the passages define
written the other way: "LPS" names "lipopolysaccharide" (nodes/abbreviations.py).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from scholarflow.context import Context
from scholarflow.language import is_chinese
from scholarflow.llm import calls as llm
from scholarflow.nodes.abbreviations import spelled_other_ways
from scholarflow.nodes.attribution import is_refusal
from scholarflow.nodes.citations import drop_citations
from scholarflow.nodes.option_evidence import UNNAMEABLE, compounds, option_words, words
from scholarflow.nodes.options import Options, says_insufficient
from scholarflow.prompts import FREE_ANSWER_EN, FREE_ANSWER_ZH, PromptTemplate
from scholarflow.state import LLMUsage

__all__ = ["first_line", "free_option", "read_free", "same_word"]

STEM_LETTERS = 4  # a word this long or longer may take an ending and stay itself
ENDING_LETTERS = 3  # "-s", "-ed", "-ing"
SHOWN_CHARS = 120  # the answer as quoted back to the reader
_CLAUSE_END = re.compile(r"\s*[,.;:]")


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


def free_option(answer: str, asked: Options, *, covered: float = 0.6) -> str | None:
    """The letter of the one option `answer` names; None for "not stated", for an answer
    naming none, and for one naming two alike. `covered`: the share of an option's words
    the answer must hold to name it."""
    line = first_line(answer)
    said = words(line)
    if not said or is_refusal(line) or says_insufficient(line):
        return None
    scored: list[tuple[tuple[float, float], str]] = []
    listed = dict(option_words(asked))
    for letter, option in listed.items():
        if option == said:
            return letter
        if not option or option in UNNAMEABLE:
            # "Yes, metabolic labelling ..." says yes; "No change in ..." does not say no.
            if option and said[0] == option[0] and _CLAUSE_END.match(line, len(option[0])):
                return letter
            continue
        # A compound is one word whole or in pieces ("upregulation", "up-regulation").
        whole_option, whole_said = compounds(option, said), compounds(said, option)
        if whole_option == whole_said:
            return letter
        scored.append(((_share(whole_option, whole_said), _share(whole_said, whole_option)),
                       letter))
    scored.sort(reverse=True)
    if scored and scored[0][0][0] >= covered and (
            len(scored) == 1 or scored[0][0] != scored[1][0]):
        covering = {letter: listed[letter] for (share, _), letter in scored if share >= covered}
        return _longer_match(scored[0][1], said, covering) or scored[0][1]
    # An answer of two words or more that one option alone holds whole names it; one
    # word is too little to go on ("symmetrical" is in many an option).
    whole = [letter for (_, own), letter in scored if own == 1.0]
    return whole[0] if len(said) >= 2 and len(whole) == 1 else None


def _longer_match(letter: str, said: list[str], covering: dict[str, list[str]]) -> str | None:
    """Of the options `covering` (letter: words) whose words the answer holds enough of, the
    one other than `letter` whose held words include all of `letter`'s and more; None when
    there is no such option, or several."""
    short = covering[letter]
    held = {other: [w for w in option if any(same_word(w, x) for x in said)]
            for other, option in covering.items() if other != letter}
    longer = [other for other, words_held in held.items() if len(words_held) > len(short)
              and all(any(same_word(w, x) for x in words_held) for w in short)]
    return longer[0] if len(longer) == 1 else None


async def read_free(ctx: Context, head: llm.Prompt, asked: Options, *, node: str,
                    abbreviations: Mapping[str, str] | None = None,
                    template: PromptTemplate | None = None) -> tuple[str | None, str, LLMUsage]:
    """(the letter of the option it names or None, the answer's first line, the call's
    usage): the stem alone after `head`, a system message with passages. An answer
    naming none is tried again with each of the passages' `abbreviations` (short form:
    long form) it holds written the other way ("LPS" for "lipopolysaccharide").
    `template`: the user message around the stem, FREE_ANSWER's by default."""
    if template is None:
        template = FREE_ANSWER_ZH if is_chinese(asked.stem) else FREE_ANSWER_EN
    result = await llm.complete(ctx, [*head, ("user", template.format(stem=asked.stem))],
                                node=node, max_tokens=ctx.option_answer_tokens,
                                temperature=ctx.reading_temperature)
    named = free_option(result.text, asked, covered=ctx.option_match_share)
    said = first_line(result.text)
    for other_way in spelled_other_ways(said, abbreviations or {}) if named is None else []:
        named = free_option(other_way, asked, covered=ctx.option_match_share)
        if named is not None:
            break
    return named, said, result.usage
