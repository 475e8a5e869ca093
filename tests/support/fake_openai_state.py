"""Scripting, fault and statistics state of the fake OpenAI server, plus its default replies.

The state is shared between the server thread (its own event loop) and the
test thread that configures it, so every access goes through one
`threading.Lock`; the critical sections are short and never await.
"""

from __future__ import annotations

import copy
import dataclasses
import re
import threading
from dataclasses import dataclass, field
from typing import Any, Literal

from scholarflow.language import HAN
from scholarflow.prompts import ANSWER_IN_CHINESE, ANSWER_IN_ENGLISH

Mode = Literal["echo", "extractive"]
MODES: tuple[Mode, ...] = ("echo", "extractive")
ROLES = ("any", "system", "user", "last_user")
CONFIG_KEYS = frozenset({
    "rules", "mode", "latency", "fail_every_n", "fail_first_n", "fail_status",
    "rate_limit_in_flight", "fault_latency", "retry_after",
    "serve_at_most", "tokens_per_second", "prefill_tokens_per_second",
})
# The pacing keys: how a served call takes its time, like a real model server.
_PACE_KEYS = ("serve_at_most", "tokens_per_second", "prefill_tokens_per_second")

CJK_RANGES = HAN
# A CJK character counts as a word of its own: CJK text has no spaces to split on.
_WORD = re.compile(rf"[{CJK_RANGES}]|[^\W{CJK_RANGES}]+")
# Latin terminators end a sentence only before whitespace, so "3.5" and "e.g.x" stay whole.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])|\s*\n\s*")
# The prompt's <document ...> wrappers and Markdown headings: never an answer.
_MARKUP_TAG = re.compile(r"<[^<>]*>|#+\s.*")
# A line break inside a sentence (Markdown wraps its paragraphs): after a word, a number,
# a comma or a bracket, before a line that starts no heading, list item, quote or table.
_WRAPPED_LINE = re.compile(r"(?<=[\w,;)\]])[ \t]*\n[ \t]*(?=[\w(\[])(?![-*+]\s|\d+[.)]\s)")
_STOPWORD_TEXT = (
    "a an and are as at be by do does for from how in is it of on or the this that to "
    "was what when where which who why with about can you me tell 的 了 是 在 和 吗 呢 什 么 "
    "这 那 个 有 哪 些"
)
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())


REASONING_FIELDS = ("reasoning_content", "reasoning")


class ConfigError(ValueError):
    """A configuration the server cannot use; the admin endpoint answers 400."""


@dataclass(slots=True)
class Rule:
    pattern: re.Pattern[str]
    reply: str
    times: int | None
    role: str
    status: int | None
    latency: float | None = None  # this rule's own delay; None: the server's latency
    # Streamed first as delta.reasoning_content, as DeepSeek's reasoner and vLLM's
    # reasoning parsers send a model's thought (api-docs.deepseek.com, reasoning_model),
    # or in the delta field `reasoning_field` names ("reasoning": Ollama, OpenRouter).
    reasoning: str = ""
    reasoning_field: str = "reasoning_content"
    # The stream ends after the reply with no finish_reason and no [DONE], as when a
    # server drops a request for a newer one (llama-cpp-python's interrupt_requests).
    cut: bool = False
    # The first token's alternatives, {token: probability}, sent when the request asks
    # for logprobs (OpenAI's shape); without them, the reply's first piece at 1.0.
    logprobs: dict[str, float] | None = None
    used: int = 0

    @classmethod
    def parse(cls, raw: Any) -> Rule:
        if not isinstance(raw, dict) or "match" not in raw:
            raise ConfigError(f"a rule needs at least 'match': {raw!r}")
        unknown = set(raw) - {"match", "reply", "times", "role", "status", "latency", "reasoning",
                                 "reasoning_field", "cut", "logprobs"}
        if unknown:
            raise ConfigError(f"unknown rule keys {sorted(unknown)}")
        role = raw.get("role", "any")
        if role not in ROLES:
            raise ConfigError(f"rule role must be one of {ROLES}, not {role!r}")
        field = str(raw.get("reasoning_field", "reasoning_content"))
        if field not in REASONING_FIELDS:
            raise ConfigError(f"rule reasoning_field must be one of {REASONING_FIELDS}, "
                              f"not {field!r}")
        status = raw.get("status")
        if "reply" not in raw and status is None:
            raise ConfigError(f"a rule needs 'reply' or 'status': {raw!r}")
        try:
            # DOTALL: prompts span many lines and a pattern like "A.*B" should still match.
            pattern = re.compile(str(raw["match"]), re.DOTALL)
        except re.error as exc:
            raise ConfigError(f"bad rule regex {raw['match']!r}: {exc}") from exc
        times, latency = raw.get("times"), raw.get("latency")
        return cls(pattern, str(raw.get("reply", "")), None if times is None else int(times),
                   role, None if status is None else int(status),
                   None if latency is None else max(0.0, float(latency)),
                   str(raw.get("reasoning") or ""), field, bool(raw.get("cut")),
                   _logprobs(raw.get("logprobs")))


