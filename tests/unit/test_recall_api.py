"""HttpRecallRetriever against a local recall service in both response shapes."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from scholarflow.errors import ConfigurationError
from scholarflow.retrieval.kb import RecallParams
from scholarflow.retrieval.recall_api import (
    HttpRecallRetriever,
    RecallApiError,
    RecallApiUnavailableError,
    parse_response,
)
from tests.support.servers import serve

NATIVE = {"chunks": [
    {"doc_id": "p1", "chunk_id": "p1:00002", "content": "Residual blocks add the input.",
     "score": 0.61, "title": "ResNet", "heading": "3 Residual Blocks", "page": 4},
    {"doc_id": "p1", "chunk_id": "p1:00000", "content": "Deeper nets should not be worse.",
     "score": 0.83, "title": "ResNet"},
    {"doc_id": "p2", "chunk_id": "p2:00001", "content": "批量规范化。", "score": 0.4},
]}
RAGFLOW = {"code": 0, "data": {"total": 2, "doc_aggs": [], "chunks": [
    {"id": "c8f1", "content": "LSTM gates control memory.", "document_id": "p3",
     "docnm_kwd": "lstm.pdf", "similarity": 0.72, "term_similarity": 0.7,
     "vector_similarity": 0.77, "positions": [[5, 10, 200, 30, 80]], "kb_id": "k1"},
    {"id": "a001", "content": "门控循环单元。", "document_id": "p4",
     "document_keyword": "gru_zh.md", "similarity": 0.55, "positions": []},
]}}


class Service:
    def __init__(self) -> None:
        self.mode = "native"
        self.requests: list[dict[str, Any]] = []

    async def recall(self, request: Request) -> Response:
        auth = request.headers.get("authorization")
        self.requests.append({"body": await request.json(), "auth": auth})
        if self.mode == "native":
            return JSONResponse(NATIVE)
        if self.mode == "ragflow":
            return JSONResponse(RAGFLOW)
        if self.mode == "ragflow-error":
            return JSONResponse({"code": 102, "message": "`datasets` is required."})
        if self.mode == "500":
            return PlainTextResponse("index scholarflow missing\nstack trace...", status_code=500)
        if self.mode == "slow":
            await asyncio.sleep(1)
            return JSONResponse(NATIVE)
        if self.mode == "no-chunks":
            return JSONResponse({"results": []})
        return PlainTextResponse("<html>not json</html>")


@pytest.fixture(scope="module")
def service() -> Iterator[tuple[Service, str]]:
    svc = Service()
    app = Starlette(routes=[Route("/api/recall", svc.recall, methods=["POST"])])
    with serve(app, "recall service") as base:
        yield svc, base + "/api/recall"


@pytest.fixture
async def retriever(service: tuple[Service, str]) -> AsyncIterator[HttpRecallRetriever]:
    svc, url = service
    svc.mode, svc.requests = "native", []
    r = HttpRecallRetriever(url, ["scholarflow-kb-papers"], timeout=5, api_key="rk-test")
    yield r
    await r.close()


async def test_request_body_and_native_response(
    service: tuple[Service, str], retriever: HttpRecallRetriever
) -> None:
    svc, _ = service
    params = RecallParams(top_n=5, similarity_threshold=0.3, vector_similarity_weight=0.4,
                          use_rerank=True)
    hits = await retriever.search("why residual?", doc_ids=None, params=params)
    assert svc.requests[0]["body"] == {
        "question": "why residual?", "index_names": ["scholarflow-kb-papers"], "doc_ids": None,
        "top_n": 5, "similarity_threshold": 0.3, "vector_similarity_weight": 0.4,
        "use_rerank": True,
    }
    assert svc.requests[0]["auth"] == "Bearer rk-test"
    assert [h.chunk_id for h in hits] == ["p1:00000", "p1:00002", "p2:00001"]  # best first
    assert hits[1].location == "p. 4, 3 Residual Blocks"
    assert (hits[2].title, hits[2].heading, hits[2].page) == ("", None, None)


async def test_doc_ids_are_sent_and_enforced(
    service: tuple[Service, str], retriever: HttpRecallRetriever
) -> None:
    svc, _ = service
    hits = await retriever.search("q", doc_ids=["p2"], params=RecallParams(top_n=10))
    assert svc.requests[0]["body"]["doc_ids"] == ["p2"]
    # The service ignored the filter; the client still returns only p2's chunks.
    assert [h.doc_id for h in hits] == ["p2"]
    assert await retriever.search("q", doc_ids=[], params=RecallParams()) == []
    assert len(svc.requests) == 1  # no request for an empty document list


async def test_top_n_cut(retriever: HttpRecallRetriever) -> None:
    hits = await retriever.search("q", doc_ids=None, params=RecallParams(top_n=1))
    assert [h.chunk_id for h in hits] == ["p1:00000"]


async def test_ragflow_shape(service: tuple[Service, str], retriever: HttpRecallRetriever) -> None:
    svc, _ = service
    svc.mode = "ragflow"
    hits = await retriever.search("LSTM", doc_ids=None, params=RecallParams())
    assert [(h.doc_id, h.chunk_id, h.title, h.page, h.score) for h in hits] == [
        ("p3", "c8f1", "lstm.pdf", 5, 0.72), ("p4", "a001", "gru_zh.md", None, 0.55)]
    assert hits[0].text == "LSTM gates control memory."


@pytest.mark.parametrize(("mode", "match"), [
    ("ragflow-error", r"code 102.*datasets` is required"),
    ("500", r"HTTP 500: index scholarflow missing stack trace"),
    ("html", "not JSON"),
    ("no-chunks", "without a list of chunks"),
])
async def test_service_errors_are_one_line(
    service: tuple[Service, str], retriever: HttpRecallRetriever, mode: str, match: str
) -> None:
    svc, _ = service
    svc.mode = mode
    with pytest.raises(RecallApiError, match=match) as info:
        await retriever.search("q", doc_ids=None, params=RecallParams())
    assert "\n" not in str(info.value)


async def test_timeout(service: tuple[Service, str]) -> None:
    svc, url = service
    svc.mode = "slow"
    r = HttpRecallRetriever(url, ["i"], timeout=0.3)
    try:
        with pytest.raises(RecallApiUnavailableError, match=r"SCHOLARFLOW_RECALL_API_URL.*0\.3 s"):
            await r.search("q", doc_ids=None, params=RecallParams())
    finally:
        await r.close()


async def test_unreachable_names_the_variable() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    r = HttpRecallRetriever(f"http://127.0.0.1:{port}/recall", ["i"], timeout=2)
    try:
        with pytest.raises(RecallApiUnavailableError) as info:
            await r.search("q", doc_ids=None, params=RecallParams())
    finally:
        await r.close()
    message = str(info.value)
    assert "SCHOLARFLOW_RECALL_API_URL" in message and "unreachable" in message
    assert "\n" not in message


def test_bad_url_and_malformed_chunks() -> None:
    with pytest.raises(ConfigurationError, match="SCHOLARFLOW_RECALL_API_URL"):
        HttpRecallRetriever("localhost:9380", ["i"])
    with pytest.raises(RecallApiError, match="malformed chunk"):
        parse_response({"chunks": [{"doc_id": "x", "content": "no id or score"}]})
    with pytest.raises(RecallApiError, match="malformed chunk"):
        parse_response(json.loads('{"chunks": [{"doc_id": "x", "chunk_id": "c", '
                                  '"content": "t", "score": "NaN"}]}'))
