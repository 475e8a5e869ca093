"""The BM25 tokenizer: Chinese and English in one pass, no dictionary.

CJK runs become their characters and their bigrams: most Chinese words are two
characters, found without a dictionary, and a one-character word (门, 层) stays
searchable inside longer runs, which bigrams alone would not allow. A
dictionary segmenter (jieba) would load a 50 MB dictionary and miss
out-of-vocabulary terms, the very words papers coin. This scheme, the plural
stemmer and the stopwords were chosen with the recall benchmark on bilingual
questions (bench/README.md).

Speed: `terms_text`, what ingest stores, runs several times faster than a loop
over regex matches with a string per term, with the same output, term for term
(tests/unit/test_tokenize.py compares it with that loop): text is split at
whitespace first and each piece's terms are cached, and the characters and
bigrams of CJK runs are laid out by numpy and sliced.

- Latin words and numbers are lowercased and kept whole with their inner
  joiners ("3e-4", "bert-base", "gpt-3", "x86_64", "1.5"); a joined word
  also yields its parts, so "BERT base" finds "bert-base".
- English gets a minimal plural stemmer ("networks" -> "network",
  "queries" -> "query"); Snowball would be a compiled dependency for what
  the plural rule already gives here.
- A few very common English words are dropped: they cost posting-list time
  at every query and only add noise.
"""

from __future__ import annotations

import re
import unicodedata

import numpy as np

from scholarflow.language import CJK

# CJK ideographs, kana and compatibility ideographs: scripts written without
# spaces, where a "word" has to be guessed from characters.
_CJK = CJK
# One findall gives (CJK run, "") or ("", word) pairs: far cheaper than a
# Match object and .group() calls per token.
_TOKEN = re.compile(
    rf"([{_CJK}]+)"
    # a word of letters/digits, optionally joined by - _ . + / to more such words
    rf"|([^\W_{_CJK}]+(?:[-_.+/][^\W_{_CJK}]+)*)"
)
_JOINERS = re.compile(r"[-_.+/]")
_CJK_PAIR = re.compile(rf"[{_CJK}]{{2}}")

STOPWORDS = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "been", "but", "by", "can", "do", "does", "for",
    "from", "had", "has", "have", "how", "if", "in", "into", "is", "it", "its", "of", "on", "or",
    "s", "so", "such", "than", "that", "the", "their", "then", "there", "these", "they", "this",
    "to", "was", "we", "were", "what", "when", "where", "which", "while", "who", "why", "will",
    "with",
})

# Characters NFKC cannot change the terms of: ASCII, CJK ideographs, Latin-1
# letters (all NFKC-stable starters), and CJK punctuation that is stable or
# folds to an ASCII separator (，→ ,). Text made only of these skips
# normalisation, a quarter of the tokenizing time for Chinese; the property is
# checked character by character in tests/unit/test_tokenize.py.
NFKC_SAFE = (
    "\x00-\x7f\u00a0\u00b7\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u00ff"
    "\u2013\u2014\u2018\u2019\u201c\u201d\u3000-\u3002\u3008-\u3011"
    "\u3400-\u4dbf\u4e00-\u9fff\uff01\uff08\uff09\uff0c\uff1a\uff1b\uff1f"
)
_NORMALISE_NEEDED = re.compile(f"[^{NFKC_SAFE}]")
# Longer "words" are URLs, hashes or base64: kept only as their parts, so
# they cannot bloat the vocabulary.
MAX_WORD_CHARS = 64
# Terms of recently seen whitespace-separated pieces ("results,", "3e-4"):
# pieces repeat (Zipf), so most cost one dict lookup instead of the regex.
# Long pieces (a Chinese clause has no spaces) are rarely seen twice and are
# not kept. Cleared when full.
_CACHE_SIZE = 1 << 16
_CACHED_PIECE_CHARS = 24
_piece_cache: dict[str, str] = {}


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


def _word_text(word: str) -> str:
    """The terms of one word, space-separated: stopwords dropped, stemmed, joined words split."""
    if _JOINERS.search(word):
        parts = [word] if len(word) <= MAX_WORD_CHARS else []
        parts += [stem(part) for part in _JOINERS.split(word)
                  if part not in STOPWORDS and len(part) <= MAX_WORD_CHARS]
        text = " ".join(parts)
    elif word not in STOPWORDS and len(word) <= MAX_WORD_CHARS:
        text = stem(word)
    else:
        text = ""
    _remember(word, text)  # a word is a piece with the same terms
    return text


def _remember(piece: str, text: str) -> None:
    if len(piece) <= _CACHED_PIECE_CHARS:
        if len(_piece_cache) >= _CACHE_SIZE:
            _piece_cache.clear()
        _piece_cache[piece] = text


