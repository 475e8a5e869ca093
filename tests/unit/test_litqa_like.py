"""A LitQA2-like library: a precise multiple-choice question over many small papers.

The key passage of the source paper must reach the answer prompt, found by
the stem of the question (its options are answer candidates, not search
terms), with the planner shown what a first search found rather than a
catalogue of titles. A question no passage speaks to is answered
"insufficient" (nodes/evidence.py `support` under SUPPORT_FLOOR), naming the
question's own option for it, with no model call to guess and no sources; so
is one the model cannot settle: the option its first token ranks first changes
when the options' order is reversed (nodes/option_pick.py).
"""

from __future__ import annotations

import uuid
from typing import Any

from scholarflow import Context, build_graph
from scholarflow.ingest.documents import document_from_text
from scholarflow.ingest.pipeline import add_document
from scholarflow.nodes.candidates import CANDIDATE_DOCUMENTS
from scholarflow.nodes.evidence import support
from scholarflow.nodes.options import insufficient_option, split_options
from scholarflow.nodes.recall import MAX_LISTED_DOCUMENTS
from scholarflow.prompts import OPTION_PICK_REMINDER
from scholarflow.retrieval.kb_registry import open_knowledge_base
from tests.conftest import run_graph
from tests.support import FakeOpenAIServer

KEY_PASSAGE = ("A large oligosaccharide density was observed in the cryo-EM map of Nav1.6, "
               "attaching to Asn326. Clear branches were resolved in this glycan density, "
               "allowing us to trace nine monosaccharides unambiguously.")
SOURCE = f"""# Cryo-EM structure of the human sodium channel Nav1.6

## Introduction

Voltage-gated sodium channels initiate action potentials in neurons. Nav1.6 is the
main isoform at the axon initial segment, and its mutations cause epilepsy.

## Methods

The channel was expressed in HEK293 cells, purified in detergent and imaged on a
Titan Krios microscope. Particles were classified in cryoSPARC; the map reached 3.1 A.

## Results

The pore domain adopts the inactivated state seen in other isoforms, and the
voltage sensors are all in the up position. {KEY_PASSAGE} Two more glycosylation
sites carry short densities that fit two sugars each. The selectivity filter
holds the DEKA motif, with a sodium ion resolved near Lys1422.
"""
# Distractors: other papers of the same library, sharing some words with the question.
TOPICS = [
    ("potassium channel gating in cardiac myocytes", "Kv7.1 channels open slowly"),
    ("calcium imaging of cortical neurons", "GCaMP signals track spikes in layer 2/3"),
    ("protein glycosylation in yeast", "N-linked glycans are trimmed in the ER"),
    ("cryo-EM of ribosome assembly", "the map shows the 60S subunit in three states"),
    ("DNA methylation of introns and exons", "methylation is similar in introns and exons"),
    ("antibiotic resistance of Acinetobacter", "strains evolved resistance to colistin"),
    ("CRISPR screens in T cells", "knockout of PTPN2 enhanced T cell killing"),
    ("zebrafish fin regeneration", "blastema cells proliferate within two days"),
    ("plant root microbiome", "Bacillus strains colonise the root surface"),
    ("insulin secretion in beta cells", "glucose raises ATP and closes KATP channels"),
    ("sleep and memory in mice", "slow waves coordinate hippocampal replay"),
]
OPTIONS = ["Trp324", "Leu288", "Asn326", "Phe302",
           "Insufficient information to answer this question"]


PICK_TURN = "Reply with only the letter"  # the hidden calls that read the answer's letter
FREE_TURN = "Reply with only the answer itself"  # the stem alone, before the letters


def pick_rules(first: dict[str, float], reversed_: dict[str, float], free: str = "not stated"
               ) -> list[dict[str, Any]]:
    """The hidden calls' replies: the stem alone after the sentences nearest it and after
    the passages (`free`), then the letter calls' first tokens: as asked (its turn lists
    the options the passages name) and with the options reversed ("A) Insufficient ...")."""
    return [{"match": FREE_TURN, "role": "last_user", "reply": free},
            {"match": r"A\) Insufficient information.*Options the passages name",
             "role": "last_user",
             "reply": max(reversed_, key=lambda k: reversed_[k]), "logprobs": reversed_},
            {"match": "Options the passages name", "role": "last_user",
             "reply": max(first, key=lambda k: first[k]), "logprobs": first}]
STEM = ("At which amino acid position is a large oligosaccharide density observed in "
        "the cryo-EM map of Nav1.6?")


