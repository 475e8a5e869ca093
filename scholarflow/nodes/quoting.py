"""An answer of citation markers alone ("[1][4]") becomes the cited passage's words.

A small model asked for a number or a name sometimes writes only the citations of the
passages that hold it. That tells the reader where to look, not what it says. So the
answer's text is held back until it has a word; if the model wrote nothing but
citations, the answer is the sentence of the cited passages nearest the question,
quoted and cited. It goes out through the same stream, so the streamed message and the
answer saved are one text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from scholarflow.llm.budget import cap_tokens
from scholarflow.nodes.attribution import AttributingFilter
from scholarflow.nodes.citations import drop_citations
from scholarflow.nodes.option_evidence import SENTENCE_TOKENS, split_sentences, stem_terms
from scholarflow.nodes.option_free import same_word
from scholarflow.nodes.options import Options
from scholarflow.prompts import PICKED_EVIDENCE_EN, PICKED_EVIDENCE_ZH
from scholarflow.retrieval.index.tokenize import query_terms
from scholarflow.state import RecalledChunkState

__all__ = ["WordsFirst"]

_NUMBER = re.compile(r"\d+")


def has_words(text: str) -> bool:
    """Whether `text` says anything once its citations are dropped."""
    return any(c.isalnum() for c in drop_citations(text))


class WordsFirst:
    """A text filter around `AttributingFilter`: text goes out once it has a word."""

    def __init__(self, inner: AttributingFilter, passages: Sequence[RecalledChunkState],
                 question: str, *, chinese: bool) -> None:
        self.inner = inner
        self.passages = passages
        self.question = question
        self.chinese = chinese
        self._held = ""
        self._words = False

    async def feed(self, text: str) -> str:
        return self._let_through(await self.inner.feed(text))

    async def flush(self) -> str:
        out = self._let_through(await self.inner.flush())
        if self._words or not self._held.strip():
            return out  # nothing at all: the caller's empty-answer check decides
        return self._quote()

    def _let_through(self, text: str) -> str:
        if self._words:
            return text
        self._held += text
        if has_words(self._held):
            self._words = True
            text, self._held = self._held, ""
            return text
        return ""

    def _quote(self) -> str:
        """The sentence nearest the question in the passages the held text cited (all of
        them when it cited none), quoted and cited."""
        numbers = [n for n in dict.fromkeys(int(m) for m in _NUMBER.findall(self._held))
                   if 1 <= n <= len(self.passages)] or list(range(1, len(self.passages) + 1))
        terms = stem_terms(Options(self.question, ()))
        best: tuple[int, int, str] | None = None  # (question words held, passage, sentence)
        for n in numbers:
            for sentence in split_sentences(self.passages[n - 1]["text"]):
                said = query_terms(sentence)
                # "survive" is held by "survived": a word with a short ending counts.
                held = sum(any(same_word(t, w) for w in said) for t in terms)
                if best is None or held > best[0]:
                    best = (held, n, sentence)
        if best is None or not best[0]:
            return self._held  # nothing to quote: the markers are all there is
        _, n, sentence = best
        if n not in self.inner.cited:
            self.inner.cited.append(n)
        quote = PICKED_EVIDENCE_ZH if self.chinese else PICKED_EVIDENCE_EN
        return quote.format(n=n, sentence=cap_tokens(sentence, SENTENCE_TOKENS))
