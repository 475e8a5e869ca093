"""Web search for chat. The Tavily and Bocha clients are not built yet."""

from __future__ import annotations

from dataclasses import dataclass

from scholarflow.context import Context
from scholarflow.errors import NotSupportedError


@dataclass(frozen=True, slots=True)
class SearchResult:
    title: str
    url: str
    content: str


async def web_search(ctx: Context, query: str) -> list[SearchResult]:
    """Results for `query` from the context's search engine."""
    raise NotSupportedError(
        f"web search ({ctx.search_engine}) is not available in this version of scholarflow"
    )