def litqa_question(stem: str) -> str:
    lines = [f"{letter}) {text}" for letter, text in zip("ABCDE", OPTIONS, strict=True)]
    return f"{stem}\n\nOptions:\n" + "\n".join(lines) + "\n\nAnswer with the letter."


async def _library() -> None:
    kb = await open_knowledge_base("lib", create=True)
    papers = {"nav16": SOURCE}
    for i, (topic, finding) in enumerate(TOPICS):
        papers[f"paper{i}"] = (
            f"# A study of {topic}\n\n## Results\n\nWe report that {finding}. "
            f"The density of the signal was observed in every sample of {topic}.\n\n"
            f"## Discussion\n\nThese results on {topic} agree with earlier work.\n")
    assert len(papers) > MAX_LISTED_DOCUMENTS  # a library: the planner searches first
    for doc_id, text in papers.items():
        await add_document(kb, document_from_text(text, doc_id=doc_id))


def _prompts(server: FakeOpenAIServer) -> list[str]:
    return [r["messages"][0]["content"] for r in server.stats().requests]


def _answer_prompts(server: FakeOpenAIServer) -> list[str]:
    return [p for p in _prompts(server) if "precise question" in p]


async def test_the_key_passage_reaches_the_answer_prompt(fake_llm: FakeOpenAIServer) -> None:
    await _library()
    # The model picks an option and cites nothing (as small models do): the answer's
    # sources still name the passage that supports it (nodes/attribution.py).
    # The model's first token is the letter C, at 45%: under SURE_SHARE, so the options
    # are read reversed too, where Asn326 is still C (the middle of five) and first
    # (nodes/option_pick.py).
    fake_llm.configure(rules=pick_rules({"C": 0.45, "A": 0.35, "E": 0.15, "The": 0.05},
                                        {"C": 0.6, "A": 0.4}))
    stem = STEM
    out, _ = await run_graph({"query": litqa_question(stem), "kb": "lib"}, Context())
    assert out["error"] is None
    # A question with options is a precise question: the rules say so, no LLM call.
    assert (out["detected_intent"], out["intent_decided_by"]) == ("LITERATURE_QA", "rules")
    # No planner call (the stem is the search): the stem alone after the sentences nearest
    # it and after the passages ("not stated"), the one-token readings over the passages,
    # as asked and reversed.
    assert len(fake_llm.stats().requests) == 4
    assert not any("sub_questions" in p for p in _prompts(fake_llm))
    # Recall searched the library by the stem alone, and its best paper by the stem and
    # the candidate answers (not "Insufficient information ...").
    plan = out["plan"]
    assert [s["queries"][0] for s in plan[:2]] == [stem, f"{stem} {' '.join(OPTIONS[:4])}"]
    assert [s["doc_id"] for s in plan[:2]] == [None, "nav16"]
    assert not any("Leu288" in q for s in plan if s["doc_id"] is None for q in s["queries"])
    # The stem alone after the sentences nearest it (short: first), then after the
    # passages, then the letter readings, the reversed order too: one after the other,
    # so a server caching one prefix reads the passages once.
    requests = [r["messages"] for r in fake_llm.stats().requests]
    assert [len(m) for m in requests] == [2, 2, 2, 2]
    excerpt_prompt, free_prompt, answer_prompt, reversed_prompt = (
        m[0]["content"] for m in requests)
    assert free_prompt == reversed_prompt == answer_prompt
    assert len(excerpt_prompt) < len(answer_prompt)
    assert "attaching to Asn326" in " ".join(excerpt_prompt.split())
    for turn in (requests[0][-1]["content"], requests[1][-1]["content"]):
        assert turn.startswith(f"{STEM}\n\n(Reply with only the answer")
        assert "Trp324" not in turn  # no option: the stem alone
    assert "Options:\nA) Insufficient information" in requests[3][-1]["content"]
    assert KEY_PASSAGE.split(",")[0] in " ".join(answer_prompt.split())
    # The best passage is listed last, next to the question.
    last = answer_prompt[answer_prompt.rindex("<chunk "):]
    assert answer_prompt.count("<chunk ") > 1 and KEY_PASSAGE.split(",")[0] in " ".join(
        last.split())
    # The option, the passage sentence that names it, cited, and the model's share.
    assert out["answer"].startswith("C) Asn326\n\nPassage [")
    assert "attaching to Asn326." in out["answer"]
    assert "with them as asked it gave it 47% of its choice" in out["answer"]
    assert {s["doc_id"] for s in out["sources"]} == {"nav16"}
    # The question's turn lists where the passages name each option (option_evidence.py).
    turn = requests[2][-1]["content"]
    assert "Options the passages name:" in turn
    assert "- C) Asn326: passage [" in turn and "attaching to Asn326." in turn
    assert "Trp324:" not in turn  # named by no passage: not listed
    assert PICK_TURN in OPTION_PICK_REMINDER.format()


