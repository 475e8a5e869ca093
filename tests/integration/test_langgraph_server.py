"""`langgraph dev` serves langgraph.json and the `langgraph_sdk` client streams runs from it.

One server per module (tests/support/langgraph_dev.py): `langgraph dev` on the
repository's langgraph.json, and the scripted OpenAI server as a second
subprocess whose in-flight counter sees every LLM call the server makes.
Skipped only when the `langgraph` CLI is not installed.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from scholarflow.context import SERVER_FIELDS
from tests.conftest import EXAMPLES, INTENT_RULE, SUMMARY_RULE
from tests.support.langgraph_dev import (
    GRAPH_ID,
    LANGGRAPH,
    NO_CLI,
    Fake,
    Run,
    Server,
    cli_json_events,
    doc_events,
    fake_stats,
    files_containing,
    new_thread,
    next_nodes,
    normalised,
    script,
    sdk_client,
    session_of,
    shared_events,
    start_fake,
    start_server,
    stream,
    tail,
    where,
)
from tests.support.studio_checks import (
    EXPANDED_NODES,
    drawing_faults,
    owned_classes,
    secret_names,
    undescribed,
)

QA_RULE = "You answer a precise question"
INTENT_QA = '{"intent": "LITERATURE_QA", "confidence": 0.9, "reason": "a precise question"}'
ANSWER = "The model attends to a local window plus a few global tokens."
QUESTION = "Which attention pattern does the sparse model use?"
SECRET = "sk-secret-xyz"
SEARCH_SECRET = "tvly-secret-abc"
EVENT_TYPES = frozenset({
    "thinking_start", "thinking_end", "thought_chunk", "answer_chunk", "final_answer",
    "node_complete", "node_error", "doc_summary_init", "doc_summary_start",
    "doc_summary_chunk", "doc_summary_complete", "doc_summary_error", "error",
})
FULL_CONTENT_NODES = ["request_init", "document_check", "intent_recognition",
                      "strategy_selection", "answer_generation", "session_save"]
CHAT_NODES = ["request_init", "document_check", "simple_interaction", "session_save"]

pytestmark = pytest.mark.skipif(LANGGRAPH is None, reason=NO_CLI)


LOAD_RUNS = 20
LOAD_CAP = 4  # the server's process-wide LLM limit in this module
LOAD_LATENCY = 0.3


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("langgraph_server")


@pytest.fixture(scope="module")
def fake(workdir: Path) -> Iterator[Fake]:
    with start_fake(workdir) as started:
        yield started


@pytest.fixture(scope="module")
def server(fake: Fake, workdir: Path) -> Iterator[Server]:
    # The process-wide LLM limit is the operator's: the server's environment sets it.
    with start_server(workdir, fake,
                      env={"SCHOLARFLOW_MAX_CONCURRENT_LLM_CALLS": str(LOAD_CAP)}) as started:
        yield started


def _paper() -> str:
    return (EXAMPLES / "en_sparse_attention.md").read_text(encoding="utf-8")


def _qa_rules() -> list[dict[str, Any]]:
    return [{"match": INTENT_RULE, "reply": INTENT_QA}, {"match": QA_RULE, "reply": ANSWER}]


# --- streaming ---------------------------------------------------------------------------------


async def test_sdk_streams_a_run_from_langgraph_dev(server: Server, fake: Fake) -> None:
    await script(fake, rules=_qa_rules())
    async with sdk_client(server) as client:
        assistants = await client.assistants.search(graph_id=GRAPH_ID)
        assert assistants, f"graph {GRAPH_ID!r} is not served\n{server.log_tail()}"

    run = await stream(server, await new_thread(server),
                       input={"query": QUESTION, "content": _paper()})

    assert not run.failures(), f"{run.failures()}\n{server.log_tail()}"
    assert set(run.types()) <= EVENT_TYPES, run.types()
    chunks = [e["content"] for e in run.custom if e["type"] == "answer_chunk"]
    assert chunks and "".join(chunks) == ANSWER, run.types()
    completed = [e["node"] for e in run.custom if e["type"] == "node_complete"]
    assert completed == FULL_CONTENT_NODES, completed
    finals = [e for e in run.custom if e["type"] == "final_answer"]
    assert len(finals) == 1 and run.custom[-1] is finals[0], run.types()
    assert finals[0]["answer"] == ANSWER
    assert finals[0]["intent"] == "LITERATURE_QA"
    assert finals[0]["strategy"] == "full_content"
    assert finals[0]["session_id"]

    assert run.values.get("answer") == ANSWER, sorted(run.values)
    assert run.values.get("detected_intent") == "LITERATURE_QA", sorted(run.values)
    assert run.values.get("strategy") == "full_content"


def _full_content_files(folder: Path, nonce: str) -> tuple[list[Path], list[str]]:
    paper = folder / "sparse.md"
    paper.write_text(f"{_paper()}\n\nRun {nonce}.\n", encoding="utf-8")
    return [paper], [QUESTION]


def _multi_doc_files(folder: Path, nonce: str) -> tuple[list[Path], list[str]]:
    # Three documents, one of which the scripted model refuses: the per-document
    # events, the failure and the merge all come through the document_summary subgraph.
    texts = {
        "alpha.md": f"# Alpha {nonce}\n\nSparse attention keeps a local window per token.\n",
        "beta.md": f"# Beta {nonce}\n\nHybrid retrieval mixes BM25 with dense vectors.\n",
        "gamma.md": f"# Gamma {nonce}\n\nBROKEN on purpose: the model rejects this one.\n",
    }
    for name, text in texts.items():
        (folder / name).write_text(text, encoding="utf-8")
    return [folder / name for name in texts], ["Summarise these papers", "--mode",
                                               "LITERATURE_SUMMARY"]


@pytest.mark.parametrize("files_of", [_full_content_files, _multi_doc_files],
                         ids=["full_content", "multi_doc_summary"])
async def test_the_sdk_gets_the_same_events_as_the_cli(
    server: Server, fake: Fake, tmp_path: Path, files_of: Any
) -> None:
    from scholarflow.ingest.extract import load_document_file

    await script(fake, rules=[
        *_qa_rules(),
        {"match": SUMMARY_RULE + ".*BROKEN", "status": 400},
        {"match": SUMMARY_RULE, "reply": "A condensed summary of the paper."},
    ])
    # Documents nobody has summarised yet, so neither side reads a summary cache.
    files, (question, *options) = files_of(tmp_path, uuid.uuid4().hex)
    cli = await asyncio.to_thread(
        cli_json_events, [question, *[f"--file={f}" for f in files], *options], fake,
        tmp_path / "cli-home")
    # The same request through the server: the documents as the CLI reads them.
    payload: dict[str, Any] = {"query": question, "document_contents": {
        d.doc_id: d.content for d in map(load_document_file, files)}}
    if options:
        payload["mode_type"] = options[1]
    served = await stream(server, await new_thread(server), input=payload)

    assert [e for kind, e in served.parts if kind == "error"] == [], server.log_tail()
    assert cli and cli[-1]["type"] == "final_answer", [e.get("type") for e in cli]
    assert served.custom and served.custom[-1]["type"] == "final_answer", served.types()
    assert set(served.types()) <= EVENT_TYPES
    server_events, cli_events = (_untimed(normalised(served.custom)),
                                 _untimed(normalised(cli)))
    if not any("doc_id" in e for e in cli_events):
        assert server_events == cli_events
        return
    # Per-document summaries (the events naming a doc_id) run in parallel: their order
    # across documents is the scheduler's. Everything else keeps its order, and so does
    # each document's own stream.
    assert shared_events(server_events) == shared_events(cli_events)
    for doc_id in payload["document_contents"]:
        assert doc_events(cli_events, doc_id), f"no events for {doc_id}"
        assert doc_events(server_events, doc_id) == doc_events(cli_events, doc_id), doc_id
    assert Counter(json.dumps(e, sort_keys=True) for e in server_events) == Counter(
        json.dumps(e, sort_keys=True) for e in cli_events)
    kinds = set(served.types())
    assert {"doc_summary_init", "doc_summary_complete", "doc_summary_error"} <= kinds, kinds


def _untimed(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events with the cost estimate's time cut off: it comes from the model speed each
    process has measured (llm/rates.py), which the server and a new CLI process differ in."""
    for e in events:
        if e.get("node") != "cost_check":
            continue
        if isinstance(e.get("content"), str):
            e["content"] = re.sub(r"reply tokens, .*", "reply tokens, <time>", e["content"])
        if "seconds" in e:
            e["seconds"] = "<time>"
    return events


