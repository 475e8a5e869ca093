"""The fake OpenAI server, exercised through the real openai and langchain clients."""

from __future__ import annotations

import asyncio
import math
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import openai
import pytest
from langchain_core.messages import AIMessageChunk, HumanMessage, SystemMessage
from langchain_openai import ChatOpenAI, OpenAIEmbeddings

from tests.support import FakeOpenAIServer
from tests.support.fake_openai_app import split_chunks
from tests.support.fake_openai_state import extractive_reply

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as srv:
        yield srv


@pytest.fixture(autouse=True)
def _fresh(server: FakeOpenAIServer) -> None:
    server.reset()


def chat(server: FakeOpenAIServer, **kwargs: object) -> ChatOpenAI:
    return ChatOpenAI(
        model="fake-model", base_url=server.base_url, api_key="sk-test",  # type: ignore[arg-type]
        max_retries=0, **kwargs,  # type: ignore[arg-type]
    )


def client(server: FakeOpenAIServer) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0)


async def ask(server: FakeOpenAIServer, text: str) -> str:
    reply = await client(server).chat.completions.create(
        model="fake-model", messages=[{"role": "user", "content": text}]
    )
    return reply.choices[0].message.content or ""


async def test_ainvoke_returns_echo_and_usage(server: FakeOpenAIServer) -> None:
    message = await chat(server).ainvoke([SystemMessage("be brief"), HumanMessage("hello there")])
    assert message.content == "ok: hello there"
    assert message.usage_metadata is not None
    assert message.usage_metadata["input_tokens"] > 0
    assert message.usage_metadata["output_tokens"] > 0
    stats = server.stats()
    assert stats.chat_calls == 1 and stats.in_flight == 0
    assert stats.requests[0]["model"] == "fake-model"
    assert stats.requests[0]["messages"][1] == {"role": "user", "content": "hello there"}


async def test_astream_chunks_with_usage(server: FakeOpenAIServer) -> None:
    reply = "one two three four five six seven eight nine ten"
    server.configure(rules=[{"match": "stream me", "reply": reply}])
    chunks = [c async for c in chat(server, stream_usage=True).astream("please stream me")]
    assert all(isinstance(c, AIMessageChunk) for c in chunks)
    assert sum(1 for c in chunks if c.content) >= 3  # really split, not one blob
    total = chunks[0]
    for c in chunks[1:]:
        total = total + c
    assert total.content == reply
    assert total.usage_metadata is not None
    assert total.usage_metadata["output_tokens"] > 0
    assert server.stats().in_flight == 0


def test_split_chunks_rebuild_text_and_split_cjk() -> None:
    for text in ["a b c d e f g", "  lead and trail  ", "图神经网络的注意力机制很重要", ""]:
        assert "".join(split_chunks(text)) == text
    assert len(split_chunks("图神经网络的注意力机制很重要")) > 3


async def test_rule_used_times_then_falls_through(server: FakeOpenAIServer) -> None:
    server.configure(rules=[
        {"match": r"capital", "reply": "Paris", "times": 2, "role": "last_user"},
        {"match": r"never", "reply": "nope", "role": "system"},
    ])
    answers = [await ask(server, "what is the capital?") for _ in range(3)]
    assert answers == ["Paris", "Paris", "ok: what is the capital?"]


async def test_429_every_second_call(server: FakeOpenAIServer) -> None:
    server.configure(fail_every_n=2)
    assert await ask(server, "1") == "ok: 1"
    with pytest.raises(openai.RateLimitError) as info:
        await ask(server, "2")
    assert info.value.response.headers["retry-after"] == "0"
    assert info.value.body is not None  # the OpenAI-style error object was parsed
    assert await ask(server, "3") == "ok: 3"
    assert server.stats().chat_calls == 3


async def test_concurrency_rate_limit_turns_away_calls_over_k(server: FakeOpenAIServer) -> None:
    server.configure(latency=1.0, rate_limit_in_flight=2, fault_latency=0, retry_after="1.5")
    started = time.perf_counter()
    results = await asyncio.gather(*(ask(server, f"q{i}") for i in range(5)),
                                   return_exceptions=True)
    limited = [r for r in results if isinstance(r, openai.RateLimitError)]
    assert len(limited) == 3 and sum(isinstance(r, str) for r in results) == 2
    assert all(r.response.headers["retry-after"] == "1.5" for r in limited)
    stats = server.stats()
    assert stats.chat_calls == 5 and stats.failed_calls == 3 and stats.in_flight == 0
    assert time.perf_counter() - started >= 1.0
    assert await ask(server, "later") == "ok: later"  # admitted again once they finished


