"""A multiple-choice answer read off the model's first token, and abstention.

Asked to write the letter of the option the passages support, then explain,
Qwen2.5-1.5B wrote a letter for every LitQA2 question and never the
"insufficient" one: 21 of 41 right, precision 0.51. The letter it writes is
the most likely first token; how likely says how sure it is. So for a
question that lists options, one hidden call asks for the letter alone
(`max_tokens=1`) with the first token's alternatives (`top_logprobs`), and:

* the options' letters share the probability the model gave letters at all;
* the best option is the answer when it holds at least `PICK_FLOOR` (half)
  of it and is not the "insufficient" option; otherwise the answer
  says the passages do not settle it, naming that option when the question
  lists one;
* the answer is the option with the passage sentence that names it
  (nodes/option_evidence.py), cited, and the share the model gave it: no
  second call writes an explanation, which cost the 1.5B model 300-odd
  tokens at 10-15 a second.

A server that gives no alternatives (some do not implement `logprobs`), or a
first token that is not a letter, leaves the answer to the streamed call as
before (`pick` returns None).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from scholarflow.context import Context
from scholarflow.llm import calls as llm
from scholarflow.nodes.option_evidence import OptionEvidence
from scholarflow.nodes.options import Options, insufficient_option
from scholarflow.prompts import (
    PICK_NONE_EN,
    PICK_NONE_ZH,
    PICK_UNSETTLED_EN,
    PICK_UNSETTLED_ZH,
    PICKED_EVIDENCE_EN,
    PICKED_EVIDENCE_ZH,
    PICKED_SHARE_EN,
    PICKED_SHARE_ZH,
)
from scholarflow.state import LLMUsage

__all__ = ["LETTER_MASS_FLOOR", "PICK_FLOOR", "OptionPick", "letter_shares", "pick",
           "picked_text", "read_pick"]

TOP_LOGPROBS = 20  # alternatives asked for: the letters sit in the first few
# The answer's share of the letters' probability below which the answer abstains: under
# half, the model holds it likelier that some other option is right than that this one
# is. On LitQA2's dev split with Qwen2.5-1.5B (bench/README.md, `litqa.py floors`) it
# answered 7 of the first 28 questions, 6 right. A quarter, the best floor of each half
# of the first 20 for the other, answered 6 of the next 8, 3 of them wrong.
PICK_FLOOR = 0.5
# Letters must hold this much of the first token's probability, else the model was not
# answering with a letter ("The", "Based"): the streamed answer decides instead.
LETTER_MASS_FLOOR = 0.5


@dataclass(frozen=True, slots=True)
class OptionPick:
    letter: str
    text: str
    share: float  # of the probability the model gave the options' letters
    abstained: bool  # the answer is that the passages do not settle it
    shares: tuple[tuple[str, float], ...] = ()  # every letter's, best first

    def describe(self) -> str:
        """The shares for the thinking events: "C 62%, A 20%, ..."."""
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


def pick(asked: Options, logprobs: Sequence[tuple[str, float]]) -> OptionPick | None:
    """The answer the first token's alternatives give, or None when they give none."""
    shares = letter_shares(logprobs, asked.letters)
    if shares is None:
        return None
    letter = max(asked.letters, key=lambda k: shares[k])  # ties: the first listed
    text = asked.options[asked.letters.index(letter)]
    skip = insufficient_option(asked)
    abstained = shares[letter] < PICK_FLOOR or (skip is not None and letter == skip[0])
    ranked = tuple(sorted(shares.items(), key=lambda item: -item[1]))
    return OptionPick(letter, text, shares[letter], abstained, ranked)


async def read_pick(ctx: Context, prompt: llm.Prompt, asked: Options, *, node: str
                    ) -> tuple[OptionPick | None, LLMUsage]:
    """The hidden letter-only call (`prompt` ends in question_turn(letter_only=True)) and
    the answer its first token gives; None when it gives none."""
    result = await llm.complete(ctx, prompt, node=node, max_tokens=1,
                                top_logprobs=TOP_LOGPROBS)
    return pick(asked, result.first_token_logprobs), result.usage


def picked_text(chosen: OptionPick, asked: Options, evidence: Sequence[OptionEvidence],
                *, chinese: bool, otherwise: OptionEvidence | None = None) -> str:
    """The answer: the option with the sentence that names it (else `otherwise`, the
    sentence nearest the question) and the model's share; or, when it abstains, that the
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
        lines.append((PICKED_SHARE_ZH if chinese else PICKED_SHARE_EN).format(share=share))
        return "\n".join(lines)
    skip = insufficient_option(asked)
    if skip is not None and chosen.letter == skip[0]:
        why = (PICK_NONE_ZH if chinese else PICK_NONE_EN).format(share=share)
    else:
        why = (PICK_UNSETTLED_ZH if chinese else PICK_UNSETTLED_EN).format(
            option=option, share=share, floor=f"{PICK_FLOOR:.0%}")
    return f"{skip[0]}) {skip[1]}\n\n{why}" if skip else why