# --- threads -----------------------------------------------------------------------------------


async def test_thread_history_is_browsable(server: Server, fake: Fake) -> None:
    await script(fake, rules=_qa_rules())
    thread_id = await new_thread(server)
    first = await stream(server, thread_id, input={"query": QUESTION, "content": _paper()})
    assert not first.failures(), f"{first.failures()}\n{server.log_tail()}"
    calls_before = (await fake_stats(fake))["chat_calls"]
    # A follow-up in the same thread: no document this time, so it is chat.
    second = await stream(server, thread_id, input={"query": "Thanks! Who wrote it?"})
    assert not second.failures(), f"{second.failures()}\n{server.log_tail()}"
    stats = await fake_stats(fake)

    async with sdk_client(server) as client:
        history = await client.threads.get_history(thread_id, limit=100)
        latest = await client.threads.get_state(thread_id)
        end_of_first = next(c for c in history if c["metadata"].get("run_id") == first.run_id
                            and not c["next"])
        earlier = await client.threads.get_state(
            thread_id, checkpoint_id=end_of_first["checkpoint"]["checkpoint_id"])

    # Every checkpoint of both runs, newest first, each naming its run and step.
    assert {c["metadata"].get("run_id") for c in history} == {first.run_id, second.run_id}
    steps = [c["metadata"]["step"] for c in history]
    assert steps == sorted(steps, reverse=True) and steps[-1] == -1, steps
    assert [c["metadata"]["source"] for c in history].count("input") == 2
    assert next_nodes(history, first.run_id) == ["__start__", *FULL_CONTENT_NODES]
    assert next_nodes(history, second.run_id) == ["__start__", *CHAT_NODES]
    parents = {c["checkpoint"]["checkpoint_id"]: (c["parent_checkpoint"] or {}).get(
        "checkpoint_id") for c in history}
    assert sum(parent is None for parent in parents.values()) == 1, "one chain, one root"

    # Any checkpoint can be opened: the end of the first run still holds its answer.
    assert earlier["values"]["answer"] == ANSWER
    assert latest["values"]["answer"] == second.values["answer"] != ANSWER
    assert latest["values"]["detected_intent"] == "SIMPLE_INTERACTION"
    # The thread is one session: the follow-up continued it, with the first exchange
    # as history, and its usage counts only its own LLM calls.
    assert session_of(second.custom) == session_of(first.custom)
    follow_up = stats["requests"][calls_before:]
    assert len(follow_up) == 1 and QUESTION in json.dumps(follow_up[0]["messages"])
    assert len(latest["values"]["usage"]) == len(follow_up)


