"""The BM25 tokenizer: Chinese as character unigrams and bigrams, English as kept words."""

from __future__ import annotations

import random
import re
import unicodedata
from pathlib import Path

from scholarflow.retrieval.index.tokenize import (
    _CJK,
    MAX_WORD_CHARS,
    NFKC_SAFE,
    STOPWORDS,
    has_words,
    query_terms,
    stem,
    terms_text,
    tokenize,
)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "papers"


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


def test_a_query_does_not_search_for_the_words_pointing_at_its_options() -> None:
    # "of the following" is how a multiple-choice question names its options, not its
    # subject; "following" elsewhere is a word like any other.
    assert query_terms("Which of the Following buffers gave the sharpest peaks?") \
        == query_terms("Which buffers gave the sharpest peaks?")
    assert "following" not in query_terms("Which among the following solvents dissolved it?")
    assert "following" in query_terms("weight loss following the change of diet")
    assert query_terms("以下哪种溶剂溶解了样品？") == query_terms("哪种溶剂溶解了样品？")
    assert "以下" in query_terms("以下实验使用了小鼠")


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


# --- the fast path gives exactly the terms of the plain definition -------------------

_REFERENCE_TOKEN = re.compile(
    rf"(?P<cjk>[{_CJK}]+)|(?P<word>[^\W_{_CJK}]+(?:[-_.+/][^\W_{_CJK}]+)*)"
)


def _reference(text: str) -> list[str]:
    """The tokenizer as first written: NFKC, one regex match at a time, a string per term."""
    text = unicodedata.normalize("NFKC", text).lower()
    out: list[str] = []
    for match in _REFERENCE_TOKEN.finditer(text):
        run = match.group("cjk")
        if run is not None:
            out.extend(run)
            out.extend(run[i:i + 2] for i in range(len(run) - 1))
            continue
        word = match.group()
        parts = re.split(r"[-_.+/]", word)
        if len(parts) > 1 and len(word) <= MAX_WORD_CHARS:
            out.append(word)
        out.extend(stem(p) for p in parts if p not in STOPWORDS and len(p) <= MAX_WORD_CHARS)
    return out


def _samples() -> list[str]:
    texts = [p.read_text(encoding="utf-8") for p in sorted(EXAMPLES.glob("*.md"))]
    texts += [line for text in texts for line in text.splitlines()]
    rng = random.Random(5)
    alphabet = (
        [chr(c) for c in range(0x20, 0x2100, 7)]
        + list("注意力机制的检索ＢＥＲＴ３－．／＋＿，。（）「」…ﬁ①²ªİｶﾞかな")
        + ["\u0301", "\u3099", "\u309b", "\uf900"]
        + list("abc-_.+/ 12\n\t") * 20
    )
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 120)))
              for _ in range(3000)]
    return texts


def test_terms_equal_the_reference_tokenizer() -> None:
    for text in _samples() * 2:  # twice: the second pass is served from the piece cache
        expected = _reference(text)
        assert tokenize(text) == expected, text[:80]
        assert terms_text(text) == " ".join(expected)


def test_text_skipping_nfkc_could_not_have_been_changed_by_it() -> None:
    # Every character NFKC_SAFE lets through unnormalised is a stable starter, or
    # becomes ASCII that is neither a word character nor a joiner (a separator either way).
    safe = re.compile(f"[{NFKC_SAFE}]")
    for code in range(0x110000):
        char = chr(code)
        if not safe.match(char):
            continue
        folded = unicodedata.normalize("NFKC", char)
        assert unicodedata.combining(char) == 0, hex(code)
        assert folded == char or (
            folded.isascii() and not any(c.isalnum() or c in "-_.+/" for c in folded)
        ), hex(code)
