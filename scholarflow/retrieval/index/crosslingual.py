"""A query as BM25 sees it, in its own language and in the other one.

One knowledge base often holds papers in Chinese and in English, and people
ask in either. BM25 cannot match a Chinese question against an English
passage (or the reverse), and the embedder's cross-language cosines alone
rarely lift the answer into the top 5 (bench/README.md). Dictionary-based
query translation is the classic fix in cross-language IR; here:

- own view: the query's terms, as BM25 always searched them;
- translated view: each Chinese word of the query (forward maximum matching
  against the dictionary) becomes a group of its English senses, each
  English word or phrase (up to three words, longest first) a group of its
  Chinese translations plus itself (Chinese papers quote English terms);
  words the dictionary lacks (names, numbers, "RNN", Latin words inside a
  Chinese question) stay as they are. Question and function words are not
  translated.

A group is scored by its best alternative (`hybrid.translated_view`), so a
word with four translations counts once (Pirkola's structured queries,
simplified to the best alternative). Translations weigh TRANSLATION_WEIGHT
against a word kept as it is: one may be the wrong sense.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from scholarflow.language import HAN
from scholarflow.retrieval.index.lexicon import lexicon
from scholarflow.retrieval.index.tokenize import query_terms, tokenize, without_option_pointers

# Weight of a translated word against one of the query's own words.
TRANSLATION_WEIGHT = 0.75
# Translations searched per word: the first that the index can match, in the
# dictionary's order (primary senses first), out of its first CANDIDATES.
MAX_ALTERNATIVES = 4
CANDIDATES = 32

_HAN = re.compile(f"[{HAN}]+")
# Question and function words, not worth translating: they would match
# most passages of the other language (NLTK's English list beyond the
# tokenizer's own stopwords; a common Chinese list).
EN_FUNCTION_WORDS = frozenset({
    "about", "above", "after", "again", "against", "all", "am", "any", "because", "before",
    "being", "below", "between", "both", "could", "did", "doing", "down", "during", "each",
    "few", "further", "having", "he", "her", "here", "hers", "him", "his", "i", "just", "many",
    "me", "might", "more", "most", "much", "must", "my", "no", "nor", "not", "now", "off",
    "once", "only", "other", "our", "out", "over", "own", "same", "she", "should", "some",
    "them", "those", "through", "too", "under", "until", "up", "very", "whom", "would",
    "you", "your",
})
ZH_FUNCTION_WORDS = frozenset({
    "什么", "多少", "为什么", "怎么", "怎样", "如何", "哪些", "哪个", "哪里", "哪儿", "是否",
    "可以", "能够", "一个", "这个", "那个", "这些", "那些", "时候", "之后", "之前", "以后",
    "以前", "还是", "或者", "而且", "但是", "因为", "所以", "如果", "虽然", "然后", "以及",
    "并且", "已经", "没有", "不是", "就是", "这样", "那样", "分别", "一种", "一下", "有些",
    "几个", "是什么", "有什么", "有多少", "其中", "通过", "进行", "对于", "关于",
})


@dataclass(frozen=True, slots=True)
class Group:
    """Alternatives for one word of the query; each alternative is the terms it needs."""

    alternatives: tuple[tuple[str, ...], ...]
    weight: float


@dataclass(frozen=True, slots=True)
class Word:
    """One word or phrase of the query, as the translated view sees it."""

    original: tuple[str, ...] | None  # its own terms, searched too; None: a Chinese word
    translations: tuple[tuple[str, ...], ...] = ()  # dictionary order, the terms of each


@dataclass(frozen=True, slots=True)
class LexicalQuery:
    own: tuple[str, ...]  # the query's distinct BM25 terms
    words: tuple[Word, ...] = ()  # the translated view; () when nothing translates

    @classmethod
    def of_terms(cls, terms: Sequence[str]) -> LexicalQuery:
        return cls(own=tuple(dict.fromkeys(terms)))

    def translated(self, usable: Callable[[tuple[str, ...]], bool]) -> tuple[Group, ...]:
        """The translated view's groups, keeping the first MAX_ALTERNATIVES usable translations.

        `usable(terms)`: whether the index can match a translation at all (it
        holds its terms). Dropping the others before the cut keeps the cut
        for translations that can match. () when no word has one.
        """
        groups: list[Group] = []
        translated_any = False
        for word in self.words:
            found = [t for t in word.translations if usable(t)][:MAX_ALTERNATIVES]
            if found:
                # The original too: Chinese papers quote English terms ("困惑度（perplexity）").
                kept = (word.original,) if word.original else ()
                groups.append(Group((*found, *kept), TRANSLATION_WEIGHT))
                translated_any = True
            elif word.original:
                # As it is, at full weight (a name, a number, "RNN", a function word):
                # for a passage in the query's language this view is then the query.
                groups.append(Group((word.original,), 1.0))
        return tuple(groups) if translated_any else ()


def lexical_query(text: str) -> LexicalQuery:
    """The query's own terms and, when the lexicon is there, its words' translations."""
    own = tuple(query_terms(text))
    words = lexicon()
    if words is None or not own:
        return LexicalQuery(own)
    plain = unicodedata.normalize("NFKC", without_option_pointers(text)).lower()
    found: list[Word] = []
    if any(_HAN.match(t) for t in own):
        # A Chinese (or mixed) question: its Latin words stay, its Chinese words translate.
        found += [Word((t,)) for t in own if not _HAN.match(t)]
        for run in _HAN.findall(plain):
            for word in segment(run, words.zh_to_en, words.longest_headword):
                senses = words.zh_to_en.get(word, ())
                if senses and word not in ZH_FUNCTION_WORDS:
                    found.append(Word(None, senses[:CANDIDATES]))
    else:
        latin = list(dict.fromkeys(tokenize(plain)))  # a repeated word counts once, as in `own`
        at = 0
        while at < len(latin):
            for size in (3, 2, 1):
                phrase = tuple(latin[at:at + size])
                if len(phrase) == size and (size > 1 or phrase[0] not in EN_FUNCTION_WORDS):
                    chinese = words.en_to_zh.get(" ".join(phrase), ())
                    if chinese:
                        found.append(Word(phrase, tuple(map(_han_terms, chinese[:CANDIDATES]))))
                        at += size
                        break
            else:
                found.append(Word((latin[at],)))
                at += 1
    if not any(w.translations for w in found):
        return LexicalQuery(own)
    return LexicalQuery(own, tuple(found))


def segment(run: str, vocabulary: Mapping[str, object], longest: int) -> list[str]:
    """Forward maximum matching: the longest dictionary word at each position."""
    out: list[str] = []
    at = 0
    while at < len(run):
        for size in range(min(longest, len(run) - at), 0, -1):
            if size == 1 or run[at:at + size] in vocabulary:
                out.append(run[at:at + size])
                at += size
                break
    return out


def _han_terms(word: str) -> tuple[str, ...]:
    """How the index stores a Chinese word: its bigrams (one character: itself)."""
    if len(word) == 1:
        return (word,)
    return tuple(word[i:i + 2] for i in range(len(word) - 1))
