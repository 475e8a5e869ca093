"""A fake Elasticsearch replaying recorded exchanges, and the fixtures of the tests using it.

A local Starlette app stands in for Elasticsearch: it replays the exchanges
of one fixture in tests/data/es/ in order, checks that each request the
official client sends (method, path, query string, JSON or NDJSON body;
floats to 1e-6) is the recorded one, and answers with the recorded
response. Anything else is a 500 and a recorded mismatch, so a test fails
on the first request the client sends differently.

A test module binds the fixtures `replay`, `kb` and `test_lexicon` (autouse)
to names of its own; `replay` has module scope, so each module gets its own server.
"""

from __future__ import annotations

import json
import math
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from elasticsearch import AsyncElasticsearch
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from scholarflow.retrieval.index import crosslingual, lexicon
from scholarflow.retrieval.index.elastic import ElasticsearchKnowledgeBase
from tests.support.servers import serve
from tests.unit.test_crosslingual import SAMPLE

FIXTURES = Path(__file__).parents[1] / "data" / "es"
ES_HEADERS = {
    "X-Elastic-Product": "Elasticsearch",  # the client refuses a server without it
    "Content-Type": "application/vnd.elasticsearch+json;compatible-with=8",
}
AXES = [
    ("attention", "transformer", "注意力"),
    ("convolution", "卷积", "image", "图像"),
    ("recurrent", "lstm", "循环"),
    ("normalization", "normalisation", "规范化"),
]


class KeywordEmbedder:
    """4 dimensions, one per topic word group: vectors the fixtures can state exactly."""

    name = "test/keywords-4"

    @property
    def dim(self) -> int:
        return len(AXES)

    def _one(self, text: str) -> np.ndarray[Any, Any]:
        lower = text.lower()
        v = np.array([float(any(w in lower for w in ws)) for ws in AXES], dtype=np.float32)
        norm = np.linalg.norm(v)
        return v / norm if norm else v

    async def embed_passages(self, texts: Sequence[str]) -> np.ndarray[Any, Any]:
        return np.stack([self._one(t) for t in texts]) if texts else np.zeros((0, 4), np.float32)

    async def embed_query(self, text: str) -> np.ndarray[Any, Any]:
        return self._one(text)


class Replay:
    """The fake Elasticsearch: one fixture's exchanges, in order."""

    def __init__(self) -> None:
        self.interactions: list[dict[str, Any]] = []
        self.received: list[dict[str, Any]] = []
        self.mismatches: list[str] = []

    def reset(self) -> None:
        """Nothing recorded, received or wrong: any request is a mismatch."""
        self.interactions, self.received, self.mismatches = [], [], []

    def load(self, name: str) -> None:
        self.reset()
        self.interactions = json.loads((FIXTURES / name).read_text("utf-8"))["interactions"]

    async def handle(self, request: Request) -> Response:
        raw = (await request.body()).decode()
        ndjson = "x-ndjson" in request.headers.get("content-type", "")
        body: Any = None
        if raw:
            body = [json.loads(x) for x in raw.splitlines() if x] if ndjson else json.loads(raw)
        got = {"method": request.method, "path": request.url.path,
               "query": dict(request.query_params), "body": body}
        self.received.append(got)
        if not self.interactions:
            return self._mismatch(f"unexpected request {got}")
        expected = self.interactions.pop(0)
        want = expected["request"]
        for key in ("method", "path", "query"):
            if got[key] != want[key]:
                return self._mismatch(f"{key}: sent {got[key]!r}, recorded {want[key]!r}")
        if bool(want.get("ndjson")) != ndjson:
            return self._mismatch(f"{got['path']}: NDJSON {ndjson}, recorded {want.get('ndjson')}")
        if not same(body, want.get("body")):
            return self._mismatch(f"{got['path']} body: sent {body}, recorded {want.get('body')}")
        answer = expected["response"]
        if "body" not in answer:
            return Response(status_code=answer["status"], headers=ES_HEADERS)
        return JSONResponse(answer["body"], status_code=answer["status"], headers=ES_HEADERS)

    def _mismatch(self, message: str) -> Response:
        self.mismatches.append(message)
        return JSONResponse({"error": {"type": "fixture_mismatch", "reason": message}},
                            status_code=500, headers=ES_HEADERS)

    def assert_done(self) -> None:
        assert not self.mismatches, self.mismatches
        assert not self.interactions, f"requests recorded but not sent: {self.interactions}"


def same(a: Any, b: Any) -> bool:
    """JSON equality with floats to 1e-6 (float32 vectors print differently than recorded)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-9)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


@pytest.fixture(scope="module")
def replay() -> Iterator[tuple[Replay, str]]:
    fake = Replay()
    app = Starlette(routes=[Route("/{path:path}", fake.handle,
                                  methods=["GET", "HEAD", "POST", "PUT", "DELETE"])])
    with serve(app, "fake Elasticsearch") as base:
        yield fake, base


@pytest.fixture(autouse=True)
def test_lexicon(monkeypatch: pytest.MonkeyPatch) -> None:
    """The recorded queries hold their translations: a small fixed dictionary, not CC-CEDICT's."""
    words = lexicon.parse(iter(SAMPLE.splitlines(keepends=True)))
    monkeypatch.setattr(crosslingual, "lexicon", lambda: words)


@pytest.fixture
async def kb(replay: tuple[Replay, str]) -> AsyncIterator[ElasticsearchKnowledgeBase]:
    """The knowledge base 'papers', already open (no exchanges spent on opening)."""
    _fake, url = replay
    base = ElasticsearchKnowledgeBase(
        "papers", client=AsyncElasticsearch(url, max_retries=0), embedder=KeywordEmbedder(),
        url=url,
    )
    yield base
    await base.close()
