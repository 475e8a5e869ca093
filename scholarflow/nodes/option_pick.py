"""A multiple-choice answer read off the model's first token, and abstention.

Asked to write the letter of the option the passages support, then explain,
Qwen2.5-1.5B wrote a letter for every LitQA2 question and never the
"insufficient" one: 21 of 41 right, precision 0.51. The letter it writes is
its most likely first token, so hidden calls ask for the letter alone
(`max_tokens=1`) with the first token's alternatives (`top_logprobs`); the
options' letters share the probability the model gave letters at all. One
reading is not enough: a small model favours some letters whatever they
stand for, and its guess without the passages is in the reading too. So:

* each reading is calibrated: an option's share is divided by its share when
  the same question, in the same order, is asked without the passages, then
  the shares are made to add up to one again. What counts is how far the
  passages moved the model, not where it started;
* the options are read in two orders, as asked and reversed: the answer is
  the option both readings rank first, unless it is the "insufficient"
  option. When they differ, the answer depends on where the options stand,
  and the answer says the passages do not settle the question, naming the
  question's "insufficient" option when it lists one. A first reading that
  gives one option SURE_SHARE of its choice is the answer without the
  second: that reading of the passages is the costliest call;
* the answer is the option with the passage sentence that names it
  (nodes/option_evidence.py), cited, and its share: no call writes an
  explanation, which cost the 1.5B model 300-odd tokens at 10-15 a second.

The question alone as asked (one token), then the stem alone after the passages, answered
in words (nodes/option_free.py): an answer naming one option ends it there, in two calls.
Else one-token calls: with the passages; when that is not sure, with the passages
reversed right after it, so a server that caches one prompt's prefix (llama.cpp does)
reads the passages once, then reversed alone: three or five calls. The calls
without passages are a question's length. On LitQA2 with Qwen2.5-1.5B
(bench/README.md, `litqa.py answer --readings`) the one uncalibrated reading at a floor
of half its choice answered few questions; calibrating one order only let two wrong
answers through that calibrating both abstained on.

A server that gives no alternatives (some do not implement `logprobs`), or a
first token that is not a letter, leaves the answer to the streamed call as
before (`read_pick` returns None: for a server without alternatives, after the
first call, the short one).
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

__all__ = ["LETTER_MASS_FLOOR", "PRIOR_FLOOR", "SURE_SHARE", "OptionPick", "calibrated",
           "decide", "letter_shares", "options_question", "picked_text", "read_pick",
           "reversed_order"]

TOP_LOGPROBS = 20  # alternatives asked for: the letters sit in the first few
# Letters must hold this much of the first token's probability, else the model was not
# answering with a letter ("The", "Based"): the streamed answer decides instead.
LETTER_MASS_FLOOR = 0.5
# The reading as asked decides alone when the passages moved the model this far to one
# option (its calibrated share); else the reversed order must agree. On LitQA2 with
# Qwen2.5-1.5B (bench/README.md) 0.5 answered as 0.6 did on the seventh session's 17
# questions and the eighth's 22 held out; with the ninth's shorter prompts, on all 41,
# one more right (21 / 18 / 2 against 20 / 19 / 2), and 14 read once instead of 8.
SURE_SHARE = 0.5
# A letter the model all but never gives without passages is divided by this at least:
# dividing by ~0 would hand it the whole choice for a trace of probability.
PRIOR_FLOOR = 0.01


@dataclass(frozen=True, slots=True)
class OptionPick:
    letter: str  # the first reading's best option: the answer unless `abstained`
    text: str
    share: float  # its calibrated share in the first reading
    abstained: bool  # the answer is that the passages do not settle it
    shares: tuple[tuple[str, float], ...] = ()  # the first reading's, calibrated, best first
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


def calibrated(shares: dict[str, float], prior: dict[str, float] | None
               ) -> dict[str, float]:
    """`shares` divided by the `prior` (the same letters without passages), summing to one
    again; `shares` as they are without a prior."""
    if prior is None:
        return shares
    moved = {k: p / max(prior.get(k, 0.0), PRIOR_FLOOR) for k, p in shares.items()}
    total = sum(moved.values()) or 1.0
    return {k: p / total for k, p in moved.items()}


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
    """The answer of the first reading (calibrated, by the question's letters) checked by
    the reversed one (calibrated, by the reversed order's letters), when there is one."""
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
                    *, node: str) -> tuple[OptionPick | None, list[LLMUsage]]:
    """The answer of hidden one-token calls: the question as asked alone, then after `head`
    (the answer prompt's system message with the passages, and the history); unless that
    reading is SURE_SHARE sure, the options reversed after the same head, then alone.
    None when the server gives no alternatives (after the first, short call) or a reading
    with the passages gives no letters' probabilities."""
    usage: list[LLMUsage] = []
    flipped = reversed_order(asked)
    flipped_question = options_question(flipped)

    async def alone(shown: Options, text: str) -> dict[str, float] | None:
        return await _letters(ctx, [("user", question_turn(text, letter_only=True))],
                              shown.letters, node, usage)

    async def after_head(shown: Options, text: str, named: Sequence[OptionEvidence]
                         ) -> dict[str, float] | None:
        turn = question_turn(text, format_option_evidence(named), letter_only=True)
        return await _letters(ctx, [*head, ("user", turn)], shown.letters, node, usage)

    try:
        # Alone first, then with the passages as asked and, when needed, reversed: the two
        # with the passages one after the other, so a server caching one prompt's prefix
        # (llama.cpp) reads the passages once.
        prior = await alone(asked, question)
        # The stem alone, before the letters: an answer naming an option settles it.
        named, said = await read_free(ctx, head, asked, node=node, usage=usage)
        if named is not None:
            return OptionPick(named, asked.options[asked.letters.index(named)], 1.0, False,
                              both_orders=False, free=said), usage
        first = await after_head(asked, question, evidence)
        if first is None:
            return None, usage
        first = calibrated(first, prior)
        if max(first.values()) >= SURE_SHARE:
            return decide(asked, first, None), usage
        # `evidence` is where the passages name the options as asked; reversed, their own.
        second = await after_head(flipped, flipped_question, option_evidence(flipped, passages))
        if second is None:
            return None, usage
        second = calibrated(second, await alone(flipped, flipped_question))
    except _NoAlternatives:
        return None, usage
    return decide(asked, first, second), usage


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
