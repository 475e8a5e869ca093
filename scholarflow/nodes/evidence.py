"""Evidence selection: which recalled passages enter the answer prompt.

Recall returns up to `top_n` chunks per query, and with several documents
one search per document: a question over a few short papers would put most of
their chunks into the answer prompt. `select_evidence` keeps the passages that
matter; the rule and its parameters were chosen on tests/data/recall_tune.jsonl
with the evidence benchmark (bench/README.md):

1. Reference lists are dropped: a bibliography matches the words of any
   question about the papers it cites, and is never evidence.
2. Duplicates go: a chunk whose text a better one contains (the same paper
   given twice), and the overlap a cut paragraph's next chunk repeats.
3. Relevance: a passage is kept when its score is at least RELATIVE_FLOOR of
   the best one and it is among the MAX_PASSAGES best overall or the
   STEP_PASSAGES best of a recall step. Scores of different steps are not
   comparable (each search scales its cosines by its own best), so a step's
   own ranking counts too: it is what finds the answer in a document the
   other searches rank low.
   Besides, one scorer for all: every candidate scored against the question
   by attribution_score's `PassageScorer` (BM25 over just these passages,
   with the Chinese<->English dictionary), comparable across steps; its
   COMMON_PASSAGES best at COMMON_FLOOR of its best are kept too. Lexical
   only by default: its cosine half (`dense`) would embed ~150 passages.
4. Fairness: each document a recall step was aimed at keeps its best
   passage, so a question about several documents hears from each of them.
5. What is left is packed best first into the room.

The room is the only token bound: a token budget as a share of the window
loses supporting passages at any window without saving more than the rule above.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from scholarflow.language import is_chinese
from scholarflow.nodes.attribution_score import PassageScorer
from scholarflow.nodes.citations import format_chunks, number_chunks
from scholarflow.retrieval.embeddings import Embedder
from scholarflow.retrieval.index.tokenize import query_terms, tokenize
from scholarflow.state import RecalledChunkState
from scholarflow.tokens import count_tokens
from scholarflow.tokens import truncate_to_tokens as truncate

_JOIN_TOKENS = 2  # the blank line between two passages

# Headings of a reference list (compared lower-cased, without numbering or a colon).
_REFERENCE_HEADINGS = frozenset({
    "references", "reference", "bibliography", "works cited", "literature cited",
    "cited works", "参考文献", "引用文献", "参考资料",
})
_HEADING_NUMBER = re.compile(r"^(?:\d+(?:\.\d+)*\.?|[ivx]+\.|[一二三四五六七八九十]+[、.．])\s*")
# One citation entry per line: "[12] A. Author, ...", "12. Author, A., ... (2019)", "1) ..."
_ENTRY_START = re.compile(r"^\s*(?:\[\d{1,3}\]|\d{1,3}[.)、]\s)")
_YEAR = re.compile(r"(?:19|20)\d{2}[a-z]?\b")
_ENTRY_MARKERS = re.compile(
    r"\bet al\.|\bProc(?:eedings|\.)|\bJournal\b|\bConference\b|\barXiv\b|\bpp\.|"
    r"\bvol\.|\bIn:|\bdoi\b|《|》|学报|会议|出版社", re.I)
_AUTHOR_INITIALS = re.compile(r"\b[A-Z]\.(?:\s?[A-Z]\.)*[,\s]")


@dataclass(frozen=True, slots=True)
class EvidenceRule:
    """The selection's parameters (module docstring); defaults chosen on recall_tune.jsonl."""

    relative_floor: float = 0.55
    max_passages: int = 10
    step_passages: int = 3
    # The common score (`common_scores`): what every passage gets against the question.
    common_passages: int = 30  # also kept: the best by the common score ...
    common_floor: float = 0.3  # ... at least this share of its best
    doc_passages: int = 0  # also kept: each document's best by the common score
    # The common score with the embedder's cosine, else lexical only: the cosine
    # means embedding every candidate, too slow here with a local embedder.
    dense: bool = False
    # At most this many passages, the best first (0: no bound but the room).
    max_kept: int = 0


DEFAULT_RULE = EvidenceRule()
# A question over a library: recall searched the library and its best candidate papers
# (nodes/recall.py), and every step's passages pass the floors above: the key passage
# ranks high among them, so twelve keep it and bound the prompt (and a local model's
# reading time). Chosen with the question-answering benchmark in bench/README.md.
LIBRARY_RULE = EvidenceRule(max_kept=12)


