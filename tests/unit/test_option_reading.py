"""A multiple-choice question over a library, read in words (nodes/option_reading.py).

The library is written for these tests: one paper states the finding, near-miss papers
share most of the question's words and state other values, so an answer taken from the
wrong paper would name a wrong option. The right option is listed fourth of five, so a
reading that depended on the options' order would not find it by symmetry.
"""

from __future__ import annotations

import uuid
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver

from scholarflow import Context, build_graph
from scholarflow.ingest.documents import document_from_text
from scholarflow.ingest.pipeline import add_document
from scholarflow.nodes.recall import MAX_LISTED_DOCUMENTS
from scholarflow.retrieval.kb_registry import open_knowledge_base
from tests.conftest import run_graph
from tests.support import FakeOpenAIServer

FINDING = ("Larvae of Zophobas atratus held at 42 °C survived for 6 hours, while adults "
           "died within 2 hours.")
SOURCE = f"""# Heat tolerance of the darkling beetle Zophobas atratus

## Methods

Larvae and adults were reared at 25 °C and moved to incubators at 38, 40 and 42 °C.
Survival was scored every 30 minutes.

## Results

{FINDING} At 38 °C both stages survived the whole 24-hour assay. Body mass did not
change the outcome.
"""
# Near misses: other beetles, the same assay, other durations.
NEAR = [
    ("Tenebrio molitor", "Larvae of Tenebrio molitor held at 42 °C survived for 12 hours."),
    ("Tribolium castaneum", "Larvae of Tribolium castaneum held at 42 °C survived for 4 hours."),
    ("Alphitobius diaperinus", "Adults of Alphitobius diaperinus held at 42 °C survived "
                               "for 2 hours."),
]
FILLER = ["soil nitrogen cycling", "coral bleaching", "wheat rust resistance",
          "bat echolocation", "lake ice phenology", "honeybee foraging", "moss desiccation",
          "octopus camouflage"]
STEM = "How long did larvae of Zophobas atratus survive at 42 °C?"
OPTIONS = ["2 hours", "12 hours", "4 hours", "6 hours",
           "Insufficient information to answer this question"]
QUESTION = STEM + "\n\nOptions:\n" + "\n".join(
    f"{letter}) {text}" for letter, text in zip("ABCDE", OPTIONS, strict=True))
FREE_TURN = "Reply with only the answer itself"  # the stem asked without its options
NAME_TURN = "states the same thing as that answer"  # its answer beside the options
PRESSED_TURN = "The passages answer this."  # the stem again after "not stated"


async def _library() -> None:
    kb = await open_knowledge_base("lib", create=True)
    papers = {"zophobas": SOURCE}
    for species, finding in NEAR:
        papers[species.split()[0].lower()] = (
            f"# Heat tolerance of {species}\n\n## Methods\n\nAnimals were moved from 25 °C "
            f"to incubators at 42 °C and scored every 30 minutes.\n\n## Results\n\n{finding} "
            "Survival fell with temperature.\n")
    for topic in FILLER:
        papers[topic.split()[0]] = (f"# A study of {topic}\n\n## Results\n\nWe measured "
                                    f"{topic} over three seasons and report its trends.\n")
    assert len(papers) > MAX_LISTED_DOCUMENTS  # a library: the stem is the search
    for doc_id, text in papers.items():
        await add_document(kb, document_from_text(text, doc_id=doc_id))


def _nodes(out: dict[str, Any]) -> list[str]:
    return [u["node"] for u in out["usage"]]


async def test_an_answer_named_over_the_nearest_sentences_takes_one_call(
    fake_llm: FakeOpenAIServer,
) -> None:
    await _library()
    fake_llm.configure(rules=[{"match": FREE_TURN, "role": "last_user", "reply": "6 hours [1]"}])
    out, events = await run_graph({"query": QUESTION, "kb": "lib"}, Context())
    assert out["error"] is None
    assert _nodes(out) == ["read_excerpt"]  # no planner, no second reading, no answer call
    request = fake_llm.stats().requests[0]["messages"]
    assert request[-1]["content"].startswith(f"{STEM}\n\n(Reply with only the answer")
    assert "12 hours" not in request[-1]["content"]  # the options are not shown
    assert "survived for 6 hours" in " ".join(request[0]["content"].split())
    first, *rest = out["answer"].split("\n\n")
    assert first.startswith("D) 6 hours")  # the option (the citation filter may cite it)
    assert rest[0].startswith("Passage [") and "survived for 6 hours" in rest[0]
    assert out["answer"].endswith('(Asked without the options, the model answered "6 hours" '
                                  'from the passages: this option.)')
    assert {s["doc_id"] for s in out["sources"]} == {"zophobas"}
    said = [e["content"] for e in events
            if e["type"] == "thought_chunk" and e.get("node") == "read_excerpt"]
    assert said == ['Asked without its options, over the sentences nearest it and those '
                    'naming an option, the model answered "6 hours": option D) 6 hours.']


