"""Web search for simple_interaction: results as fenced, untrusted prompt text, and the
note after the answer (the URLs it cited, or why there were no results to use)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from scholarflow.context import Context
from scholarflow.errors import ScholarflowError
from scholarflow.events import Thinking
from scholarflow.llm.budget import cap_tokens
from scholarflow.prompts import (
    WEB_RESULT_ITEM,
    WEB_RESULTS_PROMPT,
    WEB_RESULTS_UNCITED_NOTE,
    WEB_SEARCH_NOT_DONE_NOTE,
    WEB_SEARCH_NOT_DONE_PROMPT,
    WEB_SOURCES_NOTE,
)
from scholarflow.state import WebSource
from scholarflow.tokens import count_tokens
from scholarflow.web.search import ENGINE_NAMES, SearchResult, web_search

logger = logging.getLogger(__name__)

# Result text may not contain anything that reads as a tag: "</web_results>" or
# "<result n=9>" in a page would otherwise close the fence or forge a result.
_NEUTRAL = str.maketrans({"<": "‹", ">": "›"})
TITLE_TOKENS = 100  # of a result's title or URL
RESULT_FRAME_TOKENS = 2 * TITLE_TOKENS + 20  # a result's tags, title and URL around its text


@dataclass(frozen=True, slots=True)
class WebMaterial:
    """What the web search adds to the chat prompt, and how the answer ends."""

    prompt: str
    results: tuple[SearchResult, ...] = ()
    reason: str | None = None  # why there are no results to use

    def closing_note(self, cited: Sequence[int], chinese: bool) -> str:
        """The text written after the answer: the cited URLs, or why search was not used."""
        lang = "zh" if chinese else "en"
        if not self.results:
            return WEB_SEARCH_NOT_DONE_NOTE[lang].format(reason=self.reason or "")
        if cited:
            lines = [_source_line(n, self.results[n - 1]) for n in cited]
            return WEB_SOURCES_NOTE[lang].format(sources="\n".join(lines))
        # The model cited nothing: still show which pages it was given.
        lines = [_source_line(n, r) for n, r in enumerate(self.results, 1)]
        return WEB_RESULTS_UNCITED_NOTE[lang].format(sources="\n".join(lines))

    def sources(self, cited: Sequence[int]) -> list[WebSource]:
        return [WebSource(n=n, title=r.title, url=r.url, cited=n in cited)
                for n, r in enumerate(self.results, 1)]


async def search_for_chat(ctx: Context, query: str, thinking: Thinking,
                          max_tokens: int | None = None) -> WebMaterial:
    """Search the web for the chat; any failure gives material that says why, never raises.

    With `max_tokens`, each result's text is cut to its share so the material fits.
    """
    engine = ENGINE_NAMES.get(ctx.search_engine or "", str(ctx.search_engine))
    thinking.say(f"Searching the web with {engine}.")
    try:
        results = await web_search(ctx, query)
    except ScholarflowError as exc:  # messages of web_search never carry the key
        logger.info("web search not used: %s", exc)
        return _without(str(exc), thinking)
    if not results:
        return _without(f"{engine} found nothing for this question", thinking)
    thinking.say(f"Found {len(results)} web results; answering from them.")
    share = None
    if max_tokens is not None:
        frame = count_tokens(WEB_RESULTS_PROMPT.format(results=""))
        share = max((max_tokens - frame) // len(results) - RESULT_FRAME_TOKENS, 0)
    items = "\n\n".join(
        WEB_RESULT_ITEM.format(n=n, title=fence_safe(cap_tokens(r.title, TITLE_TOKENS)),
                               url=cap_tokens(r.url, TITLE_TOKENS),
                               content=fence_safe(r.content if share is None
                                                  else cap_tokens(r.content, share)))
        for n, r in enumerate(results, 1)
    )
    return WebMaterial(prompt=WEB_RESULTS_PROMPT.format(results=items), results=tuple(results))


def fence_safe(text: str) -> str:
    """`text` with no character that could open or close a tag of the fence."""
    return text.translate(_NEUTRAL)


def _without(reason: str, thinking: Thinking) -> WebMaterial:
    thinking.say(f"Web search not used: {reason}.")
    return WebMaterial(prompt=WEB_SEARCH_NOT_DONE_PROMPT.format(reason=reason), reason=reason)


def _source_line(n: int, result: SearchResult) -> str:
    return f"[{n}] {result.title} — {result.url}"