async def test_500_faults_first_n_and_per_rule(server: FakeOpenAIServer) -> None:
    server.configure(fail_first_n=1, fail_status=500,
                     rules=[{"match": "boom", "status": 500, "times": 1}])
    with pytest.raises(openai.InternalServerError):
        await ask(server, "hi")  # fail_first_n; the rule is not used up by it
    with pytest.raises(openai.InternalServerError):
        await ask(server, "boom")  # the rule's own fault
    assert await ask(server, "boom") == "ok: boom"


async def test_latency(server: FakeOpenAIServer) -> None:
    server.configure(latency=0.3)
    started = time.perf_counter()
    await ask(server, "slow")
    assert 0.3 <= time.perf_counter() - started < 2.0


async def test_concurrent_calls_overlap(server: FakeOpenAIServer) -> None:
    server.configure(latency=0.2)
    model = chat(server, stream_usage=True)

    async def one(i: int) -> str:
        return "".join([str(c.content) async for c in model.astream(f"q{i}")])

    replies = await asyncio.gather(*(one(i) for i in range(20)))
    assert sorted(replies) == sorted(f"ok: q{i}" for i in range(20))
    stats = server.stats()
    # All 20 in flight at once is the overlap; a bound on seconds flakes on a busy machine.
    assert stats.max_in_flight == 20 and stats.in_flight == 0


async def test_admin_endpoints(server: FakeOpenAIServer) -> None:
    admin = server.base_url.removesuffix("/v1") + "/_admin"
    async with httpx.AsyncClient() as http:
        ok = await http.post(f"{admin}/config", json={"rules": [{"match": "x", "reply": "y"}]})
        assert ok.status_code == 200
        bad = await http.post(f"{admin}/config", json={"no_such_key": 1})
        assert bad.status_code == 400 and "no_such_key" in bad.json()["error"]["message"]
        bad_rule = await http.post(f"{admin}/config", json={"rules": [{"match": "("}]})
        assert bad_rule.status_code == 400
        assert await ask(server, "x") == "y"  # the failed configs changed nothing
        stats = (await http.get(f"{admin}/stats")).json()
        assert stats["chat_calls"] == 1 and stats["max_in_flight"] == 1
        assert stats["requests"] == [
            {"model": "fake-model", "messages": [{"role": "user", "content": "x"}],
             "max_tokens": None, "max_tokens_field": None, "stream": False,
             "temperature": None}
        ]
        assert (await http.post(f"{admin}/reset")).status_code == 200
        stats = (await http.get(f"{admin}/stats")).json()
        assert stats == {"chat_calls": 0, "embedding_calls": 0, "in_flight": 0,
                         "max_in_flight": 0, "failed_calls": 0, "queued": 0, "max_queued": 0,
                         "queue_wait_seconds": 0.0, "requests": []}
        for bad_pace in ({"serve_at_most": -1}, {"tokens_per_second": "fast"}):
            bad = await http.post(f"{admin}/config", json=bad_pace)
            assert bad.status_code == 400 and next(iter(bad_pace)) in bad.text
        assert await ask(server, "x") == "ok: x"  # the rule went with the reset
        models = (await http.get(f"{server.base_url}/models")).json()
        assert models["data"][0]["id"] == "fake-model"


async def test_serve_at_most_k_queues_the_rest_in_arrival_order(
    server: FakeOpenAIServer,
) -> None:
    server.configure(serve_at_most=2, latency=0.1, tokens_per_second=200)
    model = chat(server, stream_usage=True, max_tokens=77)
    finished: list[str] = []

    async def one(i: int) -> None:
        async for _ in model.astream(f"q{i}"):
            pass
        finished.append(f"q{i}")

    await asyncio.gather(*(one(i) for i in range(6)))
    stats = server.stats()
    arrived = [r["messages"][-1]["content"] for r in stats.requests]
    # Two at a time, first come first served; the 3rd to 6th waited for a turn.
    assert stats.max_in_flight == 6 and stats.max_queued == 4 and stats.queued == 0
    assert stats.queue_wait_seconds > 0
    assert [set(finished[i:i + 2]) for i in (0, 2, 4)] == [set(arrived[i:i + 2]) for i in (0, 2, 4)]
    assert all(r["stream"] and r["max_tokens"] == 77 for r in stats.requests)


async def until(condition: Callable[[], bool]) -> None:
    """Poll the server thread's state (it has no event to wait on) for up to 5 s."""
    for _ in range(500):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the condition never held")