def is_reference_chunk(chunk: RecalledChunkState) -> bool:
    """A chunk of a reference list: under a References heading, or mostly citation entries."""
    heading = (chunk.get("heading") or "").split(" > ")[-1]
    name = _HEADING_NUMBER.sub("", heading.strip().lower()).rstrip(":：").strip()
    if name in _REFERENCE_HEADINGS:
        return True
    lines = [line for line in chunk["text"].splitlines() if line.strip()]
    entries = [line for line in lines if _looks_like_entry(line)]
    # Most lines (by count and by text) are entries: prose that cites a paper or two is not.
    return len(entries) >= 3 and 3 * len(entries) >= 2 * len(lines) and (
        2 * sum(map(len, entries)) >= sum(map(len, lines)))


def _looks_like_entry(line: str) -> bool:
    if not _ENTRY_START.match(line) or not _YEAR.search(line):
        return False
    return bool(_ENTRY_MARKERS.search(line) or _AUTHOR_INITIALS.search(line)
                or line.count(",") + line.count("，") >= 3)


def _flat(text: str) -> str:
    return " ".join(text.split())


def deduplicate(chunks: Sequence[RecalledChunkState]) -> list[RecalledChunkState]:
    """`chunks` (best first) without texts a better one contains; a repeated overlap trimmed.

    The same paper given twice (a file and its stored copy) recalls the same
    text under two ids; a paragraph cut at sentences repeats OVERLAP_TOKENS of
    the previous chunk at the start of the next.
    """
    kept: list[RecalledChunkState] = []
    flats: list[str] = []
    docs: list[str] = []
    for chunk in chunks:
        flat = _flat(chunk["text"])
        if any(flat in other for other in flats):
            continue
        text = chunk["text"]
        for other, doc in zip(flats, docs, strict=True):
            if doc == chunk["doc_id"] and (cut := _overlap(other, flat)):
                text = _skip_visible(text, len(flat[:cut].replace(" ", "")))
                flat = _flat(text)
        kept.append({**chunk, "text": text} if text is not chunk["text"] else chunk)
        flats.append(flat)
        docs.append(chunk["doc_id"])
    return kept


_MIN_OVERLAP_CHARS = 80  # shorter shared edges are common phrases, not a cut's overlap


def _overlap(before: str, after: str) -> int:
    """Length of the end of `before` that `after` starts with, when that is a cut's overlap
    (at least _MIN_OVERLAP_CHARS, shorter than `after`); else 0."""
    start = before.find(after[:_MIN_OVERLAP_CHARS])
    while start >= 0:
        size = len(before) - start
        if size < len(after) and after.startswith(before[start:]):
            return size
        start = before.find(after[:_MIN_OVERLAP_CHARS], start + 1)
    return 0


def _skip_visible(text: str, count: int) -> str:
    """`text` from its `count`-th non-whitespace character on, without leading whitespace."""
    for i, char in enumerate(text):
        if not char.isspace():
            if count == 0:
                return text[i:]
            count -= 1
    return ""


def relevant(
    recalled: Sequence[RecalledChunkState], chunks: Sequence[RecalledChunkState],
    aimed: Collection[str], rule: EvidenceRule, common: Mapping[str, float] | None = None,
) -> list[RecalledChunkState]:
    """The passages of `chunks` (unique, best first) worth reading, best first.

    `recalled`: every step's chunks, a chunk found by several steps once each
    (for each step's own ranking); `aimed`: the documents a step was aimed at;
    `common`: each chunk's common score (`common_scores`), when the rule uses it.
    """
    if not chunks:
        return []
    step_rank = {c["chunk_id"]: len(recalled) for c in chunks}  # not in `recalled`: last
    by_step: dict[int, list[RecalledChunkState]] = {}
    for chunk in recalled:
        by_step.setdefault(chunk["step"], []).append(chunk)
    for found in by_step.values():
        for rank, chunk in enumerate(sorted(found, key=lambda c: -c["score"]), 1):
            step_rank[chunk["chunk_id"]] = min(step_rank.get(chunk["chunk_id"], rank), rank)
    floor = rule.relative_floor * chunks[0]["score"]
    chosen = {c["chunk_id"] for rank, c in enumerate(chunks, 1) if c["score"] >= floor and (
        rank <= rule.max_passages or step_rank[c["chunk_id"]] <= rule.step_passages)}
    if common:
        chosen |= _by_common(chunks, common, rule)
    heard = {c["doc_id"] for c in chunks if c["chunk_id"] in chosen}
    for chunk in chunks:  # best first: the first of a document is its best
        if chunk["doc_id"] in aimed and chunk["doc_id"] not in heard:
            chosen.add(chunk["chunk_id"])
            heard.add(chunk["doc_id"])
    return [c for c in chunks if c["chunk_id"] in chosen]


def _by_common(chunks: Sequence[RecalledChunkState], common: Mapping[str, float],
               rule: EvidenceRule) -> set[str]:
    """The chunk ids the common score keeps: its best overall, each document's best."""
    ranked = sorted(chunks, key=lambda c: -common.get(c["chunk_id"], 0.0))
    floor = rule.common_floor * common.get(ranked[0]["chunk_id"], 0.0)
    chosen = {c["chunk_id"] for c in ranked[:rule.common_passages]
              if common.get(c["chunk_id"], 0.0) >= floor}
    per_doc: dict[str, int] = {}
    for c in ranked:
        if per_doc.setdefault(c["doc_id"], 0) < rule.doc_passages:
            per_doc[c["doc_id"]] += 1
            chosen.add(c["chunk_id"])
    return chosen


