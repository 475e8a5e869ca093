"""Hostile requests through the Python API and LangGraph server: refused before the run.

Every bad request or context is one typed error (InvalidRequestError, an
InputError; InvalidContextError, a ConfigurationError) whose message is one
line naming the field and what to do; the model is never called and no session
is created. On `langgraph dev` the run ends with status "error" and that message.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.errors import EmptyInputError

from scholarflow import Context, build_graph
from scholarflow.context import ServedContext
from scholarflow.errors import (
    ConfigurationError,
    InputError,
    InvalidContextError,
    InvalidRequestError,
)
from scholarflow.storage.paths import home_path
from tests.support import FakeOpenAIServer
from tests.support.langgraph_dev import (
    GRAPH_ID,
    LANGGRAPH,
    NO_CLI,
    Fake,
    Server,
    fake_stats,
    script,
    sdk_client,
    start_fake,
    start_server,
)

Q = "What learning rate did they use?"
LONE = "hi \ud800 there"  # a lone surrogate
FIELDS = "the fields are messages, query, session_id, kb, doc_ids, content, document_contents"

# (id, payload, what the one line must say: the field, what is wrong, what to do)
REQUESTS: list[tuple[str, Any, list[str]]] = [
    ("query-number", {"query": 123}, ["query must be", "not a number", 'pass {"query"']),
    ("query-null", {"query": None}, ["query must be", "not null", 'pass {"query"']),
    ("query-missing", {"content": "A paper."}, ["query is missing", 'pass {"query"']),
    ("query-object", {"query": {"a": 1}}, ["query must be", "not an object"]),
    ("query-nested-garbage", {"query": [["deep", {"x": [1, None]}]]}, ["query", "not a list"]),
    ("query-blank", {"query": " \n\t "}, ["query is empty", "ask something"]),
    ("contents-list", {"query": Q, "document_contents": ["a", "b"]},
     ["document_contents must be an object", "not a list", 'pass {"paper-1"']),
    ("contents-number-text", {"query": Q, "document_contents": {"a": 5}},
     ["document_contents['a'] is a number", 'pass {"paper-1"']),
    ("contents-nested-garbage", {"query": Q, "document_contents": {"a": {"b": [1, {"c": 0}]}}},
     ["document_contents['a'] is an object"]),
    ("contents-number-key", {"query": Q, "document_contents": {5: "text"}},
     ["a key of document_contents is a number"]),
    ("contents-blank-id", {"query": Q, "document_contents": {"  ": "text"}},
     ["document_contents has an empty document id", 'pass {"paper-1"']),
    ("doc_ids-string", {"query": Q, "doc_ids": "a74347d22dcc67aa"},
     ["doc_ids must be a list of document ids, not a string", 'pass ["a74347d22dcc67aa"]']),
    ("doc_ids-numbers", {"query": Q, "doc_ids": [1, 2]},
     ["doc_ids[0] is a number", 'pass ["a74347d22dcc67aa"]']),
    ("doc_ids-10k", {"query": Q, "doc_ids": [f"{i:016x}" for i in range(10_000)]},
     ["doc_ids names 10000 documents", "at most 1000", "ask about fewer"]),
    ("kb-traversal", {"query": Q, "kb": "../../etc"},
     ["kb '../../etc' is not a knowledge base name", "use 1-64 letters"]),
    ("kb-number", {"query": Q, "kb": 5}, ["kb must be", "not a number", "scholarflow ingest"]),
    ("mode_type-unknown", {"query": Q, "mode_type": "NOPE"},
     ["mode_type 'NOPE' is not an intent", "use one of", "LITERATURE_QA"]),
    ("mode_type-number", {"query": Q, "mode_type": 3},
     ["mode_type must be", "not a number", "use one of"]),
    ("web-search-yes", {"query": Q, "enable_web_search": "yes"},
     ["enable_web_search must be true or false, not a string", "pass true or false"]),
    ("session-blank", {"query": Q, "session_id": " "},
     ["session_id ' '", "scholarflow sessions list"]),
    ("session-10k", {"query": Q, "session_id": "s" * 10_000},
     ["session_id", "at most 200 characters", "scholarflow sessions list"]),
    ("unknown-querry", {"querry": Q},
     ["unknown field 'querry'", "did you mean 'query'", FIELDS]),
    ("unknown-mode", {"query": Q, "mode": "PAPER_REVIEW"},
     ["unknown field 'mode'", "did you mean 'mode_type'", FIELDS]),
    ("content-bytes", {"query": Q, "content": b"bytes"}, ["content must be", "not bytes"]),
    ("not-an-object", ["query", Q], ["the input must be an object", "not a list"]),
    # A lone surrogate is no Unicode: it cannot be encoded to be saved or sent (JSON's
    # "\ud800", or bytes decoded with surrogateescape). Every text field is checked.
    *[(f"surrogate-{name}", payload, [where, "not valid Unicode text", "U+D800",
                                      "decode it as UTF-8"])
      for name, payload, where in [
          ("query", {"query": LONE}, "query is"),
          ("message", {"messages": [{"type": "human", "content": LONE}]},
           "messages[0].content"),
          ("message-part", {"messages": [{"type": "human", "content": [
              {"type": "text", "text": "fine"}, {"type": "text", "text": LONE}]}]},
           "messages[0].content"),
          ("content", {"query": Q, "content": LONE}, "content is"),
          ("contents-key", {"query": Q, "document_contents": {LONE: "text"}},
           "a key of document_contents"),
          ("contents-value", {"query": Q, "document_contents": {"p1": LONE}},
           "document_contents['p1']"),
          ("kb", {"query": Q, "kb": LONE}, "kb is"),
          ("doc_ids", {"query": Q, "doc_ids": ["a74347d22dcc67aa", LONE]}, "doc_ids[1]"),
          ("session_id", {"query": Q, "session_id": LONE}, "session_id is"),
      ]],
    ("escaped-byte-query", {"query": "caf\udce9"},
     ["query is not valid Unicode text", "byte 0xe9"]),
    ("nul-contents-value", {"query": Q, "document_contents": {"p1": "a\x00b"}},
     ["document_contents['p1'] contains a NUL character", "remove it"]),
]

# (id, how the context is given, what the line must say)
CONTEXTS: list[tuple[str, Callable[[], Any], list[str]]] = [
    ("top_n-0", lambda: Context(top_n=0),
     ["top_n must be at least 1, not 0", "leave it out for the default 10"]),
    ("max_context_tokens-big", lambda: Context(max_context_tokens=cast(Any, "big")),
     ["max_context_tokens must be a whole number or null, not 'big'", "default 128000"]),
    ("similarity-above-1", lambda: Context(similarity_threshold=1.5),
     ["similarity_threshold must be between 0 and 1", "default 0.2"]),
    ("dict-top_n-negative", lambda: {"top_n": -1}, ["top_n must be at least 1, not -1"]),
    ("dict-unknown-key", lambda: {"topn": 5},
     ["unknown field 'topn'", "did you mean 'top_n'", "fields of the graph's context schema"]),
    ("dict-wrong-type", lambda: {"show_thinking": "no"},
     ["show_thinking must be true or false, not 'no'"]),
]


def assert_one_clear_line(exc: BaseException, says: list[str]) -> str:
    message = str(exc)
    assert "\n" not in message and "\r" not in message, repr(message)
    assert len(message) < 400, message  # one line a person reads whole
    assert message.startswith(("invalid request: ", "invalid context: ")), message
    assert "; " in message, f"no fix after the problem: {message}"
    for words in says:
        assert words in message, f"{words!r} not in {message!r}"
    return message


async def assert_nothing_happened(fake: FakeOpenAIServer) -> None:
    assert fake.stats().chat_calls == 0
    # No session (a thread needs a checkpointer: none here), no cache, nothing on disk.
    assert not home_path().exists() or not any(home_path().iterdir())


@pytest.mark.parametrize(("payload", "says"), [c[1:] for c in REQUESTS],
                         ids=[c[0] for c in REQUESTS])
async def test_a_bad_request_is_refused_before_the_run(
    fake_llm: FakeOpenAIServer, payload: Any, says: list[str]
) -> None:
    with pytest.raises(InvalidRequestError) as raised:
        await build_graph().ainvoke(payload)
    assert isinstance(raised.value, InputError)
    assert_one_clear_line(raised.value, says)
    await assert_nothing_happened(fake_llm)


@pytest.mark.parametrize(("given", "says"), [c[1:] for c in CONTEXTS],
                         ids=[c[0] for c in CONTEXTS])
async def test_a_bad_context_is_refused_before_the_run(
    fake_llm: FakeOpenAIServer, given: Callable[[], Any], says: list[str]
) -> None:
    with pytest.raises(InvalidContextError) as raised:
        await build_graph().ainvoke({"query": Q}, context=given())
    assert isinstance(raised.value, ConfigurationError)
    assert_one_clear_line(raised.value, says)
    await assert_nothing_happened(fake_llm)


async def test_a_key_sent_to_the_served_graph_is_refused_and_not_echoed(
    fake_llm: FakeOpenAIServer,
) -> None:
    """The served schema has no key fields: a key in the context is an unknown field."""
    served = build_graph(context_schema=ServedContext)
    secret = "sk-hostile-" + uuid.uuid4().hex
    with pytest.raises(InvalidContextError) as raised:
        await served.ainvoke({"query": Q}, context={"openai_api_key": secret})
    message = assert_one_clear_line(raised.value, ["unknown field 'openai_api_key'"])
    assert secret not in message
    await assert_nothing_happened(fake_llm)


async def test_every_way_to_run_the_graph_checks_the_input(fake_llm: FakeOpenAIServer) -> None:
    graph = build_graph()
    with pytest.raises(InvalidRequestError, match="unknown field 'querry'"):
        await asyncio.to_thread(graph.invoke, {"querry": Q})
    with pytest.raises(InvalidRequestError, match="query is not valid Unicode text"):
        await asyncio.to_thread(graph.batch, [{"query": LONE}, {"query": LONE + "?"}])
    with pytest.raises(InvalidRequestError, match=r"messages\[0\].content is not valid Unicode"):
        await asyncio.to_thread(lambda: list(graph.stream({"messages": [("user", LONE)]})))
    with pytest.raises(InvalidRequestError, match="doc_ids must be a list"):
        async for _ in graph.astream({"query": Q, "doc_ids": "abc"}, stream_mode="custom"):
            pass
    with pytest.raises(InvalidRequestError, match="query must be"):
        async for _ in graph.astream_events({"query": 1}, version="v2"):
            pass
    await assert_nothing_happened(fake_llm)


async def test_resuming_a_thread_is_not_a_request(fake_llm: FakeOpenAIServer) -> None:
    """None continues the thread's run: LangGraph's to judge (here: nothing to resume)."""
    graph = build_graph(checkpointer=InMemorySaver())
    with pytest.raises(EmptyInputError):
        await graph.ainvoke(None, {"configurable": {"thread_id": "t-" + uuid.uuid4().hex}})
    await assert_nothing_happened(fake_llm)


async def test_the_command_lines_payload_passes(fake_llm: FakeOpenAIServer) -> None:
    """What `scholarflow ask` sends (cli._ask), on the session's thread."""
    graph = build_graph(checkpointer=InMemorySaver())
    for mode in (None, "simple_interaction"):
        payload = {"query": "hello there", "mode_type": mode, "enable_web_search": False}
        out = await graph.ainvoke(payload, {"configurable": {"thread_id": "my-session"}})
        assert out["error"] is None and out["answer"]
        assert out["session"]["session_id"] == "my-session"
    assert fake_llm.stats().chat_calls == 2


