"""read_pressed: a multiple-choice stem asked once more when every reading said the
passages do not say, told that they do.

A small model offered "not stated" takes it whenever the passages word the finding
otherwise than the question (a paraphrase, a figure's caption, a result stated of a
synonym). Told that the passages answer the question, and offered no way out, it
answers from them. That pressure is also how a guess is made, so its answer counts
only under the rule of any reading and one more: it names an option by that option's
words (the model still never sees the options), and a sentence of the passages
names that option, the sentence the answer then quotes as its evidence.
An option no sentence names ("Yes", an option the answer reached through an
abbreviation or a shared word stem) is not picked on pressure alone.

The call reads the short excerpt the first reading read (nodes/option_excerpt.py),
or the whole passages when there was none; `Context.option_pressing` turns it off.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from scholarflow.context import Context, get_context
from scholarflow.events import Thinking, node_complete
from scholarflow.language import is_chinese
from scholarflow.nodes.option_evidence import option_evidence
from scholarflow.nodes.option_free import read_free
from scholarflow.nodes.option_reading import OptionState, excerpt_system, whole_system
from scholarflow.nodes.options import split_options
from scholarflow.prompts import PRESSED_ANSWER_EN, PRESSED_ANSWER_ZH
from scholarflow.state import OptionReading

__all__ = ["read_pressed"]


async def read_pressed(state: OptionState, runtime: Runtime[Context]) -> dict[str, Any]:
    """The stem again, the passages said to answer it; a pick only of an option a
    passage sentence names."""
    ctx = get_context(runtime)
    asked = split_options(state["question"])
    system, defined = excerpt_system(state, ctx)
    template = PRESSED_ANSWER_ZH if is_chinese(asked.stem) else PRESSED_ANSWER_EN
    letter, said, usage = await read_free(ctx, [("system", system or whole_system(state))], asked,
                                          node="read_pressed", abbreviations=defined,
                                          template=template)
    backed = {e.letter for e in option_evidence(asked, state["evidence"]) if e.passage}
    named = letter if letter in backed else None
    option = asked.options[asked.letters.index(letter)] if letter else ""
    Thinking(ctx.show_thinking, "read_pressed").say(
        f'Told the passages answer it, the model answered "{said}": '
        + (f"option {named}) {option}, which a passage sentence names." if named else
           f"not option {letter}) {option}, which no passage sentence names." if letter
           else "no option."))
    node_complete("read_pressed", named=named)
    return {"option_readings": [OptionReading(step="pressed", said=said, letter=named)],
            "usage": [usage]}
