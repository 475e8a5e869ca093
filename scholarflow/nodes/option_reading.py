"""option_reading: a multiple-choice question asked without its options, one node a call.

A model shown the options tends to pick the letter, or the option, that its training
or the options' order favours. Asked the question alone it answers in the passages'
words, and that answer is matched to the options afterwards (nodes/option_free.py).
Every call samples at `Context.reading_temperature` (by default the context's
`temperature`; 0 reads greedily, so the same passages always give the same reading).
Three calls at most, each a node of this subgraph, so Studio shows every call:

1. `read_excerpt`: the stem over the sentences of the answer prompt's passages nearest
   it and those naming an option (nodes/option_excerpt.py), a prompt a fraction as long
   as the passages; skipped when no sentence shares a word with the stem or
   `option_excerpt_sentences` is 0;
2. `read_passages`, unless the first named an option: the stem over the whole passages;
3. `name_option`, when a reading said something that names no option by its words:
   the model's own answer beside the options, to say which one it states
   (nodes/option_naming.py; `option_naming` turns it off); or `read_pressed`, when
   every reading said only that the passages do not say: the stem again over the
   short excerpt, told the passages answer it, its pick kept only of an option a
   passage sentence names (nodes/option_pressed.py; `option_pressing` turns it off).

answer_generation then writes the answer without another call: the option named,
with the passage sentence that names it, cited; or, when no reading named one, that
the passages do not settle the question, naming the question's "insufficient" option
when it lists one. No reading guesses among the options, so a wrong answer needs the
model to state a wrong finding in the passages' words.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, Literal

from langgraph.runtime import Runtime
from pydantic import Field
from typing_extensions import TypedDict  # pydantic needs it on Python < 3.12 (Studio schemas)

from scholarflow.context import Context, get_context
from scholarflow.events import Thinking, node_complete
from scholarflow.intents import Intent
from scholarflow.language import answer_language
from scholarflow.nodes.abbreviations import defined_abbreviations
from scholarflow.nodes.answer_base import DIRECT_PROMPTS, fill
from scholarflow.nodes.citations import format_chunks
from scholarflow.nodes.option_evidence import OptionEvidence
from scholarflow.nodes.option_excerpt import excerpt
from scholarflow.nodes.option_free import read_free
from scholarflow.nodes.options import Options, insufficient_option, split_options
from scholarflow.prompts import (
    CITED_MATERIAL_PROMPT,
    PICKED_EVIDENCE_EN,
    PICKED_EVIDENCE_ZH,
    PICKED_FREE_EN,
    PICKED_FREE_ZH,
    PICKED_NAMED_EN,
    PICKED_NAMED_ZH,
    PICKED_PRESSED_EN,
    PICKED_PRESSED_ZH,
    READ_NONE_EN,
    READ_NONE_ZH,
)
from scholarflow.state import LLMUsage, OptionReading, RecalledChunkState

__all__ = ["OptionInput", "OptionOutput", "OptionState", "excerpt_system", "named_reading",
           "read_excerpt", "read_passages", "reading_answer", "route_after_excerpt",
           "whole_system"]


class OptionInput(TypedDict):
    """What option_reading reads from the parent: the question and the prompt's passages."""

    question: Annotated[str, Field(description="The run's question, options listed.")]
    evidence: Annotated[list[RecalledChunkState], Field(
        description="The passages the answer prompt holds, in the prompt's order.")]


class OptionOutput(TypedDict):
    """What option_reading gives back: its readings and their calls."""

    # Not in OptionInput, so they start empty and the parent receives only what is new.
    # (A reducer must be the field's last annotation: LangGraph reads only that one.)
    option_readings: Annotated[list[OptionReading], Field(
        description="Each answer in words and the option it names."), operator.add]
    usage: Annotated[list[LLMUsage], Field(
        description="The readings' LLM calls."), operator.add]


class OptionState(OptionInput, OptionOutput):
    """The subgraph's state."""


def _system(question: str, passages: list[RecalledChunkState],
            numbers: list[int] | None = None) -> str:
    """The answer prompt's system message over `passages` (numbered as in the whole)."""
    material = CITED_MATERIAL_PROMPT.format(chunks=format_chunks(passages, numbers))
    return fill(DIRECT_PROMPTS[Intent.LITERATURE_QA], answer_language(question), material)