# --- LangGraph server --------------------------------------------------------------------------

SERVED: list[tuple[str, dict[str, Any], dict[str, Any] | None, list[str], str]] = [
    ("query-number", {"query": 123}, None, ["query must be", "not a number"],
     "InvalidRequestError"),
    ("doc_ids-string", {"query": Q, "doc_ids": "a74347d22dcc67aa"}, None,
     ["doc_ids must be a list of document ids, not a string"], "InvalidRequestError"),
    ("unknown-querry", {"querry": Q}, None, ["unknown field 'querry'"], "InvalidRequestError"),
    ("context-top_n", {"query": Q}, {"top_n": -1}, ["top_n must be at least 1, not -1"],
     "InvalidContextError"),
]


@pytest.fixture(scope="module")
def served_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("hostile_api_server")


@pytest.fixture(scope="module")
def fake_server(served_home: Path) -> Iterator[Fake]:
    with start_fake(served_home) as started:
        yield started


@pytest.fixture(scope="module")
def served(fake_server: Fake, served_home: Path) -> Iterator[Server]:
    if LANGGRAPH is None:
        pytest.skip(NO_CLI)
    with start_server(served_home, fake_server) as started:
        yield started


@pytest.mark.parametrize(("payload", "context", "says", "kind"), [c[1:] for c in SERVED],
                         ids=[c[0] for c in SERVED])