def uses_common(rule: EvidenceRule) -> bool:
    return rule.common_passages > 0 or rule.doc_passages > 0


async def common_scores(
    question: str, chunks: Sequence[RecalledChunkState], *,
    embedder: Embedder | bool | None = True,
) -> dict[str, float]:
    """Each chunk's score against `question` by one scorer for all (attribution_score's:
    lexical over these chunks, and the embedder's cosine when `embedder`)."""
    if not chunks:
        return {}
    # Off the loop: indexing ~150 passages' words takes tens of milliseconds.
    scorer = await asyncio.to_thread(PassageScorer, [c["text"] for c in chunks], embedder,
                                     wait=True)
    scores, _ = await scorer.scores(question)
    return {c["chunk_id"]: float(s) for c, s in zip(chunks, scores, strict=True)}


def pack(chunks: Sequence[RecalledChunkState], room: int) -> list[RecalledChunkState]:
    """Best first while they fit `room`; the best alone too long: its beginning, cut to fit."""
    kept: list[RecalledChunkState] = []
    for chunk in chunks:
        cost = count_tokens(format_chunks([chunk])) + _JOIN_TOKENS
        if cost > room:
            if not kept:
                text = truncate(chunk["text"], room - (cost - count_tokens(chunk["text"])))
                kept.append({**chunk, "text": text})
            break
        room -= cost
        kept.append(chunk)
    return kept


async def select_evidence(
    recalled: Sequence[RecalledChunkState], room: int, *, aimed: Collection[str] = (),
    question: str = "", rule: EvidenceRule = DEFAULT_RULE,
) -> list[RecalledChunkState]:
    """The passages of `recalled` (every step's chunks) that enter an answer prompt, best first.

    `room`: tokens the passages may take; `aimed`: documents a recall step was
    aimed at. Empty only when every passage is a reference list; otherwise at
    least the best one, cut to fit when it alone is over `room`.
    """
    candidates = deduplicate([c for c in number_chunks(recalled) if not is_reference_chunk(c)])
    common = None
    if question and candidates and uses_common(rule):
        common = await common_scores(question, candidates, embedder=rule.dense)
    chosen = relevant(recalled, candidates, aimed, rule, common)
    return pack(chosen[:rule.max_kept] if rule.max_kept else chosen, room)


# --- support: does any passage speak to the question at all? ------------------------

# Under this, no passage holds enough of the question's words to answer it, and a
# precise question gets "the documents do not say" instead of the model's guess
# (nodes/answer_passages.py). Set below the support of answerable questions, above that of most
# whose source paper is missing: a refusal costs less than a guess only when the passage
# is really missing. Chosen with the question-answering benchmark in bench/README.md.
SUPPORT_FLOOR = 0.45


# Words of a question that no passage needs to share (the index drops fewer: BM25's idf
# already makes them cheap there).
_FUNCTION_WORDS = frozenset({
    "did", "does", "done", "doing", "them", "they", "their", "there", "these", "those", "this",
    "that", "than", "then", "between", "many", "much", "more", "most", "into", "onto", "about",
    "after", "before", "during", "what", "which", "when", "where", "whom", "whose", "why",
    "how", "can", "could", "would", "should", "will", "may", "might", "has", "have", "had",
    "been", "being", "its", "were", "also", "such", "with", "from", "other", "some", "any",
    "all", "each", "both", "following", "based", "according", "given", "using", "used",
    "among", "within", "without", "your", "you", "our",
})


def support(question: str, passages: Sequence[RecalledChunkState]) -> float:
    """The largest share of the question's content words that one passage holds, in [0, 1].

    Words of three characters or more, or with a digit ("Nav1.6", "3e-4"), as
    BM25 sees them (plural-stemmed, lowercased); 1.0 for a question without such
    words, or without a passage in its language, which give nothing to check.
    """
    terms = {t for t in query_terms(question)
             if (len(t) > 2 or any(c.isdigit() for c in t)) and t not in _FUNCTION_WORDS}
    if not terms:
        return 1.0
    # Words are compared only within one language: a Chinese question shares no word
    # with an English passage that answers it (cross-language recall found it by meaning).
    chinese = is_chinese(question)
    same = [p for p in passages if is_chinese(p["text"]) == chinese]
    if passages and not same:
        return 1.0
    best = 0
    for passage in same:
        best = max(best, len(terms.intersection(tokenize(passage["text"]))))
        if best == len(terms):
            break
    return best / len(terms)