async def test_the_whole_passages_are_read_when_the_sentences_name_no_option(
    fake_llm: FakeOpenAIServer,
) -> None:
    await _library()
    fake_llm.configure(rules=[
        {"match": FREE_TURN, "role": "last_user", "reply": "not stated", "times": 1},
        {"match": FREE_TURN, "role": "last_user", "reply": "6 hours"}])
    out, _ = await run_graph({"query": QUESTION, "kb": "lib"}, Context())
    assert _nodes(out) == ["read_excerpt", "read_passages"]
    first, second = (r["messages"][0]["content"] for r in fake_llm.stats().requests)
    assert len(first) < len(second)  # the nearest sentences, then the whole passages
    assert out["answer"].startswith("D) 6 hours")
    assert [r["step"] for r in out["option_readings"]] == ["excerpt", "passages"]
    assert [r["letter"] for r in out["option_readings"]] == [None, "D"]


async def test_an_answer_naming_no_option_is_insufficient_without_a_guess(
    fake_llm: FakeOpenAIServer,
) -> None:
    await _library()
    fake_llm.configure(rules=[
        {"match": FREE_TURN, "role": "last_user", "reply": "until the end of the assay"},
        {"match": NAME_TURN, "role": "last_user", "reply": "none"}])
    out, _ = await run_graph({"query": QUESTION, "kb": "lib"}, Context())
    assert out["error"] is None
    # The model, shown its answer beside the options, says none states it: no guess.
    assert _nodes(out) == ["read_excerpt", "read_passages", "name_option"]
    assert [r["letter"] for r in out["option_readings"]] == [None, None, None]
    assert out["answer"] == (
        "E) Insufficient information to answer this question\n\nInsufficient information: "
        "the passages do not settle this question. Asked without the options, the model "
        "answered \"until the end of the assay\", which names none of them.")
    assert out["sources"] == []


async def test_an_answer_in_other_words_is_named_by_the_model_beside_the_options(
    fake_llm: FakeOpenAIServer,
) -> None:
    await _library()
    fake_llm.configure(rules=[
        {"match": FREE_TURN, "role": "last_user", "reply": "six hours at 42 degrees"},
        {"match": NAME_TURN, "role": "last_user", "reply": "6 hours"}])
    out, events = await run_graph({"query": QUESTION, "kb": "lib"}, Context())
    assert out["error"] is None
    assert _nodes(out) == ["read_excerpt", "read_passages", "name_option"]
    shown = fake_llm.stats().requests[-1]["messages"][-1]["content"]
    assert '"six hours at 42 degrees"' in shown and "- 12 hours" in shown
    assert "Insufficient" not in shown and "D)" not in shown  # no letters, no way out
    assert [r["step"] for r in out["option_readings"]] == ["excerpt", "passages", "named"]
    assert out["answer"].startswith("D) 6 hours")
    # The reader is told the model, not the words, matched its answer to the option.
    assert out["answer"].endswith('(Asked without the options, the model answered "six hours '
                                  'at 42 degrees" from the passages; shown that answer beside '
                                  'the options, it said this option states it.)')
    said = [e["content"] for e in events
            if e["type"] == "thought_chunk" and e.get("node") == "name_option"]
    assert said == ['Shown its answer "six hours at 42 degrees" beside the options, the model '
                    'replied "6 hours": option D) 6 hours.']


async def test_a_named_option_without_the_answers_number_is_refused(
    fake_llm: FakeOpenAIServer,
) -> None:
    await _library()
    fake_llm.configure(rules=[
        {"match": FREE_TURN, "role": "last_user", "reply": "8 hours"},
        {"match": NAME_TURN, "role": "last_user", "reply": "6 hours"}])
    out, _ = await run_graph({"query": QUESTION, "kb": "lib"}, Context())
    assert _nodes(out) == ["read_excerpt", "read_passages", "name_option"]
    assert out["answer"].startswith("E) Insufficient information")


async def test_no_naming_call_after_not_stated_or_with_naming_off(
    fake_llm: FakeOpenAIServer,
) -> None:
    await _library()
    fake_llm.configure(rules=[{"match": FREE_TURN, "role": "last_user", "reply": "not stated"}])
    out, _ = await run_graph({"query": QUESTION, "kb": "lib"}, Context())
    assert _nodes(out) == ["read_excerpt", "read_passages", "read_pressed"]
    assert out["answer"].startswith("E) Insufficient information")
    fake_llm.configure(rules=[{"match": FREE_TURN, "role": "last_user", "reply": "six hours"}])
    out, _ = await run_graph({"query": QUESTION, "kb": "lib"}, Context(option_naming=False))
    assert _nodes(out) == ["read_excerpt", "read_passages"]
    assert out["answer"].startswith("E) Insufficient information")