def _logprobs(raw: Any) -> dict[str, float] | None:
    if raw is None:
        return None
    if not isinstance(raw, dict) or not all(0 < float(p) <= 1 for p in raw.values()):
        raise ConfigError(f"rule logprobs must map tokens to probabilities: {raw!r}")
    return {str(token): float(p) for token, p in raw.items()}


@dataclass(slots=True)
class FakeStats:
    chat_calls: int = 0
    embedding_calls: int = 0
    in_flight: int = 0
    max_in_flight: int = 0
    requests: list[dict[str, Any]] = field(default_factory=list)
    failed_calls: int = 0  # chat calls answered with an injected fault (any status)
    # serve_at_most: calls waiting for their turn now, at most, and their total wait.
    queued: int = 0
    max_queued: int = 0
    queue_wait_seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "chat_calls": self.chat_calls,
            "embedding_calls": self.embedding_calls,
            "in_flight": self.in_flight,
            "max_in_flight": self.max_in_flight,
            "failed_calls": self.failed_calls,
            "queued": self.queued,
            "max_queued": self.max_queued,
            "queue_wait_seconds": self.queue_wait_seconds,
            "requests": copy.deepcopy(self.requests),
        }


@dataclass(frozen=True, slots=True)
class ChatDecision:
    """What one chat call answers, decided atomically when it arrives."""

    latency: float
    reply: str = ""
    status: int | None = None
    reasoning: str = ""
    reasoning_field: str = "reasoning_content"
    cut: bool = False
    admitted: bool = True  # counted against rate_limit_in_flight until `end_chat`
    retry_after: str = "0"
    serve_at_most: int = 0  # served at once; the others wait their turn (0: no limit)
    tokens_per_second: float = 0.0  # reply pacing (0: all at once)
    prefill_tokens_per_second: float = 0.0  # prompt reading before the first token (0: none)
    logprobs: dict[str, float] | None = None  # the first token's alternatives (Rule)


