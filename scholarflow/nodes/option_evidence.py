"""Where the passages mention each option of a multiple-choice question.

A small model shown many passages and several options tends to pick the option
(or the letter) its training favours, whatever the passages say. What it can do
is compare: so the answer prompt gets, after the passages, each option a passage
names, with the one sentence that names it and shares most words with the
question, and a chosen option is shown with that sentence as its evidence. The
options keep the question's order; nothing here picks one.

An option is named by a sentence when its words appear there in order
(dashes, "×" and case normalised; a compound the one writes whole and the other in
pieces, "upregulation" and "up-regulation", is one word), or, for an option with two
numbers or more, its numbers do ("residues 344–360" by "amino acids 344-360").
"Yes", "No" and the like, and paraphrased options ("There are no significant
differences"), are named by none; when no option is named, the prompt gets no list.

The same test of naming trims the prompt's passages (`option_passages`): a
multiple-choice prompt keeps the best few and, of the rest, only those naming an
option.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

from scholarflow.llm.budget import cap_tokens
from scholarflow.nodes.options import Options, insufficient_option
from scholarflow.prompts import OPTION_EVIDENCE
from scholarflow.retrieval.index.tokenize import query_terms
from scholarflow.state import RecalledChunkState
from scholarflow.tokens import count_tokens

__all__ = ["UNNAMEABLE", "OptionEvidence", "compounds", "contains",
           "format_option_evidence", "names", "option_evidence", "option_passages",
           "option_words",
           "question_evidence", "reserve_tokens", "split_sentences", "stem_terms", "words"]

SENTENCE_TOKENS = 70  # a quoted sentence's bound: long captions would crowd the prompt
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\[\"“])|(?<=[。！？])")
# A period that ends no sentence: "(Fig. 2C)", "et al. 2020", "e.g. 5".
_ABBREVIATION = re.compile(
    r"(?:\b(?:Figs?|Fig|Eqs?|Refs?|No|vs|ca|approx|al|e\.g|i\.e|cf|Suppl|Supp|Tab)\.)$", re.I)
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
# Options every passage "names": "No" in "No effect was seen" says nothing about "No".
UNNAMEABLE = [["yes"], ["no"], ["none"], ["both"], ["neither"], ["all"]]
_RANGE_WORDS = frozenset({"to", "through"})
_CJK = re.compile(r"[\u4e00-\u9fff]")
_DASHES = str.maketrans({c: "-" for c in "\u2010\u2011\u2012\u2013\u2014\u2212"} | {"×": "x"})


@dataclass(frozen=True, slots=True)
class OptionEvidence:
    letter: str
    text: str
    passage: int | None  # the 1-based number of the passage naming it; None when none does
    sentence: str  # that passage's sentence naming it, "" when none does


def split_sentences(text: str) -> list[str]:
    """`text`'s sentences, not cut after "Fig." or "et al."."""
    merged: list[str] = []
    for piece in _SENTENCE.split(" ".join(text.split())):
        if merged and _ABBREVIATION.search(merged[-1]):
            merged[-1] = f"{merged[-1]} {piece}"
        elif piece:
            merged.append(piece)
    return merged


def words(text: str) -> list[str]:
    """`text`'s words, lower case, dashes and "×" normalised."""
    return _WORD.findall(text.translate(_DASHES).lower())


def compounds(these: list[str], whole: Collection[str]) -> list[str]:
    """`these` words with each run of two or three joined where `whole` has them as one
    word: "up", "regulation" become "upregulation" beside a text that writes it so."""
    joined: list[str] = []
    i = 0
    while i < len(these):
        width = next((k for k in (3, 2) if i + k <= len(these)
                      and "".join(these[i:i + k]) in whole), 1)
        joined.append("".join(these[i:i + width]))
        i += width
    return joined


def names(option: list[str], sentence: list[str]) -> bool:
    """`sentence` names `option`: its words in order, a compound whole or in pieces; for
    an option with numbers, its numbers in order ("residues 344–360" is named by "amino
    acids 344-360")."""
    if option in UNNAMEABLE:
        return False
    if contains(sentence, option) or contains(compounds(sentence, option),
                                              compounds(option, sentence)):
        return True
    numbers = [w for w in option if _digit(w)]
    if len(numbers) < 2:  # one number alone ("4" of "4-fold") is in every other sentence
        return False
    # "344 to 360" is the range "344-360"; "320 and 343" names two residues, not it.
    joined = [w for i, w in enumerate(sentence)
              if not (w in _RANGE_WORDS and 0 < i < len(sentence) - 1
                      and _digit(sentence[i - 1]) and _digit(sentence[i + 1]))]
    return contains(joined, numbers)


