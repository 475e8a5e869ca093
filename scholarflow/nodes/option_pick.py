"""A multiple-choice answer: the stem answered in words first, then the first token's letter.

Asked to write the letter of the option the passages support, then explain,
Qwen2.5-1.5B wrote a letter for every LitQA2 question and never the
"insufficient" one: 21 of 41 right, precision 0.51. So:

* first the stem alone, answered in a few words (nodes/option_free.py): after the
  sentences of the passages nearest the stem (nodes/option_excerpt.py), then, unless
  that answer names an option, after the whole passages; an answer naming one option
  is the answer;
* else hidden calls ask for the letter alone (`max_tokens=1`) with the first token's
  alternatives (`top_logprobs`); the options' letters share the probability the model
  gave letters at all. A small model favours some letters whatever they stand for, so
  unless the reading as asked gives one option SURE_SHARE of its choice, the options
  are read again in reverse order, and the answer is the option both orders rank first,
  unless it is the "insufficient" one. When the orders differ, the answer depends on
  where the options stand, and it says the passages do not settle the question, naming
  the question's "insufficient" option when it lists one;
* the answer is the option with the passage sentence that names it
  (nodes/option_evidence.py), cited: no call writes an explanation, which cost the
  1.5B model 300-odd tokens at 10-15 a second.

At most four calls: one or two answers in words, one or two letters. Sessions five to
eleven also read the letters without the passages and divided that reading out of
each order (calibration); on the same readings (bench/README.md, twelfth session), with
the excerpt's answer first, the raw orders answered 28 / 8 / 4 of 40 against 27 / 11 / 2
with calibration in five calls, and they need no fifth call.

A server that gives no alternatives (some do not implement `logprobs`), or a first token
that is not a letter, leaves the answer to the streamed call as before (`read_pick`
returns None).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from scholarflow.context import Context
from scholarflow.language import is_chinese
from scholarflow.llm import calls as llm
from scholarflow.nodes.common import question_turn
from scholarflow.nodes.option_evidence import (
    OptionEvidence,
    format_option_evidence,
    option_evidence,
)
from scholarflow.nodes.option_free import read_free
from scholarflow.nodes.options import Options, insufficient_option
from scholarflow.prompts import (
    PICK_NONE_EN,
    PICK_NONE_ZH,
    PICK_SPLIT_EN,
    PICK_SPLIT_ZH,
    PICKED_EVIDENCE_EN,
    PICKED_EVIDENCE_ZH,
    PICKED_FREE_EN,
    PICKED_FREE_ZH,
    PICKED_SHARE_EN,
    PICKED_SHARE_ZH,
    PICKED_SURE_EN,
    PICKED_SURE_ZH,
)
from scholarflow.state import LLMUsage, RecalledChunkState

__all__ = ["LETTER_MASS_FLOOR", "SURE_SHARE", "OptionPick", "decide", "letter_shares",
           "options_question", "picked_text", "read_pick", "reversed_order"]

TOP_LOGPROBS = 20  # alternatives asked for: the letters sit in the first few
# Letters must hold this much of the first token's probability, else the model was not
# answering with a letter ("The", "Based"): the streamed answer decides instead.
LETTER_MASS_FLOOR = 0.5
# The reading as asked decides alone when it gives one option this share of its choice;
# else the reversed order must agree (bench/litqa_readings.py scores other floors).
SURE_SHARE = 0.5


@dataclass(frozen=True, slots=True)
class OptionPick:
    letter: str  # the first reading's best option: the answer unless `abstained`
    text: str
    share: float  # its share in the first reading
    abstained: bool  # the answer is that the passages do not settle it
    shares: tuple[tuple[str, float], ...] = ()  # the first reading's, as `share`, best first
    runner_up: str = ""  # "D) text": the reversed reading's best, when it differs
    both_orders: bool = True  # False: the first reading was SURE_SHARE sure alone
    free: str = ""  # the answer asked without the options, when it named this one

    def describe(self) -> str:
        """The shares for the thinking events: "C 62%, A 20%, ..."."""
        if self.free:
            return f'"{self.free}", option {self.letter}'
        return ", ".join(f"{letter} {share:.0%}" for letter, share in self.shares)


def letter_shares(logprobs: Sequence[tuple[str, float]], letters: Sequence[str]
                  ) -> dict[str, float] | None:
    """Each letter's share of the probability the first token gave the letters: "C",
    " C", "(C" and "C)" count for C ("c" does not: it may begin a word). None when the
    letters held under LETTER_MASS_FLOOR."""
    mass = dict.fromkeys(letters, 0.0)
    for token, logprob in logprobs:
        key = token.strip().strip("()[]*:.")
        if key in mass:
            mass[key] += math.exp(logprob)
    total = sum(mass.values())
    if total < LETTER_MASS_FLOOR:
        return None
    return {letter: p / total for letter, p in mass.items()}


def reversed_order(asked: Options) -> Options:
    """The options in reverse order under the same letters: "A) x B) y" -> "A) y B) x"."""
    return Options(asked.stem, asked.options[::-1], asked.letters)


def options_question(shown: Options) -> str:
    """The question with `shown`'s options listed under it, as split_options reads it."""
    header = "选项：" if is_chinese(shown.stem) else "Options:"
    lines = [f"{k}) {t}" for k, t in zip(shown.letters, shown.options, strict=True)]
    return f"{shown.stem}\n\n{header}\n" + "\n".join(lines)