def terms_text(text: str) -> str:
    """`" ".join(tokenize(text))`, built without a string per term (what the index stores)."""
    if not text.isascii() and _NORMALISE_NEEDED.search(text):
        # NFKC folds full-width letters and digits (ＢＥＲＴ, ３) to ASCII.
        text = unicodedata.normalize("NFKC", text)
    # No term spans whitespace (words, joiners and CJK never include it), so
    # splitting there first changes nothing but lets repeated pieces hit the
    # cache: one lookup each, in C.
    pieces = text.lower().split()
    found: list[str | None] = list(map(_piece_cache.get, pieces))
    if None in found:
        with_cjk: list[tuple[int, str, list[tuple[str, str]]]] = []
        for i in [i for i, terms in enumerate(found) if terms is None]:
            piece = pieces[i]
            pairs = _TOKEN.findall(piece)
            if any(run for run, _ in pairs):
                with_cjk.append((i, piece, pairs))
            else:
                found[i] = _words_text(piece, pairs)
        if with_cjk:
            _fill_cjk(found, with_cjk)
    return " ".join(filter(None, found))


def _words_text(piece: str, pairs: list[tuple[str, str]]) -> str:
    """The terms of a piece without CJK, given its findall `pairs`."""
    if len(pairs) == 1 and pairs[0][1] == piece:
        return _word_text(piece)
    cached = _piece_cache.get
    parts = []
    for _, word in pairs:
        terms = cached(word)
        if terms is None:
            terms = _word_text(word)
        if terms:
            parts.append(terms)
    text = " ".join(parts)
    _remember(piece, text)
    return text


def _fill_cjk(
    parts: list[str | None], pieces: list[tuple[int, str, list[tuple[str, str]]]]
) -> None:
    """Put the terms of the pieces with CJK runs at their places in `parts`.

    All the CJK of one text is laid out at once (`_cjk_layout`): a numpy call
    costs microseconds, a Python string per character and bigram far more.
    """
    cjk = "".join([run for _, _, pairs in pieces for run, _ in pairs if run])
    laid = _cjk_layout(cjk)
    pairs_at = 2 * len(cjk)  # where the bigrams start in `laid`
    cached = _piece_cache.get
    at = 0
    for index, piece, pairs in pieces:
        terms: list[str] = []
        for run, word in pairs:
            if word:
                text = cached(word)
                if text is None:
                    text = _word_text(word)
                if text:
                    terms.append(text)
                continue
            end = at + len(run)
            terms.append(laid[2 * at:2 * end - 1])  # the characters, then the bigrams
            if end - at > 1:
                terms.append(laid[pairs_at + 3 * at:pairs_at + 3 * end - 4])
            at = end
        parts[index] = text = " ".join(terms)
        _remember(piece, text)


def _cjk_layout(cjk: str) -> str:
    """"c0 c1 c2 ... cn " + "c0c1 c1c2 ...": `cjk`'s characters, then its bigrams, in one pass.

    A run of `cjk` spanning characters [a, b) then has its characters at
    [2a, 2b - 1) and its bigrams at 2n + [3a, 3b - 4); the bigrams that
    straddle two runs are never sliced out.
    """
    points = np.frombuffer(cjk.encode("utf-32-le"), np.uint32)  # CJK is all in the BMP
    n = len(points)
    grid = np.full(5 * n - 3, 32, np.uint32)
    grid[0:2 * n:2] = points
    grid[2 * n::3] = points[:-1]
    grid[2 * n + 1::3] = points[1:]
    return grid.tobytes().decode("utf-32-le")


def tokenize(text: str) -> list[str]:
    """The BM25 terms of `text`, in order, repeats kept (BM25 counts them)."""
    return terms_text(text).split()  # no term holds whitespace


# How a multiple-choice question points at its own options ("Which of the following
# proteins ...", "以下哪项"): words about the question, not about its subject. Searched
# for, "following" matches every passage saying "following treatment", which can then
# outrank the passage the question is about.
_OPTION_POINTERS = re.compile(r"\b(?:of|among) the following\b|(?:以下|下列)(?=哪)", re.I)


def without_option_pointers(query: str) -> str:
    """`query` without the words pointing at a question's options."""
    return _OPTION_POINTERS.sub(" ", query)


def query_terms(text: str) -> list[str]:
    """The distinct terms of a query, in first-seen order, less its option pointers."""
    return list(dict.fromkeys(tokenize(without_option_pointers(text))))


def is_cjk_pair(term: str) -> bool:
    """A bigram of a CJK run: the overlap of two characters, not necessarily a word."""
    return _CJK_PAIR.fullmatch(term) is not None


def has_words(text: str) -> bool:
    """True when `text` has a letter, digit or CJK character: something to search for."""
    return _TOKEN.search(text) is not None
