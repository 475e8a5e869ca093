"""The BM25 tokenizer: Chinese and English in one pass, no dictionary.

Measured with `bench/recall_probe.py quality` (the d2l sample: 6 English and
4 Chinese sections, 187 chunks; 40 questions, half about a document in the
other language, each also asked in translation; recall@5 / MRR@5):

| tokenizer                         | BM25 only     | hybrid w=0.3  |
|-----------------------------------|---------------|---------------|
| CJK unigrams + bigrams (this one) | 0.925 / 0.608 | 1.000 / 0.826 |
| CJK bigrams only                  | 0.950 / 0.642 | 0.975 / 0.821 |
| CJK bigrams + lone characters     | 0.950 / 0.655 |               |
| CJK unigrams only                 | 0.950 / 0.617 |               |
| no plural stemming                | 0.900 / 0.606 |               |
| no stopwords                      | 0.875 / 0.532 |               |

These 40 questions are the ones the choice was made on, and predate BM25's
normalisation by the query's bound; the independent 97-question set in
`bench/recall.py quality` is the figure to quote (0.938 for the hybrid with
translation at w=0.3, 0.40 for one query alone).

The CJK choices are within one question of each other; unigrams + bigrams
is best in the hybrid ranking that ships, and keeps a one-character word
(门, 层) searchable inside longer runs, which bigrams alone would not. A
dictionary segmenter (jieba) would load a 50 MB dictionary and miss
out-of-vocabulary terms, the very words papers coin. Speed: 4.4 MB/s of
mixed text on one core.

- Latin words and numbers are lowercased and kept whole with their inner
  joiners ("3e-4", "bert-base", "gpt-3", "x86_64", "1.5"); a joined word
  also yields its parts, so "BERT base" finds "bert-base".
- English gets a minimal plural stemmer ("networks" -> "network",
  "queries" -> "query"); Snowball would be a compiled dependency for what
  the plural rule already gives here.
- A few very common English words are dropped: they cost posting-list time
  at every query and only add noise (see "no stopwords").
"""

from __future__ import annotations

import re
import unicodedata

# CJK ideographs, kana and compatibility ideographs: scripts written without
# spaces, where a "word" has to be guessed from characters.
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_TOKEN = re.compile(
    rf"(?P<cjk>[{_CJK}]+)"
    # a word of letters/digits, optionally joined by - _ . + / to more such words
    rf"|(?P<word>[^\W_{_CJK}]+(?:[-_.+/][^\W_{_CJK}]+)*)"
)
_JOINERS = re.compile(r"[-_.+/]")

STOPWORDS = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "been", "but", "by", "can", "do", "does", "for",
    "from", "had", "has", "have", "how", "if", "in", "into", "is", "it", "its", "of", "on", "or",
    "s", "so", "such", "than", "that", "the", "their", "then", "there", "these", "they", "this",
    "to", "was", "we", "were", "what", "when", "where", "which", "while", "who", "why", "will",
    "with",
})

_NORMALISE_NEEDED = re.compile(r"[^\x00-\x7f]")
# Longer "words" are URLs, hashes or base64: kept only as their parts, so
# they cannot bloat the vocabulary.
MAX_WORD_CHARS = 64


def stem(word: str) -> str:
    """A minimal English plural stemmer (after Harman's S-stemmer)."""
    if len(word) <= 3 or not word.isalpha() or not word.isascii():
        return word
    if word.endswith("ies") and not word.endswith(("eies", "aies")):
        return word[:-3] + "y"
    if word.endswith("es") and word.endswith(("sses", "xes", "ches", "shes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def tokenize(text: str) -> list[str]:
    """The BM25 terms of `text`, in order, repeats kept (BM25 counts them)."""
    if _NORMALISE_NEEDED.search(text):
        # NFKC folds full-width letters and digits (ＢＥＲＴ, ３) to ASCII.
        text = unicodedata.normalize("NFKC", text)
    out: list[str] = []
    append = out.append
    for match in _TOKEN.finditer(text.lower()):
        run = match.group("cjk")
        if run is not None:
            out.extend(run)
            out.extend(run[i:i + 2] for i in range(len(run) - 1))
            continue
        word = match.group()
        if _JOINERS.search(word):
            if len(word) <= MAX_WORD_CHARS:
                append(word)
            for part in _JOINERS.split(word):
                if part not in STOPWORDS and len(part) <= MAX_WORD_CHARS:
                    append(stem(part))
        elif word not in STOPWORDS and len(word) <= MAX_WORD_CHARS:
            append(stem(word))
    return out


def query_terms(text: str) -> list[str]:
    """The distinct terms of a query, in first-seen order."""
    return list(dict.fromkeys(tokenize(text)))


def has_words(text: str) -> bool:
    """True when `text` has a letter, digit or CJK character: something to search for."""
    return _TOKEN.search(text) is not None
