"""The sentences nearest a multiple-choice stem (nodes/option_excerpt.py)."""

from __future__ import annotations

from typing import Any

from scholarflow.nodes.citations import format_chunks
from scholarflow.nodes.option_excerpt import excerpt
from scholarflow.nodes.options import split_options

ASKED = split_options("What happens to Zfx9 expression after knockout of Rab37?\n"
                      "A) It doubles\nB) No change\n"
                      "C) Insufficient information to answer this question")


def passage(n: int, text: str) -> Any:
    return {"chunk_id": f"c{n}", "doc_id": "d", "title": "T", "location": f"p. {n}",
            "text": text, "score": 1.0}


def test_the_sentences_sharing_the_stems_rarer_words_are_kept_with_their_neighbours() -> None:
    passages = [
        passage(1, "Expression was measured. Knockout lines were made. Cells grew. "
                   "Expression was high. Nothing else."),
        passage(2, "Cilia were imaged. Strains lacking the GTPase were used. We observed a "
                   "twofold rise in Zfx9 abundance in the Rab37 null strain. "
                   "It may be stabilised. Unrelated methods follow. More methods."),
        passage(3, "Nothing about it here. Or here."),
    ]
    cut, numbers = excerpt(ASKED, passages, 3)
    # "Zfx9" and "Rab37" are rare and in one sentence: it leads, with one sentence either
    # side; passage 1's sentences share only common words ("expression", "knockout").
    assert numbers[-1] == 2
    assert cut[-1]["text"] == ("Strains lacking the GTPase were used. We observed a twofold "
                               "rise in Zfx9 abundance in the Rab37 null strain. It may be "
                               "stabilised.")
    assert 3 not in numbers  # no stem word: not kept
    assert all(len(c["text"]) < len(p["text"]) for c, p in zip(
        cut, [passages[n - 1] for n in numbers], strict=True))
    # Under the numbers the whole prompt gives them, so citations stay the same.
    assert '<chunk n="2" title="T" where="p. 2">' in format_chunks(cut, numbers)


def test_no_sentence_sharing_a_stem_word_leaves_no_excerpt() -> None:
    assert excerpt(ASKED, [passage(1, "Cilia were imaged. Cells grew.")], 3) == ([], [])
    assert excerpt(ASKED, [], 3) == ([], [])


def test_the_number_of_sentences_is_the_callers() -> None:
    passages = [passage(1, "Zfx9 rose. Filler one. Filler two. Rab37 was lost. Filler three. "
                           "Filler four. Zfx9 and Rab37 were both measured.")]
    cut, _ = excerpt(ASKED, passages, 1)
    # One sentence (the one holding both rare words) and its neighbour before it.
    assert cut[0]["text"] == "Filler four. Zfx9 and Rab37 were both measured."
    cut, _ = excerpt(ASKED, passages, 0)
    assert cut == []


def test_a_chinese_stem_is_matched_by_its_character_pairs() -> None:
    asked = split_options("稀疏注意力的窗口大小是多少？\nA) 128\nB) 256\nC) 信息不足")
    text = "我们使用了滑动窗口。稀疏注意力的窗口大小为256个词元。训练用了八块GPU。其他无关内容。"
    cut, numbers = excerpt(asked, [passage(1, text)], 3)
    assert numbers == [1] and "稀疏注意力的窗口大小为256个词元。" in cut[0]["text"]
    assert "其他无关内容" not in cut[0]["text"]  # two sentences away from the nearest


def test_the_sentence_quoted_for_a_chinese_stem_shares_its_character_pairs() -> None:
    from scholarflow.nodes.option_evidence import question_evidence

    asked = split_options("AlexNet第一层的卷积窗口形状是什么？\nA) 3×3\nB) 11×11\nC) 信息不足")
    passages = [passage(1, "Ever since AlexNet it has become popular to stack blocks."),
                passage(2, "在AlexNet的第一层，卷积窗口的形状是11乘11。其他无关内容。")]
    nearest = question_evidence(asked, passages)
    assert nearest is not None and nearest.passage == 2
    assert nearest.sentence == "在AlexNet的第一层，卷积窗口的形状是11乘11。"


def test_each_options_best_sentence_sharing_a_stem_word_joins_the_nearest() -> None:
    asked = split_options("What happens to Zfx9 expression after knockout of Rab37?\n"
                          "A) It doubles\nB) A fourfold drop\n"
                          "C) Insufficient information to answer this question")
    passages = [passage(1, "Zfx9 and Rab37 were studied in knockout lines. Filler one. "
                           "Filler two. Filler three. Filler four. In these cells Zfx9 showed "
                           "a fourfold drop. Filler five. Filler six. Filler seven. "
                           "A fourfold drop in yield was unrelated.")]
    cut, _ = excerpt(asked, passages, 1)
    # The nearest sentence names no option; the best one naming "a fourfold drop" and
    # sharing a stem word ("Zfx9") is kept with its neighbours; the one sharing none is not.
    assert "In these cells Zfx9 showed a fourfold drop." in cut[0]["text"]
    assert "unrelated" not in cut[0]["text"]
    assert "Filler three" not in cut[0]["text"]
