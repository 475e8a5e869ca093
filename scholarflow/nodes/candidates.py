"""Over a library, the planner works from what a first search finds, not from a catalogue.

A knowledge base of hundreds of papers cannot be shown to the planner as
titles: the first few dozen in storage order make a long prompt about papers
that have nothing to do with the question. So sub_question_generation first
searches the question's stem (without its options, nodes/options.py) over
everything the run covers, and shows the planner the papers that search
found, best first, each with the sentence of its best passage that shares
most words with the question. The same papers then get recall steps of their
own (nodes/recall.py `recall_questions`): the search over the whole library
finds the paper, one inside the paper finds the passage.
"""

from __future__ import annotations

import re

from scholarflow.context import Context
from scholarflow.llm.budget import cap_tokens
from scholarflow.nodes.intent import TITLE_TOKENS
from scholarflow.nodes.recall_scope import DIRECT_KB, recall_scope, retriever_for
from scholarflow.retrieval.access import recall_params
from scholarflow.retrieval.index.tokenize import query_terms
from scholarflow.retrieval.kb import RecalledChunk, best_per_chunk
from scholarflow.state import State

# Papers the planner is shown, and the words of each one's best sentence.
CANDIDATE_DOCUMENTS = 5
SNIPPET_TOKENS = 60
_SENTENCE = re.compile(r"(?<=[.!?。！？])\s+")


async def first_search(state: State, query: str, ctx: Context) -> list[RecalledChunk]:
    """The best passages for `query` over everything the run covers, best first."""
    kb, doc_ids, direct = recall_scope(state.get("knowledge_base"),
                                       state.get("selected_doc_ids") or [],
                                       state.get("documents") or [],
                                       state.get("document_texts") or {})
    params = recall_params(ctx, [query])
    hits: list[RecalledChunk] = []
    searches: list[tuple[str, list[str] | None]] = []
    if kb:
        searches.append((kb, doc_ids or None))
    if direct:
        searches.append((DIRECT_KB, direct))
    for name, ids in searches:
        retriever = await retriever_for(name, None, ctx)
        hits += await retriever.search(query, doc_ids=ids, params=params)
    return best_per_chunk(hits, params.top_n)


def candidate_documents(hits: list[RecalledChunk], limit: int = CANDIDATE_DOCUMENTS) -> list[str]:
    """The documents of `hits` in the order of their best passage, at most `limit`."""
    return list(dict.fromkeys(h.doc_id for h in hits))[:limit]


def candidate_listing(hits: list[RecalledChunk], query: str,
                      limit: int = CANDIDATE_DOCUMENTS) -> str:
    """The planner's view of the candidates: id, title and best sentence, best first."""
    terms = {t for t in query_terms(query) if len(t) > 2}
    lines = []
    for doc_id in candidate_documents(hits, limit):
        best = next(h for h in hits if h.doc_id == doc_id)
        lines.append(f"- id {doc_id}: {cap_tokens(best.title, TITLE_TOKENS)}\n"
                     f"  found: \"{cap_tokens(_best_sentence(best.text, terms), SNIPPET_TOKENS)}\"")
    return "\n".join(lines)


def _best_sentence(text: str, terms: set[str]) -> str:
    """The sentence of `text` sharing most terms with the query (the first on a tie)."""
    sentences = [s for s in _SENTENCE.split(" ".join(text.split())) if s]
    if not sentences:
        return ""
    return max(sentences, key=lambda s: len(terms.intersection(query_terms(s))))