class FakeState:
    def __init__(self, *, mode: Mode = "echo", latency: float = 0.0) -> None:
        self._lock = threading.Lock()
        self._default_mode: Mode = _check_mode(mode)
        self._default_latency = float(latency)
        self._reset_locked()

    def _reset_locked(self) -> None:
        self.rules: list[Rule] = []
        self.mode: Mode = self._default_mode
        self.latency = self._default_latency
        self.fail_every_n = 0
        self.fail_first_n = 0
        self.fail_status = 429
        self.rate_limit_in_flight = 0
        self.fault_latency: float | None = None
        self.retry_after = "0"
        self.serve_at_most = 0
        self.tokens_per_second = 0.0
        self.prefill_tokens_per_second = 0.0
        self._admitted = 0
        self._stats = FakeStats()

    def reset(self) -> None:
        with self._lock:
            self._reset_locked()

    def configure(self, **config: Any) -> None:
        unknown = set(config) - CONFIG_KEYS
        if unknown:
            known = sorted(CONFIG_KEYS)
            raise ConfigError(f"unknown config keys {sorted(unknown)}; known: {known}")
        # Validate everything before touching the state so a bad call changes nothing.
        rules = [Rule.parse(r) for r in config["rules"]] if "rules" in config else None
        mode = _check_mode(config["mode"]) if "mode" in config else None
        status = int(config.get("fail_status", 429))
        if status < 400:
            raise ConfigError(f"fail_status must be an HTTP error status, not {status}")
        fault_latency = config.get("fault_latency")
        fault_latency = None if fault_latency is None else max(0.0, float(fault_latency))
        pace = {k: _non_negative(k, config[k]) for k in _PACE_KEYS if k in config}
        with self._lock:
            if rules is not None:
                self.rules = rules
            if mode is not None:
                self.mode = mode
            if "latency" in config:
                self.latency = max(0.0, float(config["latency"]))
            if "fail_every_n" in config:
                self.fail_every_n = max(0, int(config["fail_every_n"] or 0))
            if "fail_first_n" in config:
                self.fail_first_n = max(0, int(config["fail_first_n"] or 0))
            if "fail_status" in config:
                self.fail_status = status
            if "rate_limit_in_flight" in config:
                self.rate_limit_in_flight = max(0, int(config["rate_limit_in_flight"] or 0))
            if "fault_latency" in config:
                self.fault_latency = fault_latency
            if "retry_after" in config:
                self.retry_after = str(config["retry_after"])
            if "serve_at_most" in pace:
                self.serve_at_most = int(pace.pop("serve_at_most"))
            for key, value in pace.items():
                setattr(self, key, value)

    def stats(self) -> FakeStats:
        with self._lock:
            return dataclasses.replace(self._stats, requests=copy.deepcopy(self._stats.requests))

    def begin_chat(self, body: dict[str, Any]) -> ChatDecision:
        """Count and log a chat call, and decide its fault or reply; pair with `end_chat`."""
        messages = body.get("messages") or []
        with self._lock:
            s = self._stats
            s.chat_calls += 1
            s.in_flight += 1
            s.max_in_flight = max(s.max_in_flight, s.in_flight)
            s.requests.append({"model": body.get("model"), "messages": copy.deepcopy(messages),
                               "max_tokens": body.get("max_completion_tokens",
                                                      body.get("max_tokens")),
                               # which of the two names the bound came under, if any
                               "max_tokens_field": next((k for k in (
                                   "max_completion_tokens", "max_tokens") if k in body), None),
                               "stream": bool(body.get("stream")),
                               "temperature": body.get("temperature")})
            n = s.chat_calls
            fault_latency = self.latency if self.fault_latency is None else self.fault_latency
            if n <= self.fail_first_n or (self.fail_every_n and n % self.fail_every_n == 0):
                s.failed_calls += 1
                return ChatDecision(fault_latency, status=self.fail_status, admitted=False,
                                    retry_after=self.retry_after)
            # A concurrency rate limit, as API gateways and vLLM-style servers enforce:
            # only calls it admitted count, the ones it turns away do not.
            if self.rate_limit_in_flight and self._admitted >= self.rate_limit_in_flight:
                s.failed_calls += 1
                return ChatDecision(fault_latency, status=429, admitted=False,
                                    retry_after=self.retry_after)
            self._admitted += 1
            for rule in self.rules:
                if rule.times is not None and rule.used >= rule.times:
                    continue
                if rule.pattern.search(_select(messages, rule.role)):
                    rule.used += 1
                    latency = self.latency if rule.latency is None else rule.latency
                    return ChatDecision(latency, rule.reply, rule.status, rule.reasoning,
                                        rule.reasoning_field, rule.cut, logprobs=rule.logprobs,
                                        **self._pace())
            latency, mode, pace = self.latency, self.mode, self._pace()
        # The default reply reads only the request, so it is built outside the lock.
        return ChatDecision(latency, default_reply(mode, messages), **pace)

    def _pace(self) -> dict[str, Any]:
        return {"serve_at_most": self.serve_at_most, "tokens_per_second": self.tokens_per_second,
                "prefill_tokens_per_second": self.prefill_tokens_per_second}

    def end_chat(self, decision: ChatDecision) -> None:
        with self._lock:
            self._stats.in_flight -= 1
            if decision.admitted:
                self._admitted = max(0, self._admitted - 1)  # a reset may have cleared it

    def queue_changed(self, delta: int, waited: float = 0.0) -> None:
        """A call started (+1) or stopped (-1, after `waited` s) waiting for its turn."""
        with self._lock:
            s = self._stats
            s.queued = max(0, s.queued + delta)  # a reset may have cleared it
            s.max_queued = max(s.max_queued, s.queued)
            s.queue_wait_seconds += waited

    def count_embedding_call(self) -> None:
        with self._lock:
            self._stats.embedding_calls += 1