def decide(asked: Options, first: dict[str, float], reversed_shares: dict[str, float] | None
           ) -> OptionPick:
    """The answer of the first reading (by the question's letters) checked by the reversed
    one (by the reversed order's letters), when there is one."""
    letters = asked.letters
    best = max(letters, key=lambda k: first[k])  # ties: the first listed
    other = best
    if reversed_shares is not None:
        # Shown reversed, the i-th letter stands for the option the question letters [-1 - i].
        flipped = {letters[-1 - i]: reversed_shares[k] for i, k in enumerate(letters)}
        other = max(reversed(letters), key=lambda k: flipped[k])  # ties: first as shown
    skip = insufficient_option(asked)
    text = asked.options[letters.index(best)]
    ranked = tuple(sorted(first.items(), key=lambda item: -item[1]))
    runner_up = "" if other == best else f"{other}) {asked.options[letters.index(other)]}"
    abstained = other != best or (skip is not None and best == skip[0])
    return OptionPick(best, text, first[best], abstained, ranked, runner_up,
                      both_orders=reversed_shares is not None)


class _NoAlternatives(Exception):
    """The server gave no first-token alternatives: it does not implement `logprobs`."""


async def _letters(ctx: Context, prompt: llm.Prompt, letters: Sequence[str], node: str,
                   usage: list[LLMUsage]) -> dict[str, float] | None:
    """The letters' shares of the first token; None when it was no letter."""
    result = await llm.complete(ctx, prompt, node=node, max_tokens=1,
                                top_logprobs=TOP_LOGPROBS)
    usage.append(result.usage)
    if not result.first_token_logprobs:
        raise _NoAlternatives
    return letter_shares(result.first_token_logprobs, letters)


async def read_pick(ctx: Context, head: llm.Prompt, question: str, asked: Options,
                    evidence: Sequence[OptionEvidence], passages: Sequence[RecalledChunkState],
                    *, node: str, excerpt_head: llm.Prompt = (),
                    excerpt_passages: Sequence[RecalledChunkState] = ()
                    ) -> tuple[OptionPick | None, list[LLMUsage]]:
    """The answer of hidden calls: the stem alone after `excerpt_head` (the answer prompt's
    system message with the sentences nearest the stem, option_excerpt.py), then after
    `head` (with the whole passages), answered in words; unless one of these names an
    option, the letter as asked and, unless that reading is SURE_SHARE sure, reversed.
    None when the server gives no alternatives or a reading gives no letters'
    probabilities."""
    usage: list[LLMUsage] = []
    # The short prompt first: a one-prompt cache (llama.cpp) then holds the passages for
    # every call after it.
    for shown, read in ((excerpt_head, excerpt_passages), (head, passages)):
        if not shown or not read:  # no excerpt: no sentence shares a word with the stem
            continue
        named, said = await read_free(ctx, shown, asked, read, node=node, usage=usage)
        if named is not None:
            return OptionPick(named, asked.options[asked.letters.index(named)], 1.0, False,
                              both_orders=False, free=said), usage
    try:
        turn = question_turn(question, format_option_evidence(evidence), letter_only=True)
        first = await _letters(ctx, [*head, ("user", turn)], asked.letters, node, usage)
        if first is None:
            return None, usage
        if max(first.values()) >= SURE_SHARE:
            return decide(asked, first, None), usage
        # `evidence` is where the passages name the options as asked; reversed, their own.
        flipped = reversed_order(asked)
        turn = question_turn(options_question(flipped),
                             format_option_evidence(option_evidence(flipped, passages)),
                             letter_only=True)
        second = await _letters(ctx, [*head, ("user", turn)], flipped.letters, node, usage)
    except _NoAlternatives:
        return None, usage
    return (None if second is None else decide(asked, first, second)), usage


def picked_text(chosen: OptionPick, asked: Options, evidence: Sequence[OptionEvidence],
                *, chinese: bool, otherwise: OptionEvidence | None = None) -> str:
    """The answer: the option with the sentence that names it (else `otherwise`, the
    sentence nearest the question) and its share; or, when it abstains, that the
    passages do not settle it, naming the question's own "insufficient" option first
    when it lists one."""
    share = f"{chosen.share:.0%}"
    option = f"{chosen.letter}) {chosen.text}"
    if not chosen.abstained:
        said = next((e for e in evidence if e.letter == chosen.letter and e.passage),
                    otherwise)
        lines = [option, ""]
        if said is not None and said.passage:
            quote = PICKED_EVIDENCE_ZH if chinese else PICKED_EVIDENCE_EN
            lines += [quote.format(n=said.passage, sentence=said.sentence), ""]
        if chosen.free:
            lines.append((PICKED_FREE_ZH if chinese else PICKED_FREE_EN).format(
                free=chosen.free))
            return "\n".join(lines)
        if chosen.both_orders:
            said_share = PICKED_SHARE_ZH if chinese else PICKED_SHARE_EN
        else:
            said_share = PICKED_SURE_ZH if chinese else PICKED_SURE_EN
        lines.append(said_share.format(share=share))
        return "\n".join(lines)
    skip = insufficient_option(asked)
    if chosen.runner_up:
        why = (PICK_SPLIT_ZH if chinese else PICK_SPLIT_EN).format(
            option=option, other=chosen.runner_up)
    else:
        why = (PICK_NONE_ZH if chinese else PICK_NONE_EN).format(share=share)
    return f"{skip[0]}) {skip[1]}\n\n{why}" if skip else why
