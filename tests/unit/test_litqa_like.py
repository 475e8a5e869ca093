"""A LitQA2-like library: a precise multiple-choice question over many small papers.

The library (tests/data/library/, papers written for these tests) holds one paper that
answers the question and eleven near misses: papers on metal ions, transporters, crystal
structures, residues and pH that share many of the question's words, two of them naming
wrong options. The key passage of the source paper must reach the answer prompt, found by
the stem of the question (its options are answer candidates, not search terms), and be
the one the answer quotes and cites, with the planner shown what a first search found
rather than a catalogue of titles. A question no passage speaks to is answered
"insufficient" (nodes/evidence.py `support` under SUPPORT_FLOOR), naming the question's
own option for it, with no model call to guess and no sources; so is one whose stem,
asked without the options (nodes/option_reading.py), gets an answer naming no option.
The right option is listed second of five, not in the middle.
"""

from __future__ import annotations

import re
import uuid
from pathlib import Path
from typing import Any

from scholarflow import Context, build_graph
from scholarflow.ingest.documents import document_from_text
from scholarflow.ingest.pipeline import add_document
from scholarflow.nodes.candidates import CANDIDATE_DOCUMENTS
from scholarflow.nodes.evidence import support
from scholarflow.nodes.options import insufficient_option, split_options
from scholarflow.nodes.recall import AIMED_CANDIDATES, MAX_LISTED_DOCUMENTS
from scholarflow.retrieval.kb_registry import open_knowledge_base
from tests.conftest import run_graph
from tests.support import FakeOpenAIServer

LIBRARY = Path(__file__).resolve().parents[1] / "data" / "library"
SOURCE = "lspt"  # the paper that answers STEM
KEY_SENTENCE = ("In the structure solved at pH 7.5, the anomalous difference map shows a "
                "single copper ion bound to the imidazole of His148, 2.1 Å away, with two "
                "water molecules completing its coordination sphere.")
STEM = ("Which residue of the transporter LspT coordinates the copper ion in its crystal "
        "structure at neutral pH?")
# B is right. A and C are named by a near miss and by the source paper's other residues,
# D by the source paper's Discussion: every wrong option is in the library too.
OPTIONS = ["Cys112", "His148", "Met151", "His96",
           "Insufficient information to answer this question"]

FREE_TURN = "Reply with only the answer itself"  # the stem asked without its options


def free_rules(*replies: str) -> list[dict[str, Any]]:
    """The readings' replies, in order: the stem alone after the sentences nearest it, then
    after the whole passages (the last reply stands for every later reading)."""
    *first, last = replies
    return [*({"match": FREE_TURN, "role": "last_user", "reply": r, "times": 1}
              for r in first),
            {"match": FREE_TURN, "role": "last_user", "reply": last}]


def litqa_question(stem: str) -> str:
    lines = [f"{letter}) {text}" for letter, text in zip("ABCDE", OPTIONS, strict=True)]
    return f"{stem}\n\nOptions:\n" + "\n".join(lines) + "\n\nAnswer with the letter."


def _papers() -> list[Path]:
    return sorted(p for p in LIBRARY.glob("*.md") if p.name != "README.md")


async def _library() -> None:
    kb = await open_knowledge_base("lib", create=True)
    papers = _papers()
    assert len(papers) > MAX_LISTED_DOCUMENTS  # a library: the planner searches first
    for path in papers:
        await add_document(kb, document_from_text(path.read_text(encoding="utf-8"),
                                                  doc_id=path.stem))


def _prompts(server: FakeOpenAIServer) -> list[str]:
    return [r["messages"][0]["content"] for r in server.stats().requests]


def _answer_prompts(server: FakeOpenAIServer) -> list[str]:
    return [p for p in _prompts(server) if "precise question" in p]


def _chunks(prompt: str) -> list[tuple[str, str]]:
    """The (title, text) of each passage of a prompt, in its order."""
    return [(title, " ".join(text.split())) for title, text in re.findall(
        r'<chunk n="\d+" title="([^"]*)"[^>]*>(.*?)</chunk>', prompt, re.S)]