def _non_negative(key: str, value: Any) -> float:
    try:
        number = float(value or 0)
    except (TypeError, ValueError):
        raise ConfigError(f"{key} must be a number, not {value!r}") from None
    if number < 0:
        raise ConfigError(f"{key} must be 0 or more, not {value!r}")
    return number


def _check_mode(mode: Any) -> Mode:
    if mode not in MODES:
        raise ConfigError(f"mode must be one of {MODES}, not {mode!r}")
    return mode  # type: ignore[no-any-return]


def content_text(message: Any) -> str:
    """The text of a message; content may be a string, None, or a list of parts."""
    if not isinstance(message, dict):
        return ""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(p.get("text", "")) for p in content if isinstance(p, dict) and "text" in p
        )
    return ""


def _role(message: Any) -> str:
    return str(message.get("role", "")) if isinstance(message, dict) else ""


def _select(messages: list[Any], role: str) -> str:
    if role == "last_user":
        return last_user_text(messages)
    if role == "any":
        return "\n".join(content_text(m) for m in messages)
    return "\n".join(content_text(m) for m in messages if _role(m) == role)


def asked(turn: str) -> str:
    """The question of an answer prompt's user turn, without the language reminder after it."""
    for reminder in (ANSWER_IN_CHINESE, ANSWER_IN_ENGLISH):
        turn = turn.removesuffix("\n\n" + reminder.format())
    return turn


def last_user_text(messages: list[Any]) -> str:
    for message in reversed(messages):
        if _role(message) == "user":
            return content_text(message)
    return ""


def default_reply(mode: Mode, messages: list[Any]) -> str:
    question = asked(last_user_text(messages))
    if mode == "extractive":
        answer = extractive_reply(messages, question)
        if answer:
            return answer
    return "ok: " + question[:80]


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOPWORDS}


def extractive_reply(messages: list[Any], question: str) -> str:
    """The 3 prompt sentences sharing most words with the question, in prompt order.

    Questions are skipped as candidates: the question itself (or a list of
    them) would otherwise always be its own best answer; so are tags and headings.
    """
    sentences: list[str] = []
    for message in messages:
        if _role(message) in ("system", "user"):
            text = _WRAPPED_LINE.sub(" ", content_text(message))
            for raw in _SENTENCE_END.split(text):
                sentence = raw.strip()
                if (sentence and sentence not in sentences and not sentence.endswith(("?", "？"))
                        and not _MARKUP_TAG.fullmatch(sentence)):
                    sentences.append(sentence)
    if question.strip() in sentences:
        sentences.remove(question.strip())
    if not sentences:
        return ""
    asked = _words(question)
    scores = [len(_words(s) & asked) for s in sentences]
    # Stable sort: among equal scores the earlier sentence wins.
    ranked = sorted(range(len(sentences)), key=lambda i: -scores[i])
    picked = [i for i in ranked[:3] if scores[i] > 0] or list(range(min(3, len(sentences))))
    return " ".join(sentences[i] for i in sorted(picked))
