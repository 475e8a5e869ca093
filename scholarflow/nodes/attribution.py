"""Citations with any model: answer sentences attributed to the passages that support them.

Small models often cite nothing (a whole answer about two papers without a
single [n]), or cite a passage that does not say what the
sentence says. `AttributingFilter` streams the answer through a
`CitationFilter` (invalid [n] dropped) and then, sentence by sentence:

* a claim with no citation gets [n] for the passages that support it (at most
  RULE.max_citations, scored by `attribution_score`), before its final
  punctuation: "uses 3e-4 [2]." / "使用3e-4[2]。";
* a claim whose every citation is clearly beaten by another passage
  (`wrongly_cited`) gets that passage's instead: the conservative rule;
* anything else goes out as the model wrote it: headings, table rows, code,
  short fragments, questions back to the user, "I could not find..." refusals.

The text streams as it comes: only the end of a sentence waits (its final
punctuation, where a citation may go, and from its first citation on, which
may be replaced) until the next sentence starts, or the answer ends. What
this filter returns is what the reader sees and what is saved; `cited` lists
the numbers in the text, in order of first appearance. Modelled on RAGFlow's
post-hoc `insert_citations` (rag/nlp/search.py), made incremental.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from scholarflow.nodes.attribution_score import (
    RULE,
    AttributionRule,
    PassageScorer,
    choose,
    wrongly_cited,
)
from scholarflow.nodes.citations import CitationFilter
from scholarflow.retrieval.embeddings import Embedder
from scholarflow.state import RecalledChunkState

_CITED = re.compile(r"\[(\d{1,4})\]")  # the CitationFilter's output form: valid numbers only
_RUNS = re.compile(r"[ \t]*(?:\[\d{1,4}\])+")
# A sentence's final punctuation, and what may close around it ("yes." ) **bold.**).
_TERMINAL = re.compile(r"[.!?。！？…]+[\"'”’)）」』*_]*")
_CJK_END = frozenset("。！？…")
_TAIL = re.compile(r"[.!?。！？…]+[\"'”’)）」』*_]*$")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_WORD = re.compile(r"[^\W_]+(?:[-.][^\W_]+)*")
_LAST_WORD = re.compile(r"(\S+)$")
# A period after these ends no sentence ("e.g. BERT", "Fig. 3", "et al. 2019").
_ABBREVIATIONS = frozenset({
    "e.g", "i.e", "etc", "al", "cf", "vs", "approx", "resp", "fig", "figs", "eq", "eqs",
    "sec", "secs", "tab", "no", "nos", "vol", "pp", "ch", "ref", "refs", "dr", "mr", "mrs",
    "ms", "prof", "st", "jr", "inc", "ltd", "co", "ca",
})
_LIST_MARKER = re.compile(r"^\s*(?:[-*+]|\d{1,3}[.)])\s+")
_EMPHASIS = re.compile(r"[*_`]+")
# Not claims: nothing a passage could support.
_REFUSAL = re.compile(
    r"\b(?:could ?n[o']t find|can ?n[o']t find|cannot find|did ?n[o']t find|unable to find|"
    r"no information|not (?:mentioned|specified|stated|provided|given|discussed|covered)|"
    r"do(?:es)? not (?:mention|say|specify|state|provide|discuss|contain)|"
    r"passages? (?:do(?:es)?n[o']?t|do(?:es)? not)|hope this helps|let me know|feel free)\b"
    r"|没有找到|未找到|找不到|没有提到|未提及|并未提及|没有提及|没有说明|未说明|无法确定|无法回答|"
    r"没有相关信息|希望.{0,6}帮助|如有.{0,6}问题",
    re.IGNORECASE)
MIN_WORDS = 3  # Latin words; or
MIN_CJK = 5  # Chinese characters
# A model's citation is replaced only in a sentence of at least this many words
# (two Chinese characters count as one): scores resting on a few words are noise.
REPLACE_MIN_WORDS = 6


class AttributingFilter:
    """A `CitationFilter` that also cites the passages supporting uncited sentences."""

    def __init__(self, passages: Sequence[RecalledChunkState], *,
                 embedder: Embedder | bool | None = True, wait: bool = False,
                 rule: AttributionRule = RULE) -> None:
        """`passages`: the numbered chunks, [1] first. `embedder`: True for recall's,
        None for lexical scores only, or an `Embedder`. `wait`: see `PassageScorer`."""
        self.valid = frozenset(range(1, len(passages) + 1))
        self.cited: list[int] = []
        self.rule = rule
        self._citations = CitationFilter(self.valid)
        self._scorer = PassageScorer([p["text"] for p in passages], embedder, wait=wait,
                                     rule=rule)
        self._sentence = ""  # the sentence being written, from its leading whitespace on
        self._sent = 0  # how much of it went out
        self._code = False  # inside a ``` block

    async def feed(self, text: str) -> str:
        self._scorer.start()  # the passages' vectors, while the model writes
        return await self._take(self._citations.feed(text), final=False)

    async def flush(self) -> str:
        return await self._take(self._citations.flush(), final=True)

    async def _take(self, text: str, *, final: bool) -> str:
        self._sentence += text
        out: list[str] = []
        while (end := self._end(self._sentence, final)) is not None:
            sentence, self._sentence = self._sentence[:end], self._sentence[end:]
            out.append(await self._finish(sentence))
            self._sent = 0
        safe = self._safe(self._sentence)
        if safe > self._sent:
            out.append(self._sentence[self._sent:safe])
            self._sent = safe
        return "".join(out)

    def _end(self, text: str, final: bool) -> int | None:
        """Where the first complete sentence of `text` ends; None: not known yet."""
        start = len(text) - len(text.lstrip())
        if start == len(text):
            return len(text) if final and text else None
        newline = text.find("\n", start)
        limit = newline if newline >= 0 else len(text)
        for match in _TERMINAL.finditer(text, start, limit):
            end = _sentence_end(text, match, start, final)
            if end == -1:
                return None  # what follows decides
            if end is not None:
                return end
        if newline >= 0:
            return newline
        return len(text) if final else None

    def _safe(self, text: str) -> int:
        """How much of the unfinished sentence can go out: all but what may change."""
        if self._code or text.lstrip().startswith("```"):
            return len(text)
        held = len(text)
        if cited := _RUNS.search(text):  # may be replaced when the sentence is done
            held = cited.start()
        if tail := _TAIL.search(text):  # a citation may go before it
            held = min(held, tail.start())
        return len(text.rstrip(" \t\u3000")) if held == len(text) else held

    async def _finish(self, sentence: str) -> str:
        """The rest of a complete sentence to send, cited when it needs to be."""
        sent = self._sent
        if sentence.strip().startswith("```"):
            self._code = not self._code
        elif not self._code and is_claim(sentence):
            sentence = await self._attribute(sentence, sent)
        for n in _CITED.findall(sentence):
            if int(n) in self.valid and int(n) not in self.cited:
                self.cited.append(int(n))
        return sentence[sent:]

    async def _attribute(self, sentence: str, sent: int) -> str:
        numbers = [int(n) for n in _CITED.findall(sentence[sent:])]
        if _CITED.search(sentence, 0, sent):
            return sentence  # a citation already went out (not expected: they are held)
        if numbers and _words(plain(sentence)) < REPLACE_MIN_WORDS:
            return sentence  # "It is 3e-4 [1]": a word or two cannot overrule the model
        scores, threshold = await self._scorer.scores(plain(sentence))
        if numbers and not wrongly_cited(scores, [n - 1 for n in numbers], threshold,
                                         self.rule):
            return sentence
        chosen = [i + 1 for i in choose(scores, threshold, self.rule)]
        if not chosen:
            return sentence
        if numbers:  # replaced: the model's citations go, the supported ones come
            sentence = sentence[:sent] + _RUNS.sub("", sentence[sent:])
        return insert(sentence, chosen, sent)


def _sentence_end(text: str, match: re.Match[str], start: int, final: bool) -> int | None:
    """The end of the sentence `match` (final punctuation) closes: None if it closes
    none, -1 if what follows it is not there yet."""
    marks = match.group()
    after = text[match.end():]
    if not after:
        return match.end() if final else -1
    if not any(c in _CJK_END for c in marks):
        if not after[0].isspace():
            return None  # "3.5", "e.g.,", "x.y"
        if marks[0] == "." and len(marks.rstrip("\"'”’)）」』*_")) == 1:
            word = _LAST_WORD.search(text, start, match.start())
            token = word.group(1).lstrip("([{\"'“‘") if word else ""
            if (token.lower() in _ABBREVIATIONS or (len(token) == 1 and token.isupper())
                    or (token.isdigit() and text[start:match.start()].strip() == token)):
                return None  # an abbreviation, an initial, a list marker "2."
    # Citations right after the punctuation belong to this sentence: "claim. [1]".
    rest = after.lstrip(" \t\u3000")
    if not rest:
        return len(text) if final else -1
    if runs := re.match(r"(?:\[\d{1,4}\])+", rest):
        end = len(text) - len(rest) + runs.end()
        return end if end < len(text) or final else -1
    return match.end()


def is_claim(sentence: str) -> bool:
    """Whether a sentence states something a passage could support."""
    line = sentence.strip()
    if not line or line.startswith(("#", "|", "```", "---", "***", ">")):
        return False
    text = plain(line)
    if not text or text[-1] in "?？:：" or is_refusal(text):
        return False
    return len(_WORD.findall(_CJK.sub(" ", text))) >= MIN_WORDS or \
        len(_CJK.findall(text)) >= MIN_CJK


def is_refusal(text: str) -> bool:
    """Whether `text` says the material does not answer ("not stated", "未提及")."""
    return _REFUSAL.search(text) is not None


def _words(text: str) -> float:
    return len(_WORD.findall(_CJK.sub(" ", text))) + len(_CJK.findall(text)) / 2


def plain(sentence: str) -> str:
    """The sentence's words: no citations, list marker or emphasis."""
    text = _CITED.sub("", sentence).strip()
    return _EMPHASIS.sub("", _LIST_MARKER.sub("", text)).strip()


def insert(sentence: str, numbers: Sequence[int], sent: int) -> str:
    """`sentence` with [n] for `numbers` before its final punctuation (never before `sent`)."""
    core = len(sentence.rstrip())
    tail = _TAIL.search(sentence, 0, core)
    at = tail.start() if tail else core
    if at < sent:
        at = core if core >= sent else len(sentence)
    before = sentence[:max(len(sentence[:at].rstrip(" \t")), sent)]
    marks = "".join(f"[{n}]" for n in numbers)
    space = "" if not before or _CJK.match(before[-1]) or before[-1] in " \t\n（(" else " "
    return before + space + marks + sentence[at:]
