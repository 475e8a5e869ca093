"""Reading a multiple-choice answer off the first token's alternatives (option_pick.py)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from scholarflow import Context
from scholarflow.llm.calls import LLMResult
from scholarflow.nodes import option_pick
from scholarflow.nodes.option_evidence import OptionEvidence, question_evidence
from scholarflow.nodes.option_free import first_line, free_option, read_on, same_word
from scholarflow.nodes.option_pick import (
    SURE_SHARE,
    OptionPick,
    decide,
    letter_shares,
    options_question,
    picked_text,
    read_pick,
    reversed_order,
)
from scholarflow.nodes.options import split_options
from scholarflow.state import LLMUsage

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


def test_the_reversed_order_keeps_the_letters_and_flips_the_options() -> None:
    flipped = reversed_order(FIVE)
    assert flipped.letters == FIVE.letters and flipped.stem == FIVE.stem
    assert flipped.options == ("Insufficient information to answer this question",
                               "Phe302", "Leu288", "Asn326", "Trp324")
    # Asked as text, it reads back as the same options, in English and in Chinese.
    assert split_options(options_question(flipped)) == flipped
    chinese = split_options("哪个残基连接了糖链？\n选项：\nA) Trp324\nB) Asn326\nC) 信息不足")
    asked_back = split_options(options_question(reversed_order(chinese)))
    assert "选项：" in options_question(reversed_order(chinese))
    assert asked_back.options == ("信息不足", "Asn326", "Trp324")
    assert asked_back.stem == "哪个残基连接了糖链？"


def test_the_answer_is_the_option_both_orders_rank_first() -> None:
    # B (Asn326) first as asked; reversed, Asn326 stands at D and is first there too.
    sure = decide(FIVE, {"A": 0.2, "B": 0.5, "C": 0.1, "D": 0.1, "E": 0.1},
                  {"A": 0.1, "B": 0.1, "C": 0.2, "D": 0.4, "E": 0.2})
    assert (sure.letter, sure.text, sure.abstained, sure.runner_up) == (
        "B", "Asn326", False, "")
    assert sure.share == pytest.approx(0.5)
    assert sure.describe() == "B 50%, A 20%, C 10%, D 10%, E 10%"
    # However low the share: agreement under both orders is what decides.
    low = decide(FIVE, {"A": 0.2, "B": 0.24, "C": 0.2, "D": 0.18, "E": 0.18},
                 {"A": 0.1, "B": 0.1, "C": 0.2, "D": 0.4, "E": 0.2})
    assert (low.letter, low.abstained) == ("B", False)
    # Reversed, the model's first is E there, Trp324 (A as asked): the order decided.
    split = decide(FIVE, {"A": 0.2, "B": 0.5, "C": 0.1, "D": 0.1, "E": 0.1},
                   {"A": 0.1, "B": 0.1, "C": 0.1, "D": 0.2, "E": 0.5})
    assert (split.letter, split.abstained, split.runner_up) == ("B", True, "A) Trp324")
    # Both orders rank "insufficient" first (E as asked, A reversed): it says so.
    none = decide(FIVE, {"A": 0.1, "B": 0.1, "C": 0.1, "D": 0.1, "E": 0.6},
                  {"A": 0.6, "B": 0.1, "C": 0.1, "D": 0.1, "E": 0.1})
    assert (none.letter, none.abstained, none.runner_up) == ("E", True, "")


def test_the_answer_quotes_the_sentence_naming_the_option_in_the_question_language() -> None:
    chosen = decide(ASKED, {"A": 0.2, "B": 0.8, "C": 0.0}, {"A": 0.1, "B": 0.8, "C": 0.1})
    said = [OptionEvidence("A", "Trp324", None, ""),
            OptionEvidence("B", "Asn326", 3, "The glycan attaches to Asn326.")]
    share_en = ("(The model ranked this option first with the options in either order; "
                "with them as asked it gave it 80% of its choice.)")
    assert picked_text(chosen, ASKED, said, chinese=False) == (
        f'B) Asn326\n\nPassage [3] says: "The glycan attaches to Asn326." [3]\n\n{share_en}')
    assert picked_text(chosen, ASKED, said, chinese=True).startswith(
        "B) Asn326\n\n段落 [3] 写道：“The glycan attaches to Asn326.” [3]\n\n（选项按原顺序")
    # No passage names it word for word ("Yes" never is): the sentence nearest the
    # question is quoted, so the answer still has its source; without one, none.
    passage: Any = {"text": "Glycans are common. The glycan carries a residue. Unrelated."}
    nearest = question_evidence(ASKED, [passage])
    assert nearest is not None and (nearest.passage, nearest.sentence) == (
        1, "The glycan carries a residue.")
    assert picked_text(chosen, ASKED, said[:1], chinese=False, otherwise=nearest) == (
        f'B) Asn326\n\nPassage [1] says: "The glycan carries a residue." [1]\n\n{share_en}')
    assert picked_text(chosen, ASKED, said[:1], chinese=False) == f"B) Asn326\n\n{share_en}"


def test_an_abstention_names_the_insufficient_option_when_the_question_lists_one() -> None:
    split = decide(FIVE, {"A": 0.2, "B": 0.5, "C": 0.1, "D": 0.1, "E": 0.1},
                   {"A": 0.1, "B": 0.1, "C": 0.1, "D": 0.2, "E": 0.5})
    assert picked_text(split, FIVE, [], chinese=False) == (
        "E) Insufficient information to answer this question\n\nInsufficient information: "
        "the passages do not settle this question. The model's choice changed with the "
        "order of the options: B) Asn326 as asked, A) Trp324 with the order reversed.")
    assert picked_text(split, FIVE, [], chinese=True).endswith(
        "模型的选择随选项顺序而变：按原顺序选 B) Asn326，倒序时选 A) Trp324。")
    none = decide(FIVE, {"A": 0.1, "B": 0.1, "C": 0.1, "D": 0.1, "E": 0.6},
                  {"A": 0.6, "B": 0.1, "C": 0.1, "D": 0.1, "E": 0.1})
    assert picked_text(none, FIVE, [], chinese=False) == (
        "E) Insufficient information to answer this question\n\nInsufficient information: "
        "the model found no passage that answers this question (60% of its choice).")
    four = split_options("Which residue?\nA) Trp324\nB) Asn326\nC) Leu288\nD) Phe302")
    unsettled = decide(four, {"A": 0.4, "B": 0.3, "C": 0.2, "D": 0.1},
                       {"A": 0.4, "B": 0.3, "C": 0.2, "D": 0.1})
    assert unsettled.abstained and unsettled.runner_up == "D) Phe302"
    assert picked_text(unsettled, four, [], chinese=False).startswith(
        "Insufficient information: the passages do not settle")  # no option to name


class _Readings:
    """llm.complete for the hidden calls: the stem answered in words after the sentences
    nearest it ("EXCERPT" system message: `excerpt`) and after the passages ("PASSAGES":
    `free`), and each letter prompt's first-token alternatives, by the order shown."""

    def __init__(self, with_passages: dict[str, float],
                 reversed_with: dict[str, float] | None = None, logprobs: bool = True,
                 free: str = "not stated", excerpt: str = "not stated") -> None:
        self.tables = {False: with_passages, True: reversed_with or with_passages}
        self.logprobs = logprobs
        self.free = {"EXCERPT": excerpt, "PASSAGES": free}
        self.prompts: list[Any] = []
        self.read: list[str] = []  # each call's system message, and " letter" for letters

    async def complete(self, ctx: Any, prompt: Any, **kwargs: Any) -> LLMResult:
        self.prompts.append(prompt)
        self.read.append(prompt[0][1] + (" letter" if kwargs.get("top_logprobs") else ""))
        usage: LLMUsage = {"node": "answer_generation", "model": "m", "input_tokens": 1,
                           "output_tokens": 1, "seconds": 0.0}
        if not kwargs.get("top_logprobs"):  # the stem alone, answered in words
            return LLMResult(text=self.free[prompt[0][1]], usage=usage)
        table = self.tables["A) Insufficient" in prompt[-1][1]]
        alternatives = tuple((k, math.log(p)) for k, p in table.items()) if self.logprobs else ()
        return LLMResult(text="", usage=usage, first_token_logprobs=alternatives)


