"""Reasoning models: their thoughts go to thinking events, never into answers.

Two shapes reach us. DeepSeek's API, vLLM with a reasoning parser and Ollama send
the reasoning in a field of its own (`reasoning_content`, or `reasoning`), which
`llm_model.ReasoningChatOpenAI` keeps. Qwen3, QwQ and R1 distills served plain
write it inline: `<think>...</think>` before the answer, or, when the chat
template already opened the block in the prompt (R1 distills on vLLM), only
the closing `</think>`.

`ThinkSplitter` splits a stream into answer text and thought as it arrives. It
holds back only what could be the start of a tag. A closing tag with no opening
one means everything before it was thought: the splitter says so (`restart`),
and remembers the model, so its next calls start inside a thought. Text the
reader already saw cannot be taken back, so the first such call of a process
may have shown its thought; the text returned (and saved) never holds it.
"""

from __future__ import annotations

from dataclasses import dataclass

OPEN, CLOSE = "<think>", "</think>"

# Models seen closing a thought they never opened (the prompt opened it).
_opens_in_prompt: set[str] = set()
# Models seen thinking at all: their thought counts against a reply's max_tokens.
_thinkers: set[str] = set()


def thinks(model_key: str) -> bool:
    """Whether this model was seen reasoning (in a field of its own, or inline)."""
    return model_key in _thinkers


def saw_thought(model_key: str) -> None:
    _thinkers.add(model_key)


@dataclass(slots=True)
class Split:
    answer: str = ""
    thought: str = ""
    # True: all answer text given out so far was thought; the caller moves it over.
    restart: bool = False


def _partial_tag(text: str, tag: str) -> int:
    """Length of the longest end of `text` that is a proper prefix of `tag`."""
    for n in range(min(len(tag) - 1, len(text)), 0, -1):
        if text.endswith(tag[:n]):
            return n
    return 0


class ThinkSplitter:
    """Splits streamed model text into answer and thought (see the module docstring)."""

    def __init__(self, model_key: str) -> None:
        self.model_key = model_key
        self.thinking = model_key in _opens_in_prompt
        self.opened = False  # an explicit <think> was seen (so a </think> is not an orphan)
        self.started = False  # any answer text was given out
        self._held = ""

    def feed(self, text: str) -> Split:
        out = Split()
        text = self._held + text
        self._held = ""
        while text:
            if self.thinking:
                end = text.find(CLOSE)
                if end < 0:
                    keep = _partial_tag(text, CLOSE)
                    out.thought += text[:len(text) - keep]
                    self._held = text[len(text) - keep:]
                    return out
                out.thought += text[:end]
                text = text[end + len(CLOSE):].lstrip("\n")
                self.thinking = False
                continue
            start, close = text.find(OPEN), text.find(CLOSE)
            if close >= 0 and (start < 0 or close < start) and not self.opened:
                # An orphan close: what came before was thought, the prompt opened it.
                _opens_in_prompt.add(self.model_key)
                out.thought += out.answer + text[:close]
                out.answer, out.restart = "", out.restart or self.started
                self.started = False  # the answer starts again, after the thought
                text = text[close + len(CLOSE):].lstrip("\n")
                self.opened = True  # one orphan per reply: later text is the answer
                continue
            if start >= 0:
                out.answer += text[:start]
                text = text[start + len(OPEN):]
                self.thinking = self.opened = True
                continue
            keep = max(_partial_tag(text, OPEN), _partial_tag(text, CLOSE))
            out.answer += text[:len(text) - keep]
            self._held = text[len(text) - keep:]
            break
        if out.thought:
            _thinkers.add(self.model_key)
        if not self.started:  # an answer never starts with the blank lines after a thought
            out.answer = out.answer.lstrip()
        self.started = self.started or bool(out.answer)
        return out

    def flush(self) -> Split:
        """The end of the reply: a held partial tag was text after all."""
        held, self._held = self._held, ""
        if self.thinking:  # an unclosed thought stays thought
            return Split(thought=held)
        return Split(answer=held if self.started else held.lstrip())