async def test_the_server_ends_a_bad_run_in_error(
    served: Server, fake_server: Fake, payload: dict[str, Any], context: dict[str, Any] | None,
    says: list[str], kind: str,
) -> None:
    await script(fake_server)
    extra = {"context": context} if context else {}
    async with sdk_client(served) as client:
        thread = (await client.threads.create())["thread_id"]
        result = await client.runs.wait(thread, GRAPH_ID, input=payload, raise_error=False,
                                        **extra)
        runs = await client.runs.list(thread)
        kept = (await client.threads.get_state(thread))["values"]
        streamed = [part async for part in client.runs.stream(
            (await client.threads.create())["thread_id"], GRAPH_ID, input=payload,
            stream_mode=["custom", "values"], **extra)]

    assert [r["status"] for r in runs] == ["error"], f"{runs}\n{served.log_tail()}"
    error = result["__error__"] if isinstance(result, dict) else result
    assert_one_clear_line(Exception(error["message"]), says)
    assert error["error"] == kind, error
    # The stream says the same, and nothing ran: no event, no value, no LLM call, no session.
    assert [(p.event, p.data) for p in streamed if p.event != "metadata"] == [("error", error)]
    assert (await fake_stats(fake_server))["chat_calls"] == 0
    assert not (kept or {}).get("messages")  # the thread (the session) holds nothing
