"""LitQA2 for bench/litqa.py: the questions, their PDFs, the key-passage test, the options.

A sibling module of bench/litqa.py (split to keep modules under 400 lines).
The corpus is read from ../shared/corpus/litqa2 (LITQA_CORPUS to move it); it
is never copied into the repository.
"""

from __future__ import annotations

import json
import os
import random
import re
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

CORPUS = Path(os.environ.get("LITQA_CORPUS", "/work/shared/corpus/litqa2"))
INSUFFICIENT = "Insufficient information to answer this question"
SHINGLE = 6  # words a shingle
FOUND_SHARE = 0.5  # a key passage is found when this share of its shingles is in one passage
SEED = 42  # the options' order: fixed, so runs compare

# PaperQA2 on the same questions and local model (issue 18); None: not measured there.
PAPERQA2 = {
    "correct": "0 of 2", "precision": "0.00", "llm_calls": "16", "prompt_tokens": "~26,700",
    "seconds": "1,260-1,800+",
}
# Scholarflow before this work (issue 18): search on the dev split, answers on 12 questions.
BEFORE = {
    "paper_first": "38/38", "key_top5": "0.68", "key_top10": "0.76",
    "correct": "6/12", "insufficient": "1/12", "precision": "0.55", "llm_calls": "2",
    "prompt_tokens": "~6,400", "seconds": "126-484", "paper_in_sources": "8/12",
}


@dataclass
class Question:
    n: int  # 1-based line of questions-dev.jsonl
    qid: str
    question: str
    ideal: str
    distractors: list[str]
    files: list[str]  # PDF file names of its source papers
    key_passage: str | None
    options: list[str] = field(default_factory=list)  # shuffled, with INSUFFICIENT

    @property
    def letters(self) -> str:
        return "ABCDEFGHIJ"[:len(self.options)]

    @property
    def ideal_letter(self) -> str:
        return self.letters[self.options.index(self.ideal)]

    @property
    def insufficient_letter(self) -> str:
        return self.letters[self.options.index(INSUFFICIENT)]

    def asked(self) -> str:
        """The question as LitQA2 asks it: the stem, then the lettered options."""
        lines = [f"{letter}) {option}" for letter, option in zip(self.letters, self.options,
                                                                 strict=True)]
        return f"{self.question}\n\nOptions:\n" + "\n".join(lines)


def pdf_name(doi_url: str) -> str:
    doi = re.sub(r"^https?://(?:dx\.)?doi\.org/", "", doi_url)
    return urllib.parse.quote(doi, safe="") + ".pdf"


def load_questions(split: str = "dev") -> list[Question]:
    path = CORPUS / f"questions-{split}.jsonl"
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        raw = json.loads(line)
        q = Question(n=n, qid=raw["id"], question=raw["question"], ideal=raw["ideal"],
                     distractors=list(raw["distractors"]),
                     files=[pdf_name(s) for s in raw["sources"]],
                     key_passage=raw.get("key-passage"))
        options = [q.ideal, *q.distractors, INSUFFICIENT]
        random.Random(f"{SEED}:{q.qid}").shuffle(options)
        q.options = options
        out.append(q)
    return out


def select(questions: list[Question], spec: str | None, limit: int | None) -> list[Question]:
    """`spec`: "1,4,7-9" (line numbers of the question file); `limit`: the first N of those."""
    if spec:
        wanted: set[int] = set()
        for part in spec.split(","):
            low, _, high = part.strip().partition("-")
            wanted.update(range(int(low), int(high or low) + 1))
        questions = [q for q in questions if q.n in wanted]
    return questions[:limit] if limit else questions


def pdf_files() -> list[Path]:
    return sorted((CORPUS / "pdfs").glob("*.pdf"))


_WORD = re.compile(r"\w+")


def words(text: str) -> list[str]:
    """Case and punctuation ignored; a word hyphenated at a line end counts joined."""
    return _WORD.findall(re.sub(r"-\s*\n\s*", "", text).lower())


def shingles(text: str) -> set[tuple[str, ...]]:
    w = words(text)
    if len(w) < SHINGLE:
        return {tuple(w)} if w else set()
    return {tuple(w[i:i + SHINGLE]) for i in range(len(w) - SHINGLE + 1)}


def share_in(key: set[tuple[str, ...]], passage: str) -> float:
    """The share of the key passage's shingles that `passage` holds."""
    return len(key & shingles(passage)) / len(key) if key else 0.0


def holds_key(key_passage: str | None, passages: list[str]) -> int | None:
    """1-based rank of the first passage holding >= FOUND_SHARE of the key; None if none."""
    if not key_passage:
        return None
    key = shingles(key_passage)
    for rank, text in enumerate(passages, 1):
        if share_in(key, text) >= FOUND_SHARE:
            return rank
    return None


# How a model names a letter, most explicit first ("A" alone is also an English word).
_LETTER_FORMS = (
    re.compile(r"\b(?:answer|option|choice)(?:\s+is)?\s*[:\s]\s*\(?\**([A-J])\b"),
    re.compile(r"(?:^|[\s*])\(?([A-J])\)"),
    re.compile(r"^[\s*(\[]*([A-J])(?:[*)\].:,-]+|\s*$)", re.M),
)


def _plain(text: str) -> str:
    """Lowercased, with every dash a hyphen: "344–360" in an option is "344-360" typed."""
    return re.sub(r"[\u2010-\u2015\u2212]", "-", text.lower())


def chosen_option(answer: str, q: Question) -> str | None:
    """The option the answer picked: the one option its first line names in words, else a
    letter it names, else an option's text; None when it names none. The first line
    counts most: a model that answers "C) ..." and then
    discusses the others picked C."""
    text = answer.strip()
    first = text.splitlines()[0] if text else ""
    # "[B] Asn326" where B is another option: the model's letter slipped, its words did
    # not; the one option the first line names in words is the pick (counted as such
    # in the -v log, where the answer is printed).
    named = [o for o in q.options
             if re.search(rf"(?<!\w){re.escape(_plain(o))}(?!\w)", _plain(first))]
    named = [o for o in named if not any(o != p and o.lower() in p.lower() for p in named)]
    if len(named) == 1:
        return named[0]
    for line in (first, text):
        for form in _LETTER_FORMS:
            for match in form.finditer(line):
                if match.group(1) in q.letters:
                    return q.options[q.letters.index(match.group(1))]
        lowered = line.lower()
        hits = [o for o in q.options if o.lower() in lowered]
        if hits:  # the longest named option ("no significant differences" over "differences")
            return max(hits, key=len)
    return None


# How an "insufficient" answer came about (nodes/option_pick.py, nodes/evidence.py).
_ABSTENTIONS = (
    ("the order changed the choice", "choice changed with the order of the options"),
    ("the model picked it", "the model found no passage that answers"),
    ("no passage holds the question's words", "no passage of the documents answers"),
)


def abstention(answer: str) -> str | None:
    """Why an "insufficient" answer was given, by its wording; None for any other."""
    return next((why for why, words in _ABSTENTIONS if words in answer), None)