async def test_after_readings_saying_not_stated_a_pressed_reading_may_name_an_option(
    fake_llm: FakeOpenAIServer,
) -> None:
    await _library()
    fake_llm.configure(rules=[
        {"match": PRESSED_TURN, "role": "last_user", "reply": "6 hours [1]"},
        {"match": FREE_TURN, "role": "last_user", "reply": "not stated"}])
    out, events = await run_graph({"query": QUESTION, "kb": "lib"}, Context())
    assert out["error"] is None
    assert _nodes(out) == ["read_excerpt", "read_passages", "read_pressed"]
    first, _, pressed = (r["messages"] for r in fake_llm.stats().requests)
    assert pressed[0]["content"] == first[0]["content"]  # the short excerpt again
    assert "not stated" not in pressed[-1]["content"]  # no way out offered
    assert "12 hours" not in pressed[-1]["content"]  # and still no options shown
    assert [r["step"] for r in out["option_readings"]] == ["excerpt", "passages", "pressed"]
    first_line, quoted, *_ = out["answer"].split("\n\n")
    assert first_line.startswith("D) 6 hours") and "survived for 6 hours" in quoted
    assert out["answer"].endswith('(Asked without the options, the model first said the '
                                  'passages do not say; told that they answer it, it '
                                  'answered "6 hours": this option, which the sentence above '
                                  'names.)')
    said = [e["content"] for e in events
            if e["type"] == "thought_chunk" and e.get("node") == "read_pressed"]
    assert said == ['Told the passages answer it, the model answered "6 hours": option D) '
                    '6 hours, which a passage sentence names.']
    # Off: the readings' "not stated" stands.
    out, _ = await run_graph({"query": QUESTION, "kb": "lib"}, Context(option_pressing=False))
    assert _nodes(out) == ["read_excerpt", "read_passages"]
    assert out["answer"].startswith("E) Insufficient information")


async def test_a_pressed_pick_of_an_option_no_sentence_names_is_refused(
    fake_llm: FakeOpenAIServer,
) -> None:
    await _library()
    # "9 hours" is an option no passage sentence states: pressure alone does not pick it.
    question = QUESTION.replace("A) 2 hours", "A) 9 hours")
    fake_llm.configure(rules=[
        {"match": PRESSED_TURN, "role": "last_user", "reply": "9 hours"},
        {"match": FREE_TURN, "role": "last_user", "reply": "not stated"}])
    out, events = await run_graph({"query": question, "kb": "lib"}, Context())
    assert _nodes(out) == ["read_excerpt", "read_passages", "read_pressed"]
    assert [r["letter"] for r in out["option_readings"]] == [None, None, None]
    assert out["answer"].startswith("E) Insufficient information")
    said = [e["content"] for e in events
            if e["type"] == "thought_chunk" and e.get("node") == "read_pressed"]
    assert said == ['Told the passages answer it, the model answered "9 hours": not option '
                    'A) 9 hours, which no passage sentence names.']


async def test_with_multiple_choice_off_the_model_writes_the_answer_seeing_the_options(
    fake_llm: FakeOpenAIServer,
) -> None:
    await _library()
    fake_llm.configure(rules=[{"match": "write the letter and text", "role": "last_user",
                               "reply": "D) 6 hours. Larvae survived for 6 hours [1]."}])
    out, _ = await run_graph({"query": QUESTION, "kb": "lib"},
                             Context(multiple_choice=False))
    assert _nodes(out) == ["answer_generation"]
    assert out["answer"].startswith("D) 6 hours")  # as the model wrote it, cited
    assert out["option_readings"] == []


async def test_a_chat_ui_sees_only_the_answer_not_the_readings(
    fake_llm: FakeOpenAIServer,
) -> None:
    """`messages` input and stream mode, as agent-chat-ui drives the server: the readings'
    calls never reach the chat; the answer is the one AI message the thread keeps."""
    await _library()
    fake_llm.configure(rules=[{"match": FREE_TURN, "role": "last_user", "reply": "6 hours"}])
    graph = build_graph(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": uuid.uuid4().hex}}
    streamed: list[Any] = []
    async for message, _meta in graph.astream(
            {"messages": [{"role": "user", "content": QUESTION}], "kb": "lib"},
            config, context=Context(), stream_mode="messages"):
        streamed.append(message)
    kept = (await graph.aget_state(config)).values["messages"]
    assert [m.type for m in kept] == ["human", "ai"]
    assert kept[-1].content.startswith("D) 6 hours")
    assert [(m.id, m.content) for m in streamed] == [(kept[-1].id, kept[-1].content)]


async def test_an_answer_of_citations_alone_is_replaced_by_the_cited_passages_words(
    fake_llm: FakeOpenAIServer,
) -> None:
    """Asked without options, a small model may reply with citation markers only: the
    reader gets the sentence of the cited passage nearest the question, cited."""
    await _library()
    fake_llm.configure(rules=[{"match": "precise question", "role": "system",
                               "reply": "[1][2]"}])
    out, _ = await run_graph({"query": STEM, "kb": "lib", "mode_type": "LITERATURE_QA"},
                             Context())
    assert out["error"] is None
    assert "[1][2]" not in out["answer"]
    assert out["answer"].startswith("Passage [")
    assert "survived for 6 hours" in out["answer"]
    assert [s["doc_id"] for s in out["sources"]][:1] == ["zophobas"]
