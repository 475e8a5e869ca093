"""LitQA2's dev questions: their halves, options, PDFs, and how an answer is graded.

The corpus is read from LITQA_CORPUS, else ../shared/corpus/litqa2 beside the
checkout, else /work/shared/corpus/litqa2; it is never copied into the repository.

Halves: a question belongs to the tuning half when the first byte of the sha256
of its id is even, else to the checking half. Rules, prompts and thresholds are
chosen on the tuning half; the checking half is the estimate for unseen questions.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

REPO = Path(__file__).resolve().parents[2]
INSUFFICIENT = "Insufficient information to answer this question"
SHINGLE = 6  # words a shingle
FOUND_SHARE = 0.5  # a key passage is found when this share of its shingles is in one passage
SEED = 42  # the options' order: fixed per question id, so runs compare

Half = Literal["tune", "check"]
HALVES: tuple[Half, ...] = ("tune", "check")
HALF_NAMES = {"tune": "tuning", "check": "checking"}


def corpus() -> Path:
    if os.environ.get("LITQA_CORPUS"):
        return Path(os.environ["LITQA_CORPUS"])
    beside = REPO.parent / "shared" / "corpus" / "litqa2"
    return beside if beside.is_dir() else Path("/work/shared/corpus/litqa2")


def half_of(qid: str) -> Half:
    return "tune" if hashlib.sha256(qid.encode()).digest()[0] % 2 == 0 else "check"


@dataclass
class Question:
    n: int  # 1-based line of questions-dev.jsonl
    qid: str
    question: str  # the stem
    ideal: str
    distractors: list[str]
    files: list[str]  # PDF file names of its source papers
    key_passage: str | None
    options: list[str] = field(default_factory=list)  # shuffled, with INSUFFICIENT
    own: bool = False  # from a question file of our own: tuning data, whatever its hash

    @property
    def half(self) -> Half:
        return "tune" if self.own else half_of(self.qid)

    @property
    def letters(self) -> str:
        return "ABCDEFGHIJ"[:len(self.options)]

    def asked(self) -> str:
        """The question as LitQA2 asks it: the stem, then the lettered options."""
        lines = [f"{letter}) {option}" for letter, option in zip(self.letters, self.options,
                                                                 strict=True)]
        return f"{self.question}\n\nOptions:\n" + "\n".join(lines)


def pdf_name(doi_url: str) -> str:
    """The corpus file of a source DOI URL (file name = URL-quoted DOI + .pdf)."""
    doi = re.sub(r"^https?://(?:dx\.)?doi\.org/", "", doi_url)
    return urllib.parse.quote(doi, safe="") + ".pdf"


OWN_QUESTIONS = Path(__file__).with_name("own-questions.jsonl")


def load_questions(path: str | None = None) -> list[Question]:
    """The dev questions, or those of `path` ("own": OWN_QUESTIONS), all in the tuning half."""
    file = (OWN_QUESTIONS if path == "own" else Path(path) if path
            else corpus() / "questions-dev.jsonl")
    if not file.is_file():
        hint = "check --question-file" if path else "set LITQA_CORPUS to the corpus folder"
        raise SystemExit(f"no LitQA2 questions at {file}: {hint}")
    out = []
    for n, line in enumerate(file.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        raw = json.loads(line)
        q = Question(n=n, qid=raw["id"], question=raw["question"], ideal=raw["ideal"],
                     distractors=list(raw["distractors"]),
                     files=[pdf_name(s) for s in raw["sources"]],
                     key_passage=raw.get("key-passage"), own=path is not None)
        options = [q.ideal, *q.distractors, INSUFFICIENT]
        random.Random(f"{SEED}:{q.qid}").shuffle(options)
        q.options = options
        out.append(q)
    return out


def select(questions: list[Question], half: str, spec: str | None,
           limit: int | None) -> list[Question]:
    """`half`: tune, check or all; `spec`: "1,4,7-9" (lines of the question file);
    `limit`: the first N of what is left."""
    if half != "all":
        questions = [q for q in questions if q.half == half]
    if spec:
        wanted: set[int] = set()
        for part in spec.split(","):
            low, _, high = part.strip().partition("-")
            wanted.update(range(int(low), int(high or low) + 1))
        questions = [q for q in questions if q.n in wanted]
    return questions[:limit] if limit else questions


def asked(args: Any) -> list[Question]:
    """The questions a part's arguments name: --question-file, --half, --questions, --limit."""
    return select(load_questions(args.question_file), args.half, args.questions, args.limit)