async def _read(monkeypatch: pytest.MonkeyPatch, readings: _Readings,
                excerpt: list[Any] | None = None) -> OptionPick | None:
    monkeypatch.setattr(option_pick.llm, "complete", readings.complete)
    chosen, usage = await read_pick(
        Context(), [("system", "PASSAGES")], options_question(FIVE), FIVE, [],
        [{"text": "Glycans are common. Asn326 carries it."}],  # type: ignore[typeddict-item]
        node="answer_generation", excerpt_head=[("system", "EXCERPT")],
        excerpt_passages=[{"text": "Asn326 carries it."}] if excerpt is None else excerpt,
    )
    assert len(usage) == len(readings.prompts)
    return chosen


async def test_a_sure_first_reading_answers_without_the_reversed_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sure = _Readings({"B": SURE_SHARE + 0.01, "A": 0.99 - SURE_SHARE})
    chosen = await _read(monkeypatch, sure)
    assert chosen is not None and (chosen.letter, chosen.abstained) == ("B", False)
    assert not chosen.both_orders
    # In words after the sentences nearest the stem ("not stated"), after the passages,
    # then the letter after them: the short prompt first, so a one-prompt cache keeps the
    # passages for the calls after it.
    assert sure.read == ["EXCERPT", "PASSAGES", "PASSAGES letter"]
    assert "not to read the options again" in picked_text(chosen, FIVE, [], chinese=False)


