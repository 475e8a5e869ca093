"""Matching an answer in words to a multiple-choice question's options (option_free.py).

Every case states which option the answer names, or that it names none, for options
written for the rule under test.
"""

from __future__ import annotations

import pytest

from scholarflow.nodes.option_free import first_line, free_option, same_word
from scholarflow.nodes.options import split_options

DOSES = split_options("How much more potent is the analogue?\n\nOptions:\nA) 3-fold\n"
                      "B) 30-fold\nC) North and west\nD) North and west: south\nE) Yes\n"
                      "F) Insufficient information to answer this question")


@pytest.mark.parametrize(("answer", "named"), [
    ("30-fold more potent in the kidney assay [2]", "B"),  # the option's words, then more
    ("30-fold【2, 3】", "B"),  # citations of either form are dropped first
    ("3-fold", "A"),  # numbers are whole words: "3" is not "30"
    ("north and west", "C"),  # every word of C and only its own; D has a word more
    ("North and west: south.\n\nBecause [1]", "D"),  # the first line alone
    ("Yes", "E"),
    ("Yes, it binds the receptor [2]", "E"),  # its first word, then a comma
    ("Yesterday's samples", None),  # not the word "Yes"
    ("not stated", None),
    ("未提及", None),
    ("Insufficient information to answer this question", None),  # a refusal names none
    ("10-fold", None),  # half of A's words ("fold") and of B's alike: neither
    ("", None),
])
def test_an_answer_names_the_option_whose_words_it_has(answer: str, named: str | None) -> None:
    assert free_option(answer, DOSES) == named


SHAPES = split_options("Which form binds first?\nA) Open and singly bound (L-form)\n"
                       "B) Closed and doubly bound (T-form)\nC) Open and doubly bound (U-form)\n"
                       "D) Phosphate buffer exchange\nE) Methylated arginine side chains")


@pytest.mark.parametrize(("answer", "named"), [
    ("T-form", "B"),  # two words, both in B alone
    ("phosphate buffers exchanged", "D"),  # short endings: the same words
    ("arginine", None),  # one word of three: too little to go on
    ("doubly bound", None),  # B and C both hold both words
])
def test_two_words_one_option_alone_holds_name_it(answer: str, named: str | None) -> None:
    assert free_option(answer, SHAPES) == named


def test_the_share_of_an_options_words_is_the_callers() -> None:
    opts = split_options("Which treatment?\nA) Low dose oral vitamin D\nB) Placebo tablets")
    # Two of A's five words, with a word A lacks (so the two-word rule does not apply):
    # enough at 0.4, not at 0.6.
    assert free_option("oral dose given", opts, covered=0.6) is None
    assert free_option("oral dose given", opts, covered=0.4) == "A"
    assert free_option("low dose oral vitamin given", opts, covered=0.6) == "A"  # four of five


def test_of_two_options_it_holds_the_longer_match_is_the_one_named() -> None:
    asked = split_options("Which pathway is required?\nA) IL-6\nB) IL-6/STAT3 signalling\n"
                          "C) TNF\nD) Insufficient information to answer this question")
    assert free_option("the IL-6/STAT3 axis", asked) == "B"  # il, 6 and stat3: B holds A
    assert free_option("IL-6 alone", asked) == "A"  # B's share too small: no longer match
    # A longer option that does not hold the shorter one's words is no longer match.
    other = split_options("Which?\nA) ZEB1\nB) Increased expression in muscle\nC) None")
    assert free_option("Increased expression of ZEB1 in liver", other) == "A"
    # Two longer matches: neither is the one meant, and the shorter stands.
    two = split_options("Which?\nA) Get4\nB) Get4/5 complex\nC) Get4/5 dimer")
    assert free_option("Get4/5 bound", two) == "A"


def test_a_word_with_a_short_ending_is_the_same_word_and_a_number_is_not() -> None:
    assert same_word("receptors", "receptor") and same_word("bound", "bounded")
    assert not same_word("1000", "100") and not same_word("asymmetric", "symmetric")
    assert not same_word("cats", "cat")  # too short to tell an ending from a word


def test_the_first_line_is_shown_without_its_citations() -> None:
    assert first_line("[1][3]\n\nSer212 [2]") == "Ser212"
    assert first_line("   \n") == ""


def test_naming_lists_findings_only_and_keeps_the_answers_own_numbers() -> None:
    from scholarflow.nodes.option_naming import nameable, numbers_agree

    asked = split_options("Which?\nA) 2 hours\nB) None of the above\nC) Both\n"
                          "D) Insufficient information to answer this question\n"
                          "E) All-trans retinoic acid\nF) Both A and B\nG) Both strands")
    assert nameable(asked).options == ("2 hours", "All-trans retinoic acid", "Both strands")
    assert nameable(asked).letters == ("A", "E", "G")
    assert numbers_agree("8 hours", "6 hours") is False
    assert numbers_agree("about 6.5 hours", "6.5 h") is True
    assert numbers_agree("six hours at 42 °C", "6 hours", "survival at 42 °C?") is True
    assert numbers_agree("AAGAG", "AAGAG lncRNA") is True
    assert numbers_agree("residues 11-40", "aa 11-20") is False  # one of two is not it


def test_naming_needs_an_answer_that_says_more_than_the_question() -> None:
    from scholarflow.nodes.option_naming import answered_without_option
    from scholarflow.state import OptionReading

    stem = "When Vamp2 is added to the Get3/4/5 complex, which part does it not bind?"
    echo = OptionReading(step="passages", said="Vamp2", letter=None)
    own = OptionReading(step="passages", said="the Get4/5 tetramer", letter=None)
    silent = OptionReading(step="passages", said="not stated", letter=None)
    assert answered_without_option([echo], stem) is None
    assert answered_without_option([silent], stem) is None
    assert answered_without_option([own, silent], stem) == own
    named = OptionReading(step="excerpt", said="Get3", letter="C")
    assert answered_without_option([named, own], stem) is None


def test_the_answer_says_who_matched_the_reading_to_its_option() -> None:
    """Matched by words, the answer says the reading is the option; matched by the model
    (name_option), it says the model said so, in the question's language."""
    from scholarflow.nodes.option_reading import reading_answer
    from scholarflow.state import OptionReading

    asked = split_options("幼虫存活了多久？\nA) 六小时\nB) 两小时\nC) 信息不足")
    by_words = [OptionReading(step="excerpt", said="六小时", letter="A")]
    by_model = [OptionReading(step="passages", said="6 h", letter=None),
                OptionReading(step="named", said="6 h", letter="A")]
    text, _ = reading_answer(asked, by_words, [], None, chinese=True)
    assert text.endswith("（不看选项时，模型根据这些段落回答“六小时”：即这个选项。）")
    text, _ = reading_answer(asked, by_model, [], None, chinese=True)
    assert text.startswith("A) 六小时")
    assert text.endswith("模型认为这个选项说的就是它。）") and "“6 h”" in text


def test_a_compound_is_one_word_whole_or_in_pieces() -> None:
    opts = split_options("What happens to the transcript?\nA) Upregulation of POLR2A mRNA\n"
                         "B) Downregulation of POLR2A mRNA\nC) Wild-type levels")
    assert free_option("up-regulation of POLR2A mRNA", opts) == "A"
    assert free_option("down-regulation of POLR2A mRNA [3]", opts) == "B"
    assert free_option("wildtype levels", opts) == "C"
    assert free_option("regulation of POLR2A", opts) is None  # a piece alone is not the word