async def test_the_key_passage_reaches_the_answer_prompt(fake_llm: FakeOpenAIServer) -> None:
    await _library()
    # Over the sentences nearest the stem the model finds nothing; over the whole
    # passages it answers in the key sentence's words, citing nothing (as small models
    # do): the answer's sources still name the passage that supports it.
    fake_llm.configure(rules=free_rules("not stated", "His148"))
    out, _ = await run_graph({"query": litqa_question(STEM), "kb": "lib"},
                             Context(reading_temperature=0.0))
    assert out["error"] is None
    # A question with options is a precise question: the rules say so, no LLM call.
    assert (out["detected_intent"], out["intent_decided_by"]) == ("LITERATURE_QA", "rules")
    # No planner call (the stem is the search) and no answer call: the two readings.
    assert [u["node"] for u in out["usage"]] == ["read_excerpt", "read_passages"]
    assert not any("sub_questions" in p for p in _prompts(fake_llm))
    # Recall searched the library by the stem alone, then inside the best candidate papers
    # of that search, the source paper among them, by the stem and the candidate answers
    # (not "Insufficient information ...").
    plan = out["plan"]
    assert (plan[0]["queries"], plan[0]["doc_id"]) == ([STEM], None)
    aimed = plan[1:1 + AIMED_CANDIDATES]
    assert SOURCE in {s["doc_id"] for s in aimed}
    assert all(s["queries"] == [f"{STEM} {' '.join(OPTIONS[:4])}"] for s in aimed)
    # The stem alone, never the options, after the sentences nearest it (short), then
    # after the whole passages.
    requests = [r["messages"] for r in fake_llm.stats().requests]
    assert [len(m) for m in requests] == [2, 2]
    # At the readings' own temperature (Context.reading_temperature), when one is set.
    assert [r["temperature"] for r in fake_llm.stats().requests] == [0.0, 0.0]
    excerpt_prompt, answer_prompt = (m[0]["content"] for m in requests)
    assert len(excerpt_prompt) < len(answer_prompt)
    for turn in (requests[0][-1]["content"], requests[1][-1]["content"]):
        assert turn.startswith(f"{STEM}\n\n(Reply with only the answer")
        assert "Cys112" not in turn and "His96" not in turn  # no option: the stem alone
    # Of the near misses' passages and the source paper's own, the key passage is the
    # best: listed last, next to the question; the near miss naming option A comes before.
    chunks = _chunks(answer_prompt)
    titles = {t for t, _ in chunks}
    assert len(titles) > 2 and len(chunks) > 3  # near misses reached the prompt too
    source_title = "Structure of the copper transporter LspT from Legionella"
    assert chunks[-1][0] == source_title and KEY_SENTENCE in chunks[-1][1]
    assert [KEY_SENTENCE in text for _, text in chunks].count(True) == 1
    assert any("Cys112" in text for title, text in chunks if title != source_title)
    # The option, the key sentence that names it, cited, and what the model said.
    n = len(chunks)
    first, quoted, said = out["answer"].split("\n\n")
    assert first.startswith("B) His148")
    assert quoted == f'Passage [{n}] says: "{KEY_SENTENCE}" [{n}]'
    assert said == ('(Asked without the options, the model answered "His148" from the '
                    'passages: this option.)')
    assert {s["doc_id"] for s in out["sources"]} == {SOURCE}


async def test_over_a_library_the_planner_sees_what_a_first_search_found(
    fake_llm: FakeOpenAIServer,
) -> None:
    """A request that is not one precise question is planned, from the candidates, not a
    catalogue."""
    await _library()
    request = ("The copper site of the transporter LspT in its crystal structure, and "
               "the residues around it")
    out, _ = await run_graph({"query": request, "kb": "lib", "mode_type": "LITERATURE_QA"},
                             Context())
    assert out["error"] is None
    planner = next(p for p in _prompts(fake_llm) if "sub_questions" in p)
    listed = re.findall(r"^- id (\w+): ", planner, re.M)
    assert len(listed) == CANDIDATE_DOCUMENTS < len(_papers())
    assert SOURCE in listed  # the source paper among them, with its best sentence
    lines = planner.splitlines()
    (at,) = [i for i, ln in enumerate(lines) if ln.startswith(f"- id {SOURCE}: ")]
    assert "Structure of the copper transporter LspT" in lines[at]
    assert lines[at + 1].startswith('  found: "') and "LspT" in lines[at + 1]
    assert "Calcium ions hold the adhesin RapA" not in planner  # not the whole catalogue


async def test_a_precise_question_without_options_is_searched_as_asked_and_answered_short(
    fake_llm: FakeOpenAIServer,
) -> None:
    """Asked as a researcher types it, without options: no planner call over a library
    (the question is the search), the key passage reaches the prompt, and the answer is
    bounded by precise_answer_tokens."""
    await _library()
    fake_llm.configure(rules=[{"match": "precise question", "role": "system",
                               "reply": "His148 coordinates the copper ion."}])
    out, _ = await run_graph({"query": STEM, "kb": "lib"},
                             Context(precise_answer_tokens=77, precise_passages=5))
    assert (out["detected_intent"], out["intent_decided_by"]) == ("LITERATURE_QA", "rules")
    assert [u["node"] for u in out["usage"]] == ["answer_generation"]  # no planner call
    (answer,) = fake_llm.stats().requests
    assert answer["max_tokens"] == 77
    assert KEY_SENTENCE in " ".join(answer["messages"][0]["content"].split())
    chunks = _chunks(answer["messages"][0]["content"])
    assert len(chunks) == 5  # precise_passages: the best five of twelve, best first
    assert chunks[0][0] == "Structure of the copper transporter LspT from Legionella"
    assert out["answer"].startswith("His148 coordinates the copper ion")
    assert SOURCE in {s["doc_id"] for s in out["sources"]}


