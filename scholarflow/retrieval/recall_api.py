"""RecallTool (docs/architecture.md#recall): a client for an external recall service over HTTP.

Request, `POST {api_url}` with JSON:

    {"question": str, "index_names": [str], "doc_ids": [str] | null, "top_n": int,
     "similarity_threshold": float, "vector_similarity_weight": float, "use_rerank": bool}

Response, either scholarflow's own shape:

    {"chunks": [{"doc_id", "chunk_id", "content", "score",
                 "title"?, "heading"?, "page"?}]}

or RAGFlow's retrieval shape (`POST /api/v1/retrieval`), recognised by its
`code` envelope:

    {"code": 0, "data": {"chunks": [{"id", "content", "document_id", "similarity",
                                     "docnm_kwd" | "document_keyword", "positions"?}]}}

where `positions` is a list of `[page, left, right, top, bottom]`; a non-zero
`code` is an error carrying `message`. The service does the thresholding and
reranking; the client still sorts, cuts to top_n and drops chunks of other
documents, so a misbehaving service cannot break the Retriever contract.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from scholarflow.errors import ConfigurationError, ScholarflowError
from scholarflow.retrieval.kb import RecalledChunk, RecallParams
from scholarflow.storage.services import RECALL_API_URL_ENV, check_http_url
from scholarflow.url_secrets import redact_url, scrub

ENV_URL = RECALL_API_URL_ENV
EXAMPLE_URL = "http://127.0.0.1:9380/api/v1/retrieval"
TIMEOUT_SECONDS = 30.0


class RecallApiUnavailableError(ConfigurationError):
    """The recall service does not answer at SCHOLARFLOW_RECALL_API_URL."""


class RecallApiError(ScholarflowError):
    """The recall service answered with an error or with something unreadable."""


class HttpRecallRetriever:
    """`Retriever` over an external recall service; see the module docstring."""

    def __init__(
        self,
        api_url: str,
        index_names: Sequence[str],
        *,
        timeout: float = TIMEOUT_SECONDS,
        api_key: str | None = None,
        client: httpx.AsyncClient | None = None,  # shared pool of a long-lived caller
    ) -> None:
        check_http_url(api_url, ENV_URL, EXAMPLE_URL)
        try:
            # httpx's own "invalid URL" error would quote the URL and come at every search.
            httpx.URL(api_url)
        except httpx.InvalidURL:
            raise ConfigurationError(
                f"{ENV_URL} is not a valid URL ({redact_url(api_url)!r}); e.g. {EXAMPLE_URL}"
            ) from None
        self.api_url = api_url
        self._shown_url = redact_url(api_url)  # what messages show: no password
        self.index_names = list(index_names)
        self._timeout = timeout
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = client

    @property
    def key(self) -> str:
        """What names this knowledge base: the service's URL and its index names."""
        return f"{self.api_url}#{','.join(self.index_names)}"

    async def search(
        self, query: str, *, doc_ids: Sequence[str] | None, params: RecallParams
    ) -> list[RecalledChunk]:
        if doc_ids is not None and not doc_ids:
            return []
        payload = {
            "question": query,
            "index_names": self.index_names,
            "doc_ids": list(doc_ids) if doc_ids is not None else None,
            "top_n": params.top_n,
            "similarity_threshold": params.similarity_threshold,
            "vector_similarity_weight": params.vector_similarity_weight,
            "use_rerank": params.use_rerank,
        }
        try:
            response = await self._post(payload)
        except httpx.TimeoutException:
            raise RecallApiUnavailableError(
                f"the recall service at {ENV_URL}={self._shown_url} did not answer within "
                f"{self._timeout:g} s"
            ) from None
        except httpx.TransportError as exc:
            raise RecallApiUnavailableError(
                f"the recall service at {ENV_URL}={self._shown_url} is unreachable "
                f"({type(exc).__name__}); start it or fix the URL"
            ) from None
        if not 200 <= response.status_code < 300:
            raise RecallApiError(
                f"the recall service at {self._shown_url} answered HTTP {response.status_code}: "
                f"{self._excerpt(response.text)}"
            )
        try:
            body = response.json()
        except ValueError:
            raise RecallApiError(
                f"the recall service at {self._shown_url} answered something that is not JSON: "
                f"{self._excerpt(response.text)}"
            ) from None
        try:
            chunks = parse_response(body, source=self._shown_url)
        except RecallApiError as exc:
            raise RecallApiError(scrub(str(exc), self.api_url)) from None
        allowed = set(doc_ids) if doc_ids is not None else None
        kept = [c for c in chunks if allowed is None or c.doc_id in allowed]
        kept.sort(key=lambda c: -c.score)
        return kept[: params.top_n]

    async def _post(self, payload: dict[str, Any]) -> httpx.Response:
        if self._client is not None:
            return await self._client.post(self.api_url, json=payload, headers=self._headers)
        # A client per call: retrievers are made per recall step and never closed,
        # and a recall service answers in far more than a connection costs.
        async with httpx.AsyncClient(timeout=self._timeout) as client:
            return await client.post(self.api_url, json=payload, headers=self._headers)

    def _excerpt(self, text: str) -> str:
        # A service's error page may echo the URL it was called with, password and all.
        return scrub(_excerpt(text), self.api_url)

    async def close(self) -> None:
        """Nothing to release unless a client was handed in (its owner closes it)."""


def parse_response(body: Any, *, source: str = "the recall service") -> list[RecalledChunk]:
    """Chunks from either response shape; RecallApiError on anything else."""
    if isinstance(body, Mapping) and "code" in body:
        if body.get("code") != 0:
            raise RecallApiError(
                f"{source} refused the recall (code {body.get('code')}): "
                f"{_excerpt(str(body.get('message', '')))}"
            )
        data = body.get("data")
        items = data.get("chunks") if isinstance(data, Mapping) else None
        convert = _from_ragflow
    else:
        items = body.get("chunks") if isinstance(body, Mapping) else None
        convert = _from_native
    if not isinstance(items, list):
        raise RecallApiError(f"{source} answered JSON without a list of chunks")
    try:
        return [convert(item) for item in items]
    except (KeyError, TypeError, ValueError) as exc:
        raise RecallApiError(f"{source} answered a malformed chunk ({exc!r})") from None


def _from_native(item: Mapping[str, Any]) -> RecalledChunk:
    return RecalledChunk(
        doc_id=str(item["doc_id"]),
        chunk_id=str(item["chunk_id"]),
        score=_score(item["score"]),
        text=str(item["content"]),
        title=str(item.get("title") or ""),
        heading=str(item["heading"]) if item.get("heading") else None,
        page=_page(item.get("page")),
    )


def _from_ragflow(item: Mapping[str, Any]) -> RecalledChunk:
    positions = item.get("positions") or []
    first = positions[0] if isinstance(positions, list) and positions else None
    page = first[0] if isinstance(first, list) and first else None
    return RecalledChunk(
        doc_id=str(item["document_id"]),
        chunk_id=str(item["id"]),
        score=_score(item["similarity"]),
        text=str(item["content"]),
        title=str(item.get("document_keyword") or item.get("docnm_kwd") or ""),
        heading=None,
        page=_page(page),
    )


def _score(value: Any) -> float:
    score = float(value)
    if not math.isfinite(score):
        raise ValueError(f"score {value!r}")
    return score


def _page(value: Any) -> int | None:
    if value is None or isinstance(value, bool):
        return None
    page = int(value)
    return page if page > 0 else None


def _excerpt(text: str, limit: int = 200) -> str:
    one_line = " ".join(text.split())
    return one_line if len(one_line) <= limit else one_line[:limit] + "..."
