"""name_option: the model's own answer in words, set beside the options, named by it.

An answer in the passages' words often states an option without its words: a
synonym ("highly similar" for "no significant differences"), part of a name
("AAGAG" for "AAGAG lncRNA"), another spelling. Matching by words cannot see
that; the model that wrote the answer can. This step shows it the stem, its
answer and the options (no letters, so no letter is favoured; no option about
the other options or about the question being unanswerable, which no finding
states) and asks for the option that states the same thing, copied, or "none".
The copy is matched by words like any reading (nodes/option_free.py).

It runs only when a reading said something of its own (not "not stated", not the
question's words alone) that named no option. A pick is refused unless the option
holds every number the answer gives of its own (not the question's): a number is a
finding, and an option sharing one of two numbers ("11-20" for "11-40") states
another.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from langgraph.runtime import Runtime

from scholarflow.context import Context, get_context
from scholarflow.events import Thinking, node_complete
from scholarflow.language import is_chinese
from scholarflow.llm import calls as llm
from scholarflow.nodes.attribution import is_refusal
from scholarflow.nodes.option_evidence import words
from scholarflow.nodes.option_free import first_line, free_option, same_word
from scholarflow.nodes.option_reading import OptionState, named_reading
from scholarflow.nodes.options import Options, says_insufficient, split_options
from scholarflow.prompts import NAME_OPTION_EN, NAME_OPTION_ZH
from scholarflow.state import OptionReading

__all__ = ["answered_without_option", "name_option", "nameable", "numbers_agree",
           "route_after_passages"]

# An option about the others ("None of the above", "Both", "All of these", "Both A and
# B") states no finding an answer in words could give; "All-trans retinoic acid" does.
_ABOUT_OTHERS = re.compile(
    r"^\s*(?:(?:none|neither|both|all)(?:\s+of\s+(?:the|these|them)\b.*)?"
    r"|both\s+[A-J]\)?\s+and\s+[A-J]\)?)\s*[.!]?\s*$", re.I)
_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)?(?![\w])")
_NONE_REPLY = re.compile(r"^\W*(?:none|no option|无|没有)\W*$", re.I)


def answered_without_option(readings: list[OptionReading], stem: str
                            ) -> OptionReading | None:
    """The last reading that said something of its own and named no option, when none
    named one. An answer whose every word is the question's ("Vamp2" to a question about
    Vamp2) repeats it and states nothing an option could be matched to."""
    if any(r["letter"] for r in readings):
        return None
    asked = words(stem)
    said = [r for r in readings
            if r["said"] and not is_refusal(r["said"]) and not says_insufficient(r["said"])
            and any(not any(same_word(w, x) for x in asked) for w in words(r["said"]))]
    return said[-1] if said else None


def nameable(asked: Options) -> Options:
    """The options an answer in words can state: not "insufficient", not about the others."""
    kept = [(letter, text) for letter, text in zip(asked.letters, asked.options, strict=True)
            if not says_insufficient(text) and not _ABOUT_OTHERS.match(text)]
    return Options(asked.stem, tuple(t for _, t in kept), tuple(letter for letter, _ in kept))


def _numbers(text: str) -> set[str]:
    return {n.replace(",", ".") for n in _NUMBER.findall(text)}


def numbers_agree(said: str, option: str, stem: str = "") -> bool:
    """Whether `option` holds every number `said` gives of its own (not the question's)."""
    return _numbers(said) - _numbers(stem) <= _numbers(option)


def route_after_passages(state: OptionState, runtime: Runtime[Context]
                         ) -> Literal["name_option", "read_pressed", "__end__"]:
    """To name_option when it is on, a reading said something that named no option, and
    some option states a finding; to read_pressed when it is on and every reading said
    only that the passages do not say, or only the question's words (nodes/option_pressed.py)."""
    ctx = get_context(runtime)
    asked = split_options(state["question"])
    readings = state.get("option_readings") or []
    if not nameable(asked).options or not readings or named_reading(readings):
        return "__end__"
    if answered_without_option(readings, asked.stem) is not None:
        return "name_option" if ctx.option_naming else "__end__"
    return "read_pressed" if ctx.option_pressing else "__end__"


async def name_option(state: OptionState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Which option the readings' answer states, in the model's own judgement."""
    ctx = get_context(runtime)
    asked = split_options(state["question"])
    reading = answered_without_option(state.get("option_readings") or [], asked.stem)
    candidates = nameable(asked)
    if reading is None:  # route_after_passages sends none such here
        return {}
    said = reading["said"]
    chinese = is_chinese(asked.stem)
    template = NAME_OPTION_ZH if chinese else NAME_OPTION_EN
    listed = "\n".join(f"- {text}" for text in candidates.options)
    result = await llm.complete(
        ctx, [("user", template.format(stem=asked.stem, said=said, options=listed))],
        node="name_option", max_tokens=ctx.option_answer_tokens,
        temperature=ctx.reading_temperature)
    reply = first_line(result.text)
    letter = None if _NONE_REPLY.match(reply) else free_option(
        reply, candidates, covered=ctx.option_match_share)
    option = asked.options[asked.letters.index(letter)] if letter else ""
    refused = bool(letter) and not numbers_agree(said, option, asked.stem)
    named = None if refused else letter
    Thinking(ctx.show_thinking, "name_option").say(
        f'Shown its answer "{said}" beside the options, the model replied "{reply}": '
        + (f"option {named}) {option}." if named else
           f"not option {letter}) {option}, whose numbers are not the answer's." if refused
           else "no option."))
    node_complete("name_option", named=named)
    return {"option_readings": [OptionReading(step="named", said=said, letter=named)],
            "usage": [result.usage]}