async def test_a_chat_ui_gets_the_picked_answer_as_one_message(
    fake_llm: FakeOpenAIServer,
) -> None:
    """`messages` input and stream mode, as agent-chat-ui drives the server: the answer
    written from the reading is the one AI message the thread keeps; the reading's own
    reply never reaches the chat."""
    from langgraph.checkpoint.memory import InMemorySaver

    await _library()
    fake_llm.configure(rules=free_rules("His148 (reading)"))
    graph = build_graph(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": uuid.uuid4().hex}}
    streamed: list[Any] = []
    async for message, _meta in graph.astream(
            {"messages": [{"role": "user", "content": litqa_question(STEM)}], "kb": "lib"},
            config, context=Context(), stream_mode="messages"):
        streamed.append(message)
    kept = (await graph.aget_state(config)).values["messages"]
    assert [m.type for m in kept] == ["human", "ai"]
    assert kept[-1].content.startswith("B) His148")
    assert KEY_SENTENCE in kept[-1].content
    assert [(m.id, m.content) for m in streamed] == [(kept[-1].id, kept[-1].content)]
    assert not any(m.content == "His148 (reading)" for m in streamed)


async def test_an_answer_naming_a_wrong_papers_value_names_that_option(
    fake_llm: FakeOpenAIServer,
) -> None:
    """The readings do not judge the model: an answer copied from a near miss names the
    near miss's option, and the answer quotes the sentence that names it there."""
    await _library()
    fake_llm.configure(rules=free_rules("Cys112"))
    out, _ = await run_graph({"query": litqa_question(STEM), "kb": "lib"}, Context())
    assert out["answer"].startswith("A) Cys112")
    assert [u["node"] for u in out["usage"]] == ["read_excerpt"]


async def test_a_model_that_finds_no_answer_says_so_without_a_guess(
    fake_llm: FakeOpenAIServer,
) -> None:
    await _library()
    fake_llm.configure(rules=free_rules("Insufficient information"))
    out, _ = await run_graph({"query": litqa_question(STEM), "kb": "lib"}, Context())
    assert out["answer"] == (
        "E) Insufficient information to answer this question\n\nInsufficient information: "
        "the passages do not settle this question. Asked without the options, the model "
        "answered \"Insufficient information\", which names none of them.")
    assert out["sources"] == []
    # Pressed once more, told the passages answer it, it still finds nothing: no guess.
    assert [u["node"] for u in out["usage"]] == ["read_excerpt", "read_passages",
                                                 "read_pressed"]


async def test_with_multiple_choice_off_the_model_writes_the_answer(
    fake_llm: FakeOpenAIServer,
) -> None:
    await _library()
    fake_llm.configure(rules=[
        {"match": "precise question", "role": "system",
         "reply": "B) His148. In the crystal structure of LspT at pH 7.5 the copper ion is "
                  "bound to the imidazole of His148."}])
    out, _ = await run_graph({"query": litqa_question(STEM), "kb": "lib"},
                             Context(multiple_choice=False))
    assert out["error"] is None
    assert out["answer"].startswith("B) His148. In the crystal structure of LspT")
    assert {s["doc_id"] for s in out["sources"]} == {SOURCE}
    assert [u["node"] for u in out["usage"]] == ["answer_generation"]
    # The streamed answer's turn lists where the passages name each option.
    turn = fake_llm.stats().requests[-1]["messages"][-1]["content"]
    assert "Options the passages name:" in turn and 'B) His148: passage [' in turn


async def test_a_question_no_passage_speaks_to_is_insufficient_without_a_guess(
    fake_llm: FakeOpenAIServer,
) -> None:
    await _library()
    stem = ("Which kinase phosphorylates the chloride cotransporter KCC2 in hippocampal "
            "interneurons after status epilepticus?")
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

    question = "Which metal did the transporter LspT export from Legionella cells?"
    # metal, transporter, lspt, export, legionella, cells: 6 words of 3+ characters
    assert support(question, [passage("LspT exported copper from Legionella, and no other "
                                      "metal reached the transporter's site")]) == 4 / 6
    assert support(question, [passage("Legionella grows in amoebae"),
                              passage("the metal left the cells")]) == 2 / 6  # one passage's
    assert support(question, []) == 0.0
    assert support("Is it?", [passage("anything")]) == 1.0  # no word to check


def test_support_does_not_judge_a_question_against_passages_in_another_language() -> None:
    # An English question shares no word with the Chinese passage that answers it
    # (cross-language recall found it by meaning): the model decides, not a word count.
    question = "Which metal did the transporter LspT export from Legionella cells?"
    chinese = {"text": "LspT 转运蛋白把铜从军团菌细胞中排出。"}
    assert support(question, [chinese]) == 1.0
    english = {"text": "Legionella grows in amoebae"}
    assert support(question, [chinese, english]) == 1 / 6


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

    asked = split_options("Which residues of the linker bind the kinase?\nA) residues 12-30\n"
                          "B) residues 31–47\nC) Insufficient information")
    passages: list[Any] = [
        {"text": "Residues 12 and 30 were mutated (Fig. 2). No effect was seen."},
        {"text": "Binding to the kinase was lost in the mutant (Fig. 6C). Removing amino "
                 "acids 31-47 of the linker reduced binding to the kinase (Fig. 6C), as "
                 "predicted."},
    ]
    found = option_evidence(asked, passages)
    assert [(f.letter, f.passage) for f in found] == [("A", None), ("B", 2)]  # not C
    # The sentence sharing most of the question's words, whole: "Fig." ends none.
    assert found[1].sentence == ("Removing amino acids 31-47 of the linker reduced "
                                 "binding to the kinase (Fig. 6C), as predicted.")
    # One number is not enough ("2" of "2-fold" is in "Fig. 2"), nor is "No".
    fold = split_options("How much more slowly do mutants grow?\nA) 2-fold\nB) 3-fold\nC) No")
    sentences: list[Any] = [{"text": "Mutants grew about 3-fold more slowly (Fig. 2). No "
                                     "colony was seen."}]
    assert [f.passage for f in option_evidence(fold, sentences)] == [None, 1, None]
    assert format_option_evidence(found) == (
        '- B) residues 31–47: passage [2] says "Removing amino acids 31-47 of the linker '
        'reduced binding to the kinase (Fig. 6C), as predicted."')
    # Options the passages paraphrase are named by none: no list at all.
    paraphrased = split_options("How do the diets compare?\nA) The fat diet gives heavier "
                                "mice\nB) There is no clear difference")
    assert format_option_evidence(option_evidence(paraphrased, passages)) == ""


def test_a_compound_names_an_option_whole_or_in_pieces() -> None:
    from scholarflow.nodes.option_evidence import names, words

    option = words("Upregulation of POLR2A mRNA")
    assert names(option, words("We saw an up-regulation of POLR2A mRNA (Fig. 3)."))
    assert names(words("up-regulation of POLR2A"), words("Upregulation of POLR2A was seen."))
    assert not names(option, words("Regulation of POLR2A mRNA was unchanged."))
    assert not names(option, words("Upregulation of POLR2B mRNA was seen."))


def test_an_options_prompt_keeps_the_best_passages_and_those_naming_an_option() -> None:
    from scholarflow.nodes.option_evidence import option_passages

    best_n = Context().option_passages

    asked = split_options("Which residue binds the copper ion?\nA) His148\nB) Cys112\n"
                          "C) Insufficient information")
    best: list[Any] = [{"text": f"Passage {i} on the transporter's metal site."}
                       for i in range(best_n)]
    naming: Any = {"text": "The copper ion is bound to His148 (Fig. 2C)."}
    neither: Any = {"text": "Insufficient information was found on other sites."}
    later: Any = {"text": "Cys112 lines the cavity."}
    kept = option_passages(asked, [*best, neither, naming, later], best_n)
    # The best by rank, then the rest that name an option, in their order; the
    # "insufficient" option names no passage.
    assert kept == [*best, naming, later]
    assert option_passages(asked, best[:3], best_n) == best[:3]
    # Fewer best ones kept when the context asks: the namers still follow.
    assert option_passages(asked, [*best, neither, naming], 2) == [*best[:2], naming]


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
         "reply": '{"sub_questions": [{"question": "copper site of LspT"}]}'},
        *free_rules("His148")])
    graph = build_graph(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": uuid.uuid4().hex}}
    ctx = Context(review_plan=True)
    out = await graph.ainvoke({"query": litqa_question(STEM), "kb": "lib"}, config,
                              context=ctx)
    assert out["__interrupt__"][0].value["sub_questions"][0] == STEM
    assert fake_llm.stats().requests == []  # the stem is the search: nothing planned
    out = await graph.ainvoke(Command(resume={"action": "feedback",
                                              "feedback": "Look for the metal site."}),
                              config, context=ctx)
    (planner,) = [p for p in _prompts(fake_llm) if "sub_questions" in p]
    assert "Look for the metal site." in planner
    assert "copper site of LspT" in out["__interrupt__"][0].value["sub_questions"]
    out = await graph.ainvoke(Command(resume=True), config, context=ctx)
    assert out["answer"].startswith("B) His148")