def excerpt_system(state: OptionState, ctx: Context) -> tuple[str | None, dict[str, str]]:
    """(the system message over the passages' sentences nearest the stem, None when
    none shares a word with it; the passages' abbreviations)."""
    asked = split_options(state["question"])
    defined = defined_abbreviations(p["text"] for p in state["evidence"])
    cut, numbers = excerpt(asked, state["evidence"], ctx.option_excerpt_sentences, defined)
    return (_system(state["question"], cut, numbers) if cut else None), defined


def whole_system(state: OptionState) -> str:
    """The system message over the whole passages of the answer prompt."""
    return _system(state["question"], state["evidence"])


async def _read(state: OptionState, runtime: Runtime[Context], node: str,
                step: Literal["excerpt", "passages"], system: str,
                defined: dict[str, str]) -> dict[str, Any]:
    """One reading of the stem after `system`; `defined`: the passages' abbreviations."""
    ctx = get_context(runtime)
    asked = split_options(state["question"])
    letter, said, usage = await read_free(ctx, [("system", system)], asked, node=node,
                                          abbreviations=defined)
    what = ("the sentences nearest it and those naming an option" if step == "excerpt"
            else "the whole passages")
    named = (f"option {letter}) {asked.options[asked.letters.index(letter)]}"
             if letter else "no option")
    Thinking(ctx.show_thinking, node).say(
        f'Asked without its options, over {what}, the model answered "{said}": {named}.')
    node_complete(node, named=letter)
    return {"option_readings": [OptionReading(step=step, said=said, letter=letter)],
            "usage": [usage]}


async def read_excerpt(state: OptionState, runtime: Runtime[Context]) -> dict[str, Any]:
    """The stem over the sentences of the passages nearest it; nothing when none shares
    a word with it."""
    system, defined = excerpt_system(state, get_context(runtime))
    if system is None:
        return {}
    return await _read(state, runtime, "read_excerpt", "excerpt", system, defined)


async def read_passages(state: OptionState, runtime: Runtime[Context]) -> dict[str, Any]:
    """The stem over the whole passages of the answer prompt."""
    return await _read(state, runtime, "read_passages", "passages",
                       whole_system(state),
                       defined_abbreviations(p["text"] for p in state["evidence"]))


def route_after_excerpt(state: OptionState) -> Literal["read_passages", "__end__"]:
    return "__end__" if named_reading(state.get("option_readings") or []) else "read_passages"


def named_reading(readings: list[OptionReading]) -> OptionReading | None:
    """The reading that named an option, if one did."""
    return next((r for r in readings if r["letter"]), None)


def reading_answer(asked: Options, readings: list[OptionReading],
                   evidence: list[OptionEvidence], otherwise: OptionEvidence | None, *,
                   chinese: bool) -> tuple[str, bool]:
    """(the answer, whether it draws on a passage): the option a reading named with the
    sentence naming it (else `otherwise`, the sentence nearest the question); or that
    the passages do not settle the question."""
    named = named_reading(readings)
    if named is None:
        said = readings[-1]["said"] if readings else ""
        why = (READ_NONE_ZH if chinese else READ_NONE_EN).format(said=said)
        skip = insufficient_option(asked)
        return (f"{skip[0]}) {skip[1]}\n\n{why}" if skip else why), False
    letter = named["letter"] or ""
    lines = [f"{letter}) {asked.options[asked.letters.index(letter)]}", ""]
    quoted = next((e for e in evidence if e.letter == letter and e.passage), otherwise)
    if quoted is not None and quoted.passage:
        quote = PICKED_EVIDENCE_ZH if chinese else PICKED_EVIDENCE_EN
        lines += [quote.format(n=quoted.passage, sentence=quoted.sentence), ""]
    if named["step"] == "named":  # the model matched its answer to the option, not the words
        last = PICKED_NAMED_ZH if chinese else PICKED_NAMED_EN
    elif named["step"] == "pressed":  # the model first said the passages do not say
        last = PICKED_PRESSED_ZH if chinese else PICKED_PRESSED_EN
    else:
        last = PICKED_FREE_ZH if chinese else PICKED_FREE_EN
    lines.append(last.format(free=named["said"]))
    return "\n".join(lines), True