async def test_a_queued_call_whose_client_left_is_dropped(server: FakeOpenAIServer) -> None:
    server.configure(serve_at_most=1, rules=[{"match": "slow", "reply": "done", "latency": 1.5}])
    first = asyncio.create_task(ask(server, "slow"))
    await until(lambda: server.stats().in_flight == 1)
    impatient = openai.AsyncOpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0,
                                   timeout=0.2)
    with pytest.raises(openai.APITimeoutError):
        await impatient.chat.completions.create(
            model="fake-model", messages=[{"role": "user", "content": "queued"}])
    await until(lambda: server.stats().queued == 0)  # the server notices the hang-up
    assert server.stats().in_flight == 1  # gone from the queue while "slow" is still served
    assert await first == "done"
    assert await ask(server, "next") == "ok: next"  # the turn went to the next in line


async def test_paced_reply_streams_while_the_call_is_served(server: FakeOpenAIServer) -> None:
    server.configure(tokens_per_second=20, rules=[{"match": "long", "reply": "word " * 30}])
    seen_in_flight = []
    async for chunk in chat(server).astream("long"):
        if chunk.content:
            seen_in_flight.append(server.stats().in_flight)
    # Every chunk but the last came while the server was still writing the reply.
    assert len(seen_in_flight) == 10 and seen_in_flight[:-1] == [1] * 9


async def test_embeddings(server: FakeOpenAIServer) -> None:
    embedder = OpenAIEmbeddings(
        model="fake-embed", base_url=server.base_url, api_key="sk-test",  # type: ignore[arg-type]
        check_embedding_ctx_length=False, max_retries=0,
    )
    docs = await embedder.aembed_documents(["graph neural networks", "graph neural nets", "soup"])
    query = await embedder.aembed_query("graph neural networks")
    assert len(query) == 64 and math.isclose(sum(v * v for v in query), 1.0, rel_tol=1e-5)
    assert query == pytest.approx(docs[0], abs=1e-6)  # deterministic

    def cos(a: list[float], b: list[float]) -> float:
        return sum(x * y for x, y in zip(a, b, strict=True))

    assert cos(docs[0], docs[1]) > cos(docs[0], docs[2])
    floats = await client(server).embeddings.create(
        model="fake-embed", input="graph neural networks", encoding_format="float"
    )
    assert floats.data[0].embedding == pytest.approx(query, abs=1e-6)
    assert floats.usage.total_tokens > 0
    assert server.stats().embedding_calls == 3


async def test_extractive_mode(server: FakeOpenAIServer) -> None:
    server.configure(mode="extractive")
    context = (
        "Transformers use self-attention. The weather was cold. "
        "Attention weights are computed from queries and keys.\n"
        "Bananas are yellow! Self-attention lets every token see every other token."
    )
    message = await chat(server).ainvoke([
        SystemMessage("Answer from the context."),
        HumanMessage(f"Context:\n{context}\n\nHow does self-attention compute attention weights?"),
    ])
    assert message.content == (
        "Transformers use self-attention. Attention weights are computed from queries and keys. "
        "Self-attention lets every token see every other token."
    )


def test_extractive_reply_keeps_a_wrapped_sentence_whole() -> None:
    paper = ("# Setup\n\nWe trained with a learning rate\nof 3e-4 and a batch size of 32 "
             "for 60,000\nsteps.\nThe weather was cold.\n- a batch size list item")
    reply = extractive_reply([{"role": "user", "content": paper}], "learning rate and batch size?")
    assert reply == ("We trained with a learning rate of 3e-4 and a batch size of 32 for 60,000 "
                     "steps. - a batch size list item")


def test_extractive_reply_handles_cjk() -> None:
    messages = [{"role": "user", "content": "图神经网络用于分子。今天下雨了！注意力机制很重要。"},
                {"role": "user", "content": "图神经网络"}]
    assert extractive_reply(messages, "图神经网络").startswith("图神经网络用于分子。")


def test_cli_subprocess() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.support.fake_openai", "--port", "0",
         "--mode", "echo", "--latency", "0"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        found = re.fullmatch(r"fake-openai listening on (http://127\.0\.0\.1:(\d+)/v1)\n", line)
        assert found, line
        sync = openai.OpenAI(base_url=found.group(1), api_key="sk-test", max_retries=0)
        reply = sync.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "from a subprocess"}]
        )
        assert reply.choices[0].message.content == "ok: from a subprocess"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert proc.stderr is not None
    assert "Traceback" not in proc.stderr.read()
