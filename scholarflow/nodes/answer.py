"""answer_generation: the intent's prompt over what the strategy gathered, streamed.

One way of answering per strategy, each on `Answerer` (nodes/answer_base.py):
full_content reads the documents whole (here), chunk_recall the passages
evidence_selection kept (nodes/answer_passages.py), multi_doc_summary the document
summaries, in rounds of partial reports when they do not fit one prompt
(nodes/answer_summaries.py).
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime
from langgraph.types import Overwrite

from scholarflow.context import Context, first_attempt, get_context
from scholarflow.events import node_complete
from scholarflow.intents import Intent
from scholarflow.nodes.answer_base import DIRECT_PROMPTS, NODE, Answerer
from scholarflow.nodes.answer_passages import PassageAnswerer
from scholarflow.nodes.answer_summaries import SummaryAnswerer
from scholarflow.nodes.common import format_document
from scholarflow.nodes.errors import reported_failure
from scholarflow.state import Source, State
from scholarflow.tokens import count_message_tokens
from scholarflow.tokens import truncate_to_tokens as truncate


class DocumentAnswerer(Answerer):
    """full_content: the documents whole, each cut to its share of the room if need be."""

    async def answer(self, state: State, intent: Intent) -> str:
        template = DIRECT_PROMPTS[intent]
        docs = state.get("documents") or []
        contents = state.get("document_texts") or {}
        wrappers = [format_document(d["title"], d["doc_id"], "") for d in docs]
        room = self.room(template, True) - count_message_tokens(wrappers)
        share = room // max(len(docs), 1)
        self.require_room(share, "each document")
        parts = []
        for doc in docs:
            text = contents[doc["doc_id"]]
            if doc["tokens"] > share:  # admitted against a looser budget; never overflow
                text = truncate(text, share)
                self.thinking.say(f"Shortened {doc['title']!r} to {share} tokens to fit.")
            parts.append(format_document(doc["title"], doc["doc_id"], text))
        return await self.stream_answer(self.fill(template, "\n\n".join(parts)))


async def answer_generation(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    ctx = get_context(runtime)
    intent = Intent.parse(state.get("detected_intent") or Intent.LITERATURE_QA)
    strategy = state.get("strategy")
    if failures := sorted(state.get("report_failures") or [], key=lambda f: f["part"]):
        # A partial report failed after its retries: the run ends in the first one's error
        # (nodes/reports.py), reported as this node's, whose work it was.
        return {**reported_failure(NODE, failures[0]), "report_tasks": []}
    first = first_attempt(runtime)
    sources: list[Source] = []
    answerer: Answerer
    if strategy == "multi_doc_summary":
        answerer = summaries = SummaryAnswerer(ctx, state, first)
        answer = await summaries.answer(state, intent)
        if isinstance(answer, list):  # route_after_answer sends each to partial_report
            return {"report_round": (state.get("report_round") or 0) + 1,
                    "report_tasks": answer, "partial_reports": Overwrite([]),
                    "report_failures": Overwrite([]), "usage": summaries.usage}
    elif strategy == "full_content":
        answerer = documents = DocumentAnswerer(ctx, state, first)
        answer = await documents.answer(state, intent)
    else:
        answerer = passages = PassageAnswerer(ctx, state, first)
        answer, sources = await passages.answer(state)
    node_complete(NODE, intent=intent.value, strategy=strategy, sources=len(sources))
    return {"answer": answer, "answer_id": answerer.message_id, "sources": sources,
            "usage": answerer.usage, "report_tasks": []}