async def test_an_unsure_first_reading_is_checked_in_the_reversed_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # B under SURE_SHARE: reversed, the model's first is E there, Trp324 (A as asked).
    unsure = _Readings({"B": 0.45, "A": 0.35, "C": 0.2}, reversed_with={"E": 0.7, "B": 0.3})
    chosen = await _read(monkeypatch, unsure)
    assert chosen is not None and chosen.both_orders
    assert (chosen.letter, chosen.abstained, chosen.runner_up) == ("B", True, "A) Trp324")
    # Four calls at most; the passages three times in a row (a cached prefix).
    assert unsure.read == ["EXCERPT", "PASSAGES", "PASSAGES letter", "PASSAGES letter"]
    assert "A) Insufficient" in unsure.prompts[3][-1][1]
    # Reversed, D there is Asn326 (B as asked): both orders agree, however low the share.
    agreed = _Readings({"B": 0.45, "A": 0.35, "C": 0.2},
                       reversed_with={"D": 0.45, "A": 0.35, "E": 0.2})
    chosen = await _read(monkeypatch, agreed)
    assert chosen is not None and (chosen.letter, chosen.abstained) == ("B", False)


async def test_a_server_without_alternatives_leaves_the_answer_to_the_streamed_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    none = _Readings({"B": 1.0}, logprobs=False)
    assert await _read(monkeypatch, none) is None
    assert none.read == ["EXCERPT", "PASSAGES", "PASSAGES letter"]  # one letter call


