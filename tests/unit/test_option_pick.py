"""Reading a multiple-choice answer off the first token's alternatives (option_pick.py)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from scholarflow.nodes.option_evidence import OptionEvidence, question_evidence
from scholarflow.nodes.option_pick import PICK_FLOOR, letter_shares, pick, picked_text
from scholarflow.nodes.options import split_options

ASKED = split_options("Which residue carries the glycan?\n\nOptions:\nA) Trp324\nB) Asn326\n"
                      "C) Insufficient information to answer this question")

FIVE = split_options("Which residue carries the glycan?\n\nOptions:\nA) Trp324\nB) Asn326\n"
                     "C) Leu288\nD) Phe302\nE) Insufficient information to answer this question")


def alternatives(**chances: float) -> list[tuple[str, float]]:
    return [(token.replace("_", " "), math.log(p)) for token, p in chances.items()]


def test_letter_shares_count_each_spelling_of_a_letter_and_share_what_letters_got() -> None:
    logprobs = [(" B", math.log(0.5)), ("B", math.log(0.1)), ("(A", math.log(0.2)),
                ("b", math.log(0.1)), ("The", math.log(0.1))]
    shares = letter_shares(logprobs, ASKED.letters)
    assert shares is not None
    # "b" may begin a word and "The" is none: B has 0.6 of the letters' 0.8.
    assert shares == pytest.approx({"A": 0.25, "B": 0.75, "C": 0.0})


def test_no_answer_is_read_when_the_model_was_not_writing_a_letter() -> None:
    assert letter_shares(alternatives(The=0.7, B=0.2), ASKED.letters) is None
    assert letter_shares([], ASKED.letters) is None
    assert pick(ASKED, alternatives(Based=0.9, A=0.05)) is None


def test_the_pick_is_the_best_letter_and_abstains_under_half_or_on_insufficient() -> None:
    sure = pick(ASKED, alternatives(B=0.7, A=0.2, C=0.1))
    assert sure is not None
    assert (sure.letter, sure.text, sure.abstained) == ("B", "Asn326", False)
    assert sure.share == pytest.approx(0.7)
    assert sure.describe() == "B 70%, A 20%, C 10%"
    assert PICK_FLOOR == 0.5
    unsure = pick(FIVE, alternatives(B=0.45, A=0.2, C=0.15, D=0.1, E=0.1))
    assert unsure is not None and (unsure.letter, unsure.abstained) == ("B", True)
    enough = pick(FIVE, alternatives(B=0.5, A=0.2, C=0.1, D=0.1, E=0.1))
    assert enough is not None and (enough.letter, enough.abstained) == ("B", False)
    none = pick(ASKED, alternatives(C=0.9, B=0.1))
    assert none is not None and (none.letter, none.abstained) == ("C", True)


def test_the_answer_quotes_the_sentence_naming_the_option_in_the_question_language() -> None:
    chosen = pick(ASKED, alternatives(B=0.8, A=0.2))
    assert chosen is not None
    said = [OptionEvidence("A", "Trp324", None, ""),
            OptionEvidence("B", "Asn326", 3, "The glycan attaches to Asn326.")]
    assert picked_text(chosen, ASKED, said, chinese=False) == (
        'B) Asn326\n\nPassage [3] says: "The glycan attaches to Asn326." [3]\n\n'
        "(The model gave this option 80% of its choice among the options.)")
    assert picked_text(chosen, ASKED, said, chinese=True) == (
        "B) Asn326\n\n段落 [3] 写道：“The glycan attaches to Asn326.” [3]\n\n"
        "（模型在各选项中给这个选项的把握：80%。）")
    # No passage names it word for word ("Yes" never is): the sentence nearest the
    # question is quoted, so the answer still has its source; without one, none.
    passage: Any = {"text": "Glycans are common. The glycan carries a residue. Unrelated."}
    nearest = question_evidence(ASKED, [passage])
    assert nearest is not None and (nearest.passage, nearest.sentence) == (
        1, "The glycan carries a residue.")
    assert picked_text(chosen, ASKED, said[:1], chinese=False, otherwise=nearest) == (
        'B) Asn326\n\nPassage [1] says: "The glycan carries a residue." [1]\n\n'
        "(The model gave this option 80% of its choice among the options.)")
    assert picked_text(chosen, ASKED, said[:1], chinese=False) == (
        "B) Asn326\n\n(The model gave this option 80% of its choice among the options.)")


def test_an_abstention_names_the_insufficient_option_when_the_question_lists_one() -> None:
    unsure = pick(FIVE, alternatives(B=0.24, A=0.2, C=0.2, D=0.18, E=0.18))
    assert unsure is not None
    assert picked_text(unsure, FIVE, [], chinese=False) == (
        "E) Insufficient information to answer this question\n\nInsufficient information: "
        "the passages do not settle this question. The model gave no option 50% of its "
        "choice; the likeliest, B) Asn326, got 24%.")
    assert picked_text(unsure, FIVE, [], chinese=True).endswith(
        "模型给任何选项的把握都不到 50%；最可能的 B) Asn326 为 24%。")
    two = split_options("Which residue?\nA) Trp324\nB) Asn326")
    even = pick(two, alternatives(A=0.4, B=0.4))
    assert even is not None and (even.letter, even.abstained) == ("A", False)  # half each
    four = split_options("Which residue?\nA) Trp324\nB) Asn326\nC) Leu288\nD) Phe302")
    unsure_of_four = pick(four, alternatives(A=0.3, B=0.3, C=0.2, D=0.2))
    assert unsure_of_four is not None and unsure_of_four.abstained is True
    assert picked_text(unsure_of_four, four, [], chinese=False).startswith(
        "Insufficient information: the passages do not settle")  # no option to name
    assert pick(four, alternatives(A=0.2, B=0.2, The=0.6)) is None  # letters under half