def pdf_files() -> list[Path]:
    return sorted((corpus() / "pdfs").glob("*.pdf"))


# --- the key passage ------------------------------------------------------------

_WORD = re.compile(r"\w+")


def words(text: str) -> list[str]:
    """Case and punctuation ignored; a word hyphenated at a line end counts joined."""
    return _WORD.findall(re.sub(r"-\s*\n\s*", "", text).lower())


def shingles(text: str) -> set[tuple[str, ...]]:
    w = words(text)
    if len(w) < SHINGLE:
        return {tuple(w)} if w else set()
    return {tuple(w[i:i + SHINGLE]) for i in range(len(w) - SHINGLE + 1)}


def holds_key(key_passage: str | None, passages: list[str]) -> int | None:
    """1-based rank of the first passage holding >= FOUND_SHARE of the key; None if none."""
    if not key_passage:
        return None
    key = shingles(key_passage)
    for rank, text in enumerate(passages, 1):
        if key and len(key & shingles(text)) / len(key) >= FOUND_SHARE:
            return rank
    return None


# --- grading a multiple-choice answer ---------------------------------------------

# How a model names a letter, most explicit first ("A" alone is also an English word).
_LETTER_FORMS = (
    re.compile(r"\b(?:answer|option|choice)(?:\s+is)?\s*[:\s]\s*\(?\**([A-J])\b"),
    re.compile(r"(?:^|[\s*])\(?([A-J])\)"),
    re.compile(r"^[\s*(\[]*([A-J])(?:[*)\].:,-]+|\s*$)", re.M),
)
_DASHES = re.compile(r"[\u2010-\u2015\u2212]")


def _plain(text: str) -> str:
    """Lowercased, with every dash a hyphen: "344–360" in an option is "344-360" typed."""
    return _DASHES.sub("-", text.lower())


def chosen_option(answer: str, q: Question) -> str | None:
    """The option the answer picked: the one option its first line names in words, else a
    letter it names, else an option's text; None when it names none. The first line
    counts most: a model that answers "C) ..." and then discusses the others picked C."""
    text = answer.strip()
    first = text.splitlines()[0] if text else ""
    # "[B] Asn326" where B is another option: the letter slipped, the words did not.
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


# --- grading an answer in words ---------------------------------------------------

_CITATION = re.compile(r"\[\s*\d+(?:\s*[,;\u2013-]\s*\d+)*\s*\]")
_NOT_WORD = re.compile(r"[\W_]+")


def normalised(text: str) -> str:
    """Lowercased words separated by one space: dashes, punctuation and citation
    markers ([3], [1, 2]) ignored, so "344–360" and "344-360" read alike, and the
    multiplication sign read as "x" ("5.91 × 10−12" as "5.91 x 10-12")."""
    text = _CITATION.sub(" ", text.lower()).replace("\u00d7", " x ")
    return " ".join(_NOT_WORD.sub(" ", _DASHES.sub("-", text)).split())


_PIECES = re.compile(r"(?<=[^\W\d_])[-\u2010\u2011](?=[^\W\d_])")


def contains_ideal(answer: str, ideal: str) -> bool:
    """Whether the answer's words hold the ideal answer's words, in order, whole words; a
    compound written whole or in pieces is one word ("up-regulation", "upregulation"), but
    numbers are never joined ("31-40" is not "3140"), unlike `option_evidence.compounds`."""
    return _holds(answer, ideal) or _holds(_PIECES.sub("", answer), _PIECES.sub("", ideal))


def _holds(answer: str, ideal: str) -> bool:
    want = normalised(ideal)
    return bool(want) and f" {want} " in f" {normalised(answer)} "


def citations_only(answer: str) -> bool:
    """An answer of citation markers alone ("[1][4]"), or of nothing."""
    return not _NOT_WORD.sub("", _CITATION.sub("", answer))