# --- schemas -----------------------------------------------------------------------------------


async def test_studio_sees_input_output_and_context_schemas(server: Server) -> None:
    async with sdk_client(server) as client:
        assistant = (await client.assistants.search(graph_id=GRAPH_ID))[0]
        schemas = await client.assistants.get_schemas(assistant["assistant_id"])
        graph = await client.assistants.get_graph(assistant["assistant_id"], xray=True)
        subgraphs = await client.assistants.get_subgraphs(assistant["assistant_id"],
                                                          recurse=True)

    given = schemas["input_schema"]
    assert given, f"no input schema\n{server.log_tail()}"
    assert not given.get("required")  # `messages` (chat UIs) or `query`
    assert set(given["properties"]) == {"messages", "query", "session_id", "kb", "doc_ids",
                                        "content", "document_contents", "mode_type",
                                        "enable_web_search"}
    out = schemas["output_schema"]
    assert out, f"no output schema\n{server.log_tail()}"
    assert {"messages", "answer", "session", "detected_intent", "strategy", "sources"} <= set(
        out["properties"])
    owned = owned_classes()
    for name, schema in (("input", given), ("output", out)):
        missing = list(undescribed(schema, name, owned))
        assert not missing, f"fields without a description: {missing}"
    assert "LITERATURE_QA" in given["properties"]["mode_type"]["description"]

    context = schemas["context_schema"]
    assert context and context["properties"]["top_n"]["default"] == 10
    # Keys, the endpoint and the process-wide LLM limit are the server's, not a client's.
    assert not SERVER_FIELDS & set(context["properties"])
    assert not [k for k, v in context["properties"].items() if not v.get("description")]
    assert schemas["state_schema"], "Studio needs the state schema to show the state"

    nodes = {n["id"] for n in graph["nodes"]}
    assert {*FULL_CONTENT_NODES, *EXPANDED_NODES, "simple_interaction",
            "sub_question_generation", "plan_generation"} <= nodes, nodes
    # xray expands every subgraph, and draws no error handler or other loose node.
    assert not drawing_faults(nodes, [(e["source"], e["target"]) for e in graph["edges"]])
    assert {"document_summary", "execution", "option_reading"} <= set(subgraphs), sorted(subgraphs)
    served = [("scholarflow", schemas), *subgraphs.items()]
    for ns, sub in served:
        for kind in ("input_schema", "output_schema", "context_schema"):
            missing = list(undescribed(sub.get(kind), f"{ns}.{kind}", owned))
            assert not missing, f"fields without a description: {missing}"
        shown = {kind: secret_names(sub.get(kind)) for kind in (
            "input_schema", "output_schema", "state_schema", "config_schema", "context_schema")}
        assert not any(shown.values()), f"{ns} shows {shown}"
    # Studio shows a subgraph's schemas when one steps into it; pydantic on Python < 3.12
    # builds none from typing.TypedDict (the server only logs "Failed to get ... schema").
    blank = [f"{ns}.{kind}" for ns, sub in subgraphs.items()
             for kind in ("input_schema", "output_schema", "state_schema") if not sub.get(kind)]
    assert not blank, f"schemas Studio cannot show: {blank}\n{server.log_tail()}"
    assert "Failed to get" not in tail(server.log, 100_000)


