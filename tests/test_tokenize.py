"""The BM25 tokenizer: Chinese as character unigrams and bigrams, English as kept words."""

from __future__ import annotations

from scholarflow.tools.index.tokenize import has_words, query_terms, stem, tokenize


def test_english_words_are_lowercased_stemmed_and_stopwords_dropped() -> None:
    assert tokenize("The Networks of Queries") == ["network", "query"]


def test_joined_words_and_numbers_are_kept_whole_and_split() -> None:
    terms = tokenize("lr 3e-4 with BERT-base, GPT-3 and x86_64 at 1.5.")
    for term in ("3e-4", "bert-base", "bert", "base", "gpt-3", "gpt", "x86_64", "1.5"):
        assert term in terms
    assert "1.5." not in terms  # a sentence's full stop is not part of the number


def test_chinese_becomes_unigrams_and_bigrams() -> None:
    terms = tokenize("注意力机制")
    assert terms[:5] == ["注", "意", "力", "机", "制"]
    assert terms[5:] == ["注意", "意力", "力机", "机制"]


def test_mixed_text_splits_at_script_boundaries() -> None:
    terms = tokenize("Transformer的注意力")
    assert "transformer" in terms
    assert "的注" in terms and "注意" in terms
    assert not any("transformer" in t and len(t) > len("transformer") for t in terms)


def test_full_width_letters_fold_to_ascii() -> None:
    assert tokenize("ＢＥＲＴ　３") == ["bert", "3"]


def test_punctuation_only_has_no_words() -> None:
    assert tokenize("?!。，…——") == []
    assert not has_words("?!。，… —")
    assert has_words("the")  # a stopword is still a word: the query is not empty
    assert has_words("锚框")


def test_query_terms_are_distinct_in_order() -> None:
    assert query_terms("attention attention 注意 注意") == ["attention", "注", "意", "注意"]


def test_stem_leaves_short_and_non_plural_words() -> None:
    assert stem("class") == "class"
    assert stem("corpus") == "corpus"
    assert stem("analysis") == "analysis"
    assert stem("gas") == "gas"
    assert stem("boxes") == "box"
    assert stem("layers") == "layer"


def test_very_long_words_do_not_reach_the_vocabulary() -> None:
    blob = "a" * 200
    assert tokenize(blob) == []
    url = "https://example.org/" + "x" * 100
    assert url.lower() not in tokenize(url)
    assert "example" in tokenize(url)
