"""Abbreviations the passages define (nodes/abbreviations.py) and answers read through them."""

from __future__ import annotations

import pytest

from scholarflow import Context
from scholarflow.ingest.documents import document_from_text
from scholarflow.ingest.pipeline import add_document
from scholarflow.nodes.abbreviations import defined_abbreviations, spelled_other_ways
from scholarflow.nodes.option_free import free_option
from scholarflow.nodes.options import split_options
from scholarflow.nodes.recall import MAX_LISTED_DOCUMENTS
from scholarflow.retrieval.kb_registry import open_knowledge_base
from tests.conftest import run_graph
from tests.support import FakeOpenAIServer

PASSAGES = [
    "Mice were given exogenous lipopolysaccharide (LPS) daily. Later, LPS raised the "
    "count of lung nodules (Fig. 2) in all animals (n = 5).",
    "We measured the GC content of the coding sequence (GCcds) and interleukin 6 (IL-6).",
    "Carboxylesterase (CXE) genes were expanded.",
]


def test_definitions_are_the_words_before_a_parenthesised_short_form_holding_its_letters(
) -> None:
    assert defined_abbreviations(PASSAGES) == {
        "lps": "lipopolysaccharide", "gccds": "GC content of the coding sequence",
        "il-6": "interleukin 6", "cxe": "Carboxylesterase"}


@pytest.mark.parametrize("text", [
    "The effect was large (Fig. 2).",           # no letters of "Fig" in order before it
    "Ten animals were used (n = 5).",           # not a short form
    "The cells were stained (DAPI).",           # letters not in the words before
    "A long phrase about nothing at all (ABCDEFGHIJK).",  # too long
    "x (AB) x (AB) x (AB)",                    # the words around an earlier short form
])
def test_parentheses_that_define_nothing_are_left_out(text: str) -> None:
    assert defined_abbreviations([text]) == {}


def test_a_short_form_defined_two_ways_is_left_out() -> None:
    assert defined_abbreviations(["heat shock protein (HSP) and high salt plate (HSP)"]) == {}


def test_an_answer_is_written_with_short_forms_spelled_out_then_with_long_forms_shortened(
) -> None:
    defined = defined_abbreviations(PASSAGES)
    assert spelled_other_ways("LPS", defined) == ["lipopolysaccharide"]
    assert spelled_other_ways("IL-6 signalling", defined) == ["interleukin 6 signalling"]
    assert spelled_other_ways("carboxylesterase genes", defined) == ["cxe genes"]
    assert spelled_other_ways("not stated", defined) == []


def test_an_answer_in_the_other_form_names_the_option_through_the_definitions() -> None:
    asked = split_options("Which component raised metastasis?\nA) lipoprotein\n"
                          "B) lipopolysaccharide\nC) teichoic acid\nD) Insufficient information")
    defined = defined_abbreviations(PASSAGES)
    assert free_option("LPS", asked) is None  # by its words alone, no option
    assert [free_option(way, asked) for way in spelled_other_ways("LPS", defined)] == ["B"]


async def test_a_reading_in_the_short_form_names_the_option_spelled_out(
    fake_llm: FakeOpenAIServer,
) -> None:
    kb = await open_knowledge_base("lib", create=True)
    papers = {"gut": (
        "# Gut bacteria and breast cancer metastasis\n\n## Results\n\nMice bearing 4T1 "
        "tumours were given exogenous lipopolysaccharide (LPS) or saline. Administration "
        "of LPS increased lung metastasis formation through the prostaglandin E2 receptor "
        "EP2.\n")}
    for topic in ("soil nitrogen cycling", "coral bleaching", "wheat rust resistance",
                  "bat echolocation", "lake ice phenology", "honeybee foraging",
                  "moss desiccation", "octopus camouflage", "glacier retreat", "tea tannins",
                  "owl hearing"):
        papers[topic.split()[0]] = (f"# A study of {topic}\n\n## Results\n\nWe measured "
                                    f"{topic} over three seasons and report its trends.\n")
    assert len(papers) > MAX_LISTED_DOCUMENTS  # a library: the stem is the search
    for doc_id, text in papers.items():
        await add_document(kb, document_from_text(text, doc_id=doc_id))
    question = ("Which bacterial cell wall component increased lung metastasis through the "
                "prostaglandin E2 receptor EP2?\n\nOptions:\nA) lipoprotein\n"
                "B) lipopolysaccharide\nC) teichoic acid\n"
                "D) Insufficient information to answer this question")
    fake_llm.configure(rules=[{"match": "Reply with only the answer itself",
                               "role": "last_user", "reply": "LPS [1]"}])
    out, _ = await run_graph({"query": question, "kb": "lib"}, Context())
    assert out["error"] is None
    assert [u["node"] for u in out["usage"]] == ["read_excerpt"]  # no naming call needed
    assert out["answer"].startswith("B) lipopolysaccharide")
    assert [(r["said"], r["letter"]) for r in out["option_readings"]] == [("LPS", "B")]