async def test_an_assistants_context_applies_to_its_runs(server: Server, fake: Fake) -> None:
    await script(fake, rules=_qa_rules())
    async with sdk_client(server) as client:
        quiet = await client.assistants.create(graph_id=GRAPH_ID,
                                               context={"show_thinking": False})
    payload = {"query": QUESTION, "content": _paper()}
    default = await stream(server, await new_thread(server), input=payload)
    run = await stream(server, await new_thread(server), input=payload,
                       assistant=str(quiet["assistant_id"]))
    assert not run.failures(), run.failures()
    assert "thinking_start" in default.types()
    assert run.types()[-1] == "final_answer", run.types()
    assert not {"thinking_start", "thought_chunk", "thinking_end"} & set(run.types())


# --- secrets -----------------------------------------------------------------------------------


async def test_a_key_given_in_context_is_never_stored(server: Server, fake: Fake) -> None:
    """A key sent in a run's context reaches no thread state, checkpoint or run config.

    The graph is served with ServedContext, which has no key fields: the server drops
    them from the run's configuration (and so from checkpoint metadata), and the run
    uses the server's own OPENAI_API_KEY. One copy is out of our hands: the server
    keeps each run's request as it came (`run["kwargs"]["context"]`, and on disk in
    ./.langgraph_api for `langgraph dev`, the run table for `langgraph up`). So keys
    belong in the server's environment, never in a request.
    """
    await script(fake, rules=_qa_rules())
    async with sdk_client(server) as client:
        thread_id = await new_thread(server)
        run = await stream(
            server, thread_id, input={"query": QUESTION, "content": _paper()},
            # A dead endpoint too: had the run taken it, it would have failed (and with
            # another server there, that server would have received the server's key).
            context={"openai_api_key": SECRET, "search_engine_api_key": SEARCH_SECRET,
                     "openai_api_base": "http://127.0.0.1:9/v1", "show_thinking": True,
                     "max_concurrent_llm_calls": 1000},
            metadata={"purpose": "leak check"},
        )
        assert not run.failures(), f"{run.failures()}\n{server.log_tail()}"
        assert run.values.get("answer") == ANSWER, sorted(run.values)

        state = await client.threads.get_state(thread_id)
        history = await client.threads.get_history(thread_id, limit=100)
        stored_thread = await client.threads.get(thread_id)
        stored_run = await client.runs.get(thread_id, run.run_id)

    # The request as the server keeps it: not ours to filter (see the docstring).
    request_copy = stored_run["kwargs"].pop("context")
    assert request_copy.get("openai_api_key") == SECRET, "the run record changed shape"
    assert history, "no checkpoints were kept"
    llm_calls = (await fake_stats(fake))["requests"]
    for secret in (SECRET, SEARCH_SECRET):
        leaks = {
            "stream events": where(run.custom, secret),
            "streamed values": where([d for e, d in run.parts if e.startswith("values")],
                                     secret),
            "stream metadata": where([d for e, d in run.parts if e == "metadata"], secret),
            "threads.get_state": where(state, secret),
            "threads.get_history": where(history, secret),
            "threads.get": where(stored_thread, secret),
            "runs.get (config, metadata)": where(stored_run, secret),
            "server log": [line for line in tail(server.log, 100_000).splitlines()
                           if secret in line],
            "SCHOLARFLOW_HOME": files_containing(server.home, secret),
            "requests to the model": where(llm_calls, secret),
        }
        leaks = {place: paths for place, paths in leaks.items() if paths}
        assert not leaks, f"a key from the run context was stored: {json.dumps(leaks)[:2000]}"