async def test_over_a_library_the_planner_sees_what_a_first_search_found(
    fake_llm: FakeOpenAIServer,
) -> None:
    """A question without options is planned, from the candidates, not a catalogue."""
    await _library()
    out, _ = await run_graph({"query": STEM, "kb": "lib", "mode_type": "LITERATURE_QA"},
                             Context())
    assert out["error"] is None
    planner = next(p for p in _prompts(fake_llm) if "sub_questions" in p)
    assert planner.index("Cryo-EM structure of the human sodium channel") < min(
        planner.index(t) if t in planner else len(planner) for t, _ in TOPICS)
    assert "Asn326" in planner  # the best sentence of the best passage is shown
    assert planner.count("- id ") == CANDIDATE_DOCUMENTS < len(TOPICS) + 1


async def test_a_chat_ui_gets_the_picked_answer_as_one_message(
    fake_llm: FakeOpenAIServer,
) -> None:
    """`messages` input and stream mode, as agent-chat-ui drives the server: the answer
    written from the pick is the one AI message the thread keeps; the hidden letter call's
    token never reaches the chat."""
    from langgraph.checkpoint.memory import InMemorySaver

    await _library()
    fake_llm.configure(rules=pick_rules({"C": 0.8, "A": 0.1, "E": 0.1}, {"C": 0.9}))
    graph = build_graph(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": uuid.uuid4().hex}}
    streamed: list[Any] = []
    async for message, _meta in graph.astream(
            {"messages": [{"role": "user", "content": litqa_question(STEM)}], "kb": "lib"},
            config, context=Context(), stream_mode="messages"):
        streamed.append(message)
    kept = (await graph.aget_state(config)).values["messages"]
    assert [m.type for m in kept] == ["human", "ai"]
    assert kept[-1].content.startswith("C) Asn326\n\nPassage [")
    assert [(m.id, m.content) for m in streamed] == [(kept[-1].id, kept[-1].content)]


async def test_an_answer_that_changes_with_the_order_is_answered_insufficient(
    fake_llm: FakeOpenAIServer,
) -> None:
    await _library()
    # As asked the model ranks C (Asn326) first, under SURE_SHARE; reversed, B (Phe302,
    # D as asked).
    fake_llm.configure(rules=pick_rules({"C": 0.45, "A": 0.4, "E": 0.15},
                                        {"B": 0.5, "C": 0.4, "A": 0.1}))
    out, _ = await run_graph({"query": litqa_question(STEM), "kb": "lib"}, Context())
    assert out["error"] is None
    assert out["answer"] == (
        "E) Insufficient information to answer this question\n\nInsufficient information: "
        "the passages do not settle this question. The model's choice changed with the "
        "order of the options: C) Asn326 as asked, D) Phe302 with the order reversed.")
    assert out["sources"] == []  # drawn from no passage
    assert len(fake_llm.stats().requests) == 4  # no further call to write a guess


async def test_an_answer_in_words_settles_what_the_letters_would_not(
    fake_llm: FakeOpenAIServer,
) -> None:
    await _library()
    # The letters change with the order (answered "insufficient" above); asked without the
    # options, the model answers "Asn326" from the passages: option C, cited, one call.
    fake_llm.configure(rules=pick_rules({"C": 0.45, "A": 0.4, "E": 0.15},
                                        {"B": 0.5, "C": 0.4, "A": 0.1}, free="Asn326 [2]"))
    out, _ = await run_graph({"query": litqa_question(STEM), "kb": "lib"}, Context())
    assert out["error"] is None
    assert out["answer"].startswith("C) Asn326\n\nPassage [")
    assert out["answer"].endswith('(Asked without the options, the model answered "Asn326" '
                                  'from the passages: this option.)')
    assert {s["doc_id"] for s in out["sources"]} == {"nav16"}
    assert len(fake_llm.stats().requests) == 1


async def test_a_model_that_picks_the_insufficient_option_says_so(
    fake_llm: FakeOpenAIServer,
) -> None:
    await _library()
    fake_llm.configure(rules=pick_rules({"E": 0.9, "C": 0.1}, {"A": 0.8, "C": 0.2}))
    out, _ = await run_graph({"query": litqa_question(STEM), "kb": "lib"}, Context())
    assert out["answer"] == ("E) Insufficient information to answer this question\n\n"
                             "Insufficient information: the model found no passage that "
                             "answers this question (90% of its choice).")
    assert out["sources"] == []


async def test_without_letter_probabilities_the_model_writes_the_answer(
    fake_llm: FakeOpenAIServer,
) -> None:
    await _library()
    # A server that gives no alternatives, or a first token that is no letter: the
    # answer is streamed by the model as before, with its sources.
    fake_llm.configure(rules=[
        {"match": FREE_TURN, "role": "last_user", "reply": "not stated"},
        {"match": PICK_TURN, "role": "user", "reply": "The answer is C."},
        {"match": "precise question", "role": "system",
         "reply": "C) Asn326. The oligosaccharide density in the cryo-EM map of Nav1.6 "
                  "attaches to Asn326."}])
    out, _ = await run_graph({"query": litqa_question(STEM), "kb": "lib"}, Context())
    assert out["error"] is None
    assert out["answer"].startswith("C) Asn326. The oligosaccharide density")
    assert {s["doc_id"] for s in out["sources"]} == {"nav16"}
    # The stem alone after the sentences nearest it and after the passages ("not
    # stated"), the letter after them (no letter), the answer.
    assert len(fake_llm.stats().requests) == 4


async def test_a_question_no_passage_speaks_to_is_insufficient_without_a_guess(
    fake_llm: FakeOpenAIServer,
) -> None:
    await _library()
    stem = ("Which residue anchors the glycan of the chloride transporter KCC2 in "
            "hippocampal interneurons after status epilepticus?")
    out, _ = await run_graph({"query": litqa_question(stem), "kb": "lib",
                              "mode_type": "LITERATURE_QA"}, Context())
    assert out["error"] is None
    assert out["recalled"]  # recall found passages; none of them answers the question
    assert out["answer"].startswith("E) Insufficient information to answer this question")
    assert out["sources"] == []
    assert _answer_prompts(fake_llm) == []  # the model was not asked to guess


def test_support_is_the_best_share_of_the_question_words_one_passage_holds() -> None:
    def passage(text: str) -> Any:
        return {"text": text}

    question = "Which antibiotic did Acinetobacter lwoffii evolve resistance to?"
    # antibiotic, acinetobacter, lwoffii, evolve, resistance: 5 words of 3+ characters
    assert support(question, [passage("Acinetobacter lwoffii evolved resistance to colistin "
                                      "and no other antibiotic")]) == 0.8  # not "evolve"
    assert support(question, [passage("Acinetobacter grows"),
                              passage("resistance to antibiotic")]) == 0.4  # one passage's
    assert support(question, []) == 0.0
    assert support("Is it?", [passage("anything")]) == 1.0  # no word to check


def test_support_does_not_judge_a_question_against_passages_in_another_language() -> None:
    # An English question shares no word with the Chinese passage that answers it
    # (cross-language recall found it by meaning): the model decides, not a word count.
    question = "Which antibiotic did Acinetobacter lwoffii evolve resistance to?"
    chinese = {"text": "鲁氏不动杆菌对多黏菌素产生了耐药性。"}
    assert support(question, [chinese]) == 1.0
    english = {"text": "Acinetobacter grows"}
    assert support(question, [chinese, english]) == 0.2


def test_options_are_split_from_the_stem() -> None:
    asked = split_options(litqa_question("Where is the density?"))
    assert asked.stem == "Where is the density?"
    assert asked.options == tuple(OPTIONS)
    assert insufficient_option(asked) == ("E", OPTIONS[4])
    inline = split_options("Which one? (A) alpha helix (B) beta sheet (C) not enough data")
    assert (inline.stem, inline.options) == ("Which one?", ("alpha helix", "beta sheet",
                                                            "not enough data"))
    assert insufficient_option(inline) == ("C", "not enough data")
    # A numbered list is part of the question unless headed as options.
    listed = "Compare these:\n1. sparse attention\n2. linear attention"
    assert split_options(listed).stem == listed
    assert split_options("What is attention?").options == ()


def test_only_a_question_with_options_gets_the_options_reminder() -> None:
    from scholarflow.nodes.common import question_turn
    from scholarflow.prompts import OPTIONS_REMINDER

    reminder = OPTIONS_REMINDER.format()
    assert reminder in question_turn("Which dose?\nA) 1 mg\nB) 2 mg\nC) Insufficient information")
    assert reminder not in question_turn("Which dose did they use?")


def test_option_evidence_quotes_the_sentence_naming_each_option() -> None:
    from scholarflow.nodes.option_evidence import format_option_evidence, option_evidence

    asked = split_options("Which residues bind DNA-PK?\nA) residues 320-343\n"
                          "B) residues 344–360\nC) Insufficient information")
    passages: list[Any] = [
        {"text": "Residues 320 and 343 were mutated (Fig. 2). No effect was seen."},
        {"text": "Binding to DNA-PK was lost in the mutant (Fig. 6C). A deletion of amino "
                 "acids 344-360 reduced binding to DNA-PK (Fig. 6C), as predicted."},
    ]
    found = option_evidence(asked, passages)
    assert [(f.letter, f.passage) for f in found] == [("A", None), ("B", 2)]  # not C
    # The sentence sharing most of the question's words, whole: "Fig." ends none.
    assert found[1].sentence == ("A deletion of amino acids 344-360 reduced binding to "
                                 "DNA-PK (Fig. 6C), as predicted.")
    # One number is not enough ("4" of "4-fold" is in "Fig. 4"), nor is "No".
    fold = split_options("How much more sensitive?\nA) 4-fold\nB) 5-fold\nC) No")
    sentences: list[Any] = [{"text": "Mutants were about 5-fold more sensitive (Fig. 4). No "
                                     "growth was seen."}]
    assert [f.passage for f in option_evidence(fold, sentences)] == [None, 1, None]
    assert format_option_evidence(found) == (
        '- B) residues 344–360: passage [2] says "A deletion of amino acids 344-360 '
        'reduced binding to DNA-PK (Fig. 6C), as predicted."')
    # Options the passages paraphrase are named by none: no list at all.
    paraphrased = split_options("How do they differ?\nA) Introns have more methylation\n"
                                "B) There are no significant differences")
    assert format_option_evidence(option_evidence(paraphrased, passages)) == ""


def test_an_options_prompt_keeps_the_best_passages_and_those_naming_an_option() -> None:
    from scholarflow.nodes.option_evidence import OPTION_PASSAGES, option_passages

    asked = split_options("Which residue carries the glycan?\nA) Asn326\nB) Leu288\n"
                          "C) Insufficient information")
    best: list[Any] = [{"text": f"Passage {i} on the channel's glycans."}
                       for i in range(OPTION_PASSAGES)]
    naming: Any = {"text": "The density attaches to Asn326 (Fig. 2C)."}
    neither: Any = {"text": "Insufficient information was found on other sites."}
    later: Any = {"text": "Leu288 lines the pore."}
    kept = option_passages(asked, [*best, neither, naming, later])
    # The best by rank, then the rest that name an option, in their order; the
    # "insufficient" option names no passage.
    assert kept == [*best, naming, later]
    assert option_passages(asked, best[:3]) == best[:3]


async def test_a_comment_on_the_plan_of_a_multiple_choice_question_is_planned(
    fake_llm: FakeOpenAIServer,
) -> None:
    """No planner call for the options over a library, until a person asks for another
    plan: the comment reaches the planner, and its question joins the stem's searches."""
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.types import Command

    await _library()
    fake_llm.configure(rules=[
        {"match": "A person reviewed the search questions",
         "reply": '{"sub_questions": [{"question": "glycosylation sites of Nav1.6"}]}'},
        *pick_rules({"C": 0.8, "A": 0.2}, {"C": 0.9})])
    graph = build_graph(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": uuid.uuid4().hex}}
    ctx = Context(review_plan=True)
    out = await graph.ainvoke({"query": litqa_question(STEM), "kb": "lib"}, config,
                              context=ctx)
    assert out["__interrupt__"][0].value["sub_questions"][0] == STEM
    assert fake_llm.stats().requests == []  # the stem is the search: nothing planned
    out = await graph.ainvoke(Command(resume={"action": "feedback",
                                              "feedback": "Look for the glycans."}),
                              config, context=ctx)
    (planner,) = [p for p in _prompts(fake_llm) if "sub_questions" in p]
    assert "Look for the glycans." in planner
    assert "glycosylation sites of Nav1.6" in out["__interrupt__"][0].value["sub_questions"]
    out = await graph.ainvoke(Command(resume=True), config, context=ctx)
    assert out["answer"].startswith("C) Asn326")