def _digit(word: str) -> bool:
    return any(c.isdigit() for c in word)


def contains(whole: list[str], part: list[str]) -> bool:
    """`part`'s words stand in `whole` one after the other."""
    width = len(part)
    return width > 0 and any(whole[i:i + width] == part for i in range(len(whole) - width + 1))


def _candidates(asked: Options) -> list[tuple[str, str, list[str]]]:
    """(letter, text, words) of each option but the "insufficient" one."""
    skip = insufficient_option(asked)
    return [(letter, text, words(text))
            for letter, text in zip(asked.letters, asked.options, strict=True)
            if not (skip and letter == skip[0])]


def option_words(asked: Options) -> list[tuple[str, list[str]]]:
    """(letter, words) of each option but the "insufficient" one."""
    return [(letter, option) for letter, _, option in _candidates(asked)]


def option_evidence(asked: Options, passages: Sequence[RecalledChunkState]
                    ) -> list[OptionEvidence]:
    """Each option but the "insufficient" one with the sentence that names it best."""
    terms = stem_terms(asked)
    # Each sentence's words once, not once per option.
    split = [[(s, words(s)) for s in split_sentences(p["text"])] for p in passages]
    found: list[OptionEvidence] = []
    for letter, text, option in _candidates(asked):
        best = _nearest(terms, ((number, sentence) for number, sentences in enumerate(split, 1)
                                for sentence, said in sentences if names(option, said)))
        found.append(OptionEvidence(letter, text, *best) if best
                     else OptionEvidence(letter, text, None, ""))
    return found


def option_passages(asked: Options, passages: Sequence[RecalledChunkState], best: int
                    ) -> list[RecalledChunkState]:
    """The first `best` of `passages` (best first), then those of the rest with a
    sentence naming an option, in their order: the passage that answers ranks high or
    names the right option, and a shorter prompt is read faster."""
    options = [option for _, option in option_words(asked)]

    def names_one(passage: RecalledChunkState) -> bool:
        split = [words(sentence) for sentence in split_sentences(passage["text"])]
        return any(names(option, said) for option in options for said in split)

    return list(passages[:best]) + [p for p in passages[best:] if names_one(p)]


def stem_terms(asked: Options) -> set[str]:
    """The stem's search terms longer than two letters, and its Chinese character pairs
    (Chinese is searched by them)."""
    return {t for t in query_terms(asked.stem)
            if len(t) > 2 or (len(t) == 2 and all(_CJK.fullmatch(c) for c in t))}


def _nearest(terms: set[str], candidates: Iterable[tuple[int, str]]
             ) -> tuple[int, str] | None:
    """(passage, sentence) of the candidate sharing most `terms`, the first on a tie, its
    sentence capped to SENTENCE_TOKENS; None without candidates."""
    best: tuple[int, int, str] | None = None  # (shared terms, passage, sentence)
    for number, sentence in candidates:
        shared = len(terms.intersection(query_terms(sentence)))
        if best is None or shared > best[0]:
            best = (shared, number, sentence)
    return None if best is None else (best[1], cap_tokens(best[2], SENTENCE_TOKENS))


def question_evidence(asked: Options, passages: Sequence[RecalledChunkState]
                      ) -> OptionEvidence | None:
    """The sentence sharing most words with the stem, as evidence of no option: what an
    answer naming an option no passage names ("Yes") quotes. None without passages."""
    best = _nearest(stem_terms(asked), ((number, sentence)
                                         for number, passage in enumerate(passages, 1)
                                         for sentence in split_sentences(passage["text"])))
    return OptionEvidence("", "", *best) if best else None


def reserve_tokens(asked: Options) -> int:
    """The most the list can take in the prompt: room the passages leave it."""
    if not asked.options:
        return 0
    header = count_tokens(OPTION_EVIDENCE.format(options=""))
    return header + sum(count_tokens(text) + SENTENCE_TOKENS + 16 for text in asked.options)


def format_option_evidence(found: Sequence[OptionEvidence]) -> str:
    """The prompt's list: the options a passage names, each with its sentence; "" when
    none is named. Options named by none are left out: a small model tends to copy the
    list's first line as its answer, whatever that line says."""
    return "\n".join(f'- {item.letter}) {item.text}: passage [{item.passage}] says "'
                     f'{item.sentence}"' for item in found if item.passage)