# --- load --------------------------------------------------------------------------------------

async def test_twenty_concurrent_runs_share_one_llm_limit(server: Server, fake: Fake) -> None:
    """20 runs at once through the server all finish; LLM calls in flight never pass the cap.

    The limiter is process-wide in the server; the scripted model, in its own
    process, counts the calls in flight across all runs.
    """
    await script(fake, latency=LOAD_LATENCY, rules=[{"match": INTENT_RULE, "reply": INTENT_QA}])
    threads = [await new_thread(server) for _ in range(LOAD_RUNS)]
    questions = [f"Which attention pattern does run {i} find?" for i in range(LOAD_RUNS)]

    started = time.perf_counter()
    runs: list[Run] = await asyncio.gather(*(
        # Half the runs ask for another limit: ignored, the limit is the server's.
        # The question as agent-chat-ui sends it, a human message.
        stream(server, thread, input={"messages": [{"type": "human", "content": q}],
                                      "content": _paper()},
               context={"max_concurrent_llm_calls": 100} if i % 2 else {})
        for i, (thread, q) in enumerate(zip(threads, questions, strict=True))
    ))
    elapsed = time.perf_counter() - started
    stats = await fake_stats(fake)

    failed = {i: r.failures() for i, r in enumerate(runs) if r.failures()}
    assert not failed, f"{failed}\n{server.log_tail()}"
    for thread, question, run in zip(threads, questions, runs, strict=True):
        assert run.values["session"]["session_id"] == thread  # each run in its own thread
        finals = [e for e in run.custom if e["type"] == "final_answer"]
        assert len(finals) == 1, run.types()
        # The echo model answers with the run's own question: no run got another's reply.
        assert finals[0]["answer"] == f"ok: {question}", finals[0]["answer"]
    # The answer per run: a precise question is LITERATURE_QA by the rules, no intent call.
    assert stats["chat_calls"] == LOAD_RUNS
    assert stats["in_flight"] == 0
    assert stats["max_in_flight"] == LOAD_CAP, stats["max_in_flight"]
    ideal = stats["chat_calls"] * LOAD_LATENCY / LOAD_CAP
    print(f"\n{LOAD_RUNS} runs, cap {LOAD_CAP}: {elapsed:.2f}s, ideal {ideal:.2f}s "
          f"({elapsed / ideal:.2f}x), max in flight {stats['max_in_flight']}")