def test_an_answer_in_words_names_the_option_it_has_the_words_of() -> None:
    opts = split_options("Which change?\n\nOptions:\nA) 5-fold\nB) 2-fold\n"
                         "C) East and southeast\nD) East and southeast: northeast\nE) No\n"
                         "F) Insufficient information to answer this question")
    assert free_option("5-fold more sensitive to desiccation [2]", opts) == "A"
    assert free_option("east and southeast", opts) == "C"  # all its words, only its own
    assert free_option("East and southeast: northeast.\n\nBecause [1]", opts) == "D"
    assert free_option("No", opts) == "E"  # "No" must be the whole answer
    assert free_option("No change in the northeast", opts) is None
    assert free_option("No, they do not [2]", opts) == "E"  # its first word, then a comma
    assert free_option("not stated", opts) is None
    assert free_option("未提及", opts) is None
    assert free_option("5-fold【2, 3】", opts) == "A"  # any citation the answers may carry
    assert free_option("Insufficient information to answer this question", opts) is None
    assert free_option("3-fold", opts) is None  # half of each option's words: neither
    assert free_option("", opts) is None
    # A word with a short ending is the same word; a number is not.
    assert same_word("multipliers", "multiplier") and same_word("shaped", "shape")
    assert not same_word("1000", "100") and not same_word("asymmetrical", "symmetrical")
    assert not same_word("cats", "cat")  # too short to tell an ending from a word
    shapes = split_options("Which compacts first?\nA) Relaxed and doubly tethered (J-shape)\n"
                           "B) Supercoiled and doubly tethered (Y-shape)\n"
                           "C) Relaxed and singly tethered (I-shaped)\nD) Lagrange multiplier "
                           "constraints\nE) Symmetrical dimethylarginine modifications")
    assert free_option("Y-shaped", shapes) == "B"  # the one option with both its words
    assert free_option("symmetrical", shapes) is None  # one word of three: too little
    assert free_option("Lagrange multipliers", shapes) == "D"
    assert free_option("doubly tethered", shapes) is None  # two options have both
    editors = split_options("Which editor?\nA) CXE (Cas9-XTEN-hExo1)\nB) CTE (Cas9-TGS-hExo1)\n"
                            "C) ETC (hExo1-TGS-Cas9)\nD) Vamp2 and lncRNA\nE) lncRNA")
    assert free_option("CXE", editors) == "A"  # a name alone, in one option only
    assert free_option("hExo1", editors) is None  # in three
    assert free_option("Vamp2.", editors) == "D"
    assert first_line("[1][3]\n\nAsn326 [2]") == "Asn326"


def test_an_answer_in_words_is_read_on_as_the_passage_it_was_copied_from_goes_on() -> None:
    opts = split_options("Which pair differs most?\n\nOptions:\nA) East and southeast\n"
                         "B) East and southeast: northeast\nC) Get3\nD) Get3/4 complex\n"
                         "E) Insufficient information to answer this question")
    pair = [{"text": "FST was highest for the east and southeast: northeast pair (0.09)."}]
    assert read_on("A", "east and southeast", opts, pair) == "B"
    # Said elsewhere, or not going on with the longer option's words: as named.
    assert read_on("A", "east and southeast", opts, [{"text": "East and southeast."}]) == "A"
    assert read_on("A", "east and southeast", opts, []) == "A"
    bound = [{"text": "Get4/5 leaves the substrate-bound Get3. The Get3/4 complex forms."}]
    assert read_on("C", "substrate bound Get3", opts, bound) == "C"
    assert read_on("B", "east and southeast: northeast", opts, pair) == "B"  # none longer


async def test_an_answer_in_words_naming_an_option_settles_it_without_the_letters(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The letters would leave it unsettled; asked without the options, the model said
    # "Asn326" (B).
    readings = _Readings({"A": 0.45, "B": 0.4, "C": 0.15}, reversed_with={"E": 0.7, "B": 0.3},
                         excerpt="Asn326 [3]")
    chosen = await _read(monkeypatch, readings)
    assert chosen is not None and (chosen.letter, chosen.abstained) == ("B", False)
    assert chosen.free == "Asn326" and chosen.describe() == '"Asn326", option B'
    # The stem alone after the sentences nearest it, and nothing more.
    assert readings.read == ["EXCERPT"]
    assert readings.prompts[0][-1][1].startswith("Which residue carries the glycan?\n\n(Reply")
    # "not stated" there: the whole passages are read next, and name it.
    readings = _Readings({"A": 0.45, "B": 0.4}, free="Asn326")
    chosen = await _read(monkeypatch, readings)
    assert chosen is not None and chosen.free == "Asn326" and readings.read == [
        "EXCERPT", "PASSAGES"]
    # No sentence shares a word with the stem: the passages are read first.
    readings = _Readings({"A": 0.45, "B": 0.4}, free="Asn326")
    assert await _read(monkeypatch, readings, excerpt=[]) is not None
    assert readings.read == ["PASSAGES"]
    said = OptionEvidence("B", "Asn326", 2, "The glycan is attached to Asn326.")
    text = picked_text(chosen, FIVE, [said], chinese=False)
    assert text == ('B) Asn326\n\nPassage [2] says: "The glycan is attached to Asn326." [2]'
                    '\n\n(Asked without the options, the model answered "Asn326" from the '
                    'passages: this option.)')
    assert "模型根据这些段落回答“Asn326”" in picked_text(chosen, FIVE, [said], chinese=True)
