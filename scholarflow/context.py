"""Runtime configuration: the graph's `context_schema`.

Every field has the default of docs/architecture.md#configuration. Secrets and endpoints left unset
come from the process's settings (settings.py: the environment) when the
context is built; a value the caller passed is never overridden. The context
is not part of the state, so the API key never reaches checkpoints, sessions
or events.
"""

from __future__ import annotations

import difflib
import math
from dataclasses import MISSING, Field, dataclass, field, fields, make_dataclass
from functools import cache
from types import UnionType
from typing import TYPE_CHECKING, Any, Literal, Union, get_args, get_origin, get_type_hints

from scholarflow.endpoints import check_endpoints
from scholarflow.errors import InvalidContextError
from scholarflow.settings import (
    DEFAULT_LLM_TIMEOUT_SECONDS,
    DEFAULT_MAX_CONCURRENT_LLM_CALLS,
    DEFAULT_MODEL,
    Settings,
    get_settings,
    revealed,
)

if TYPE_CHECKING:  # annotations only: `sessions`, `--help` and bad requests skip langgraph
    from langgraph.runtime import Runtime

# The variables behind the fields' defaults (settings.py), as messages name them.
MAX_CALLS_ENV = Settings.max_concurrent_llm_calls.env
ADAPTIVE_ENV = Settings.adaptive_llm_limit.env
LLM_TIMEOUT_ENV = Settings.llm_timeout_seconds.env
MAX_CONTEXT_ENV = Settings.max_context_tokens.env
DEFAULT_MAX_CONTEXT_TOKENS = 128_000  # when nobody says otherwise


def _doc(text: str) -> Any:
    return {"description": text}


@dataclass(kw_only=True)
class Context:
    """How scholarflow runs: model endpoint, budgets, concurrency, recall and display."""

    model_name: str | None = field(
        default=None,
        metadata=_doc(f"Chat model name. Default: $SCHOLARFLOW_MODEL, else {DEFAULT_MODEL}."),
    )
    openai_api_base: str | None = field(
        default=None,
        metadata=_doc("OpenAI-compatible endpoint (DeepSeek, Qwen, vLLM, Ollama). "
                      "Default: $OPENAI_BASE_URL, else OpenAI."),
    )
    openai_api_key: str | None = field(
        default=None,
        repr=False,
        metadata=_doc("API key. Default: $OPENAI_API_KEY. Never stored anywhere."),
    )
    max_context_tokens: int | None = field(
        default_factory=lambda: get_settings().max_context_tokens,
        metadata={**_doc(f"The model's context window, in tokens. Default: ${MAX_CONTEXT_ENV}, "
                         "else the window the server reports (llama.cpp /props, vLLM "
                         f"max_model_len, Ollama num_ctx), else {DEFAULT_MAX_CONTEXT_TOKENS}."),
                  "default_words": f" {DEFAULT_MAX_CONTEXT_TOKENS} (or ${MAX_CONTEXT_ENV}, or "
                                   "the window the server reports)"},
    )
    # The two reserves scale with the window (llm/budget.py) unless given: 2000 / 8000 at 128k.
    system_tokens_estimate: int | None = field(
        default=None,
        metadata={**_doc("Tokens set aside for system prompts. Default: window / 16, at "
                         "least 256 and at most 2000 (2000 from a 32k window up)."),
                  "default_words": " (window / 16 within 256-2000)"},
    )
    reserved_answer_tokens: int | None = field(
        default=None,
        metadata={**_doc("Tokens set aside for the answer: every LLM call's max_tokens. "
                         "Default: window / 8, at least 1024 and at most 8000 (8000 from "
                         "a 64k window up)."),
                  "default_words": " (window / 8 within 1024-8000)"},
    )
    direct_content_threshold: float = field(
        default=0.7,
        metadata=_doc("A single document whose tokens are under this share of the "
                      "available budget is read whole (full_content)."),
    )
    max_concurrent_llm_calls: int = field(
        default_factory=lambda: get_settings().max_concurrent_llm_calls,
        metadata=_doc(f"Process-wide cap on LLM calls in flight. Default: ${MAX_CALLS_ENV}, "
                      f"else {DEFAULT_MAX_CONCURRENT_LLM_CALLS}."),
    )
    adaptive_llm_limit: bool = field(
        default_factory=lambda: get_settings().adaptive_llm_limit,
        metadata=_doc("On a 429, halve the LLM calls in flight and grow back by one per "
                      "success, within [1, max_concurrent_llm_calls]; off: a fixed cap. "
                      f"Default: ${ADAPTIVE_ENV} (0 or 1), else on."),
    )
    max_intent_recognition_retries: int = field(
        default=3, metadata=_doc("LLM attempts when it answers with an invalid intent.")
    )
    llm_timeout_seconds: float = field(
        default_factory=lambda: get_settings().llm_timeout_seconds,
        metadata=_doc("Seconds an LLM call may wait for its first token (more for long "
                      "prompts, and while our other calls to the server stream) and between "
                      "two tokens; a long reply that keeps streaming never times out. "
                      f"Default: ${LLM_TIMEOUT_ENV}, else {DEFAULT_LLM_TIMEOUT_SECONDS:g}."),
    )
    temperature: float = field(default=0.2, metadata=_doc("Sampling temperature."))
    reading_temperature: float | None = field(default=None, metadata=_doc(
        "Multiple choice: the sampling temperature of the readings and of naming an option "
        "(None: `temperature`); 0 reads greedily, the same answer to the same passages."))
    top_n: int = field(default=10, metadata=_doc("Recall: chunks returned per query."))
    similarity_threshold: float = field(
        default=0.2, metadata=_doc("Recall: minimum hybrid score of a chunk.")
    )
    vector_similarity_weight: float = field(
        default=0.3, metadata=_doc("Recall: weight of vector similarity against BM25.")
    )
    use_rerank: bool = field(default=False, metadata=_doc("Recall: rerank recalled chunks."))
    recall_tool_cache_size: int = field(
        default=100,
        metadata=_doc("Recall: knowledge bases kept open (LRU; the least recent is closed)."),
    )
    search_engine: Literal["tavily", "bocha"] | None = field(
        default=None,
        metadata=_doc("Web search engine for chat. Default: the one whose key is set "
                      "($TAVILY_API_KEY, $BOCHA_API_KEY); tavily when both or neither are."),
    )
    search_engine_api_key: str | None = field(
        default=None,
        repr=False,
        metadata=_doc("Web search key. Default: $TAVILY_API_KEY or $BOCHA_API_KEY."),
    )
    max_results: int = field(default=5, metadata=_doc("Web search: results used."))
    show_thinking: bool = field(
        default=True, metadata=_doc("Send thinking events (the workflow's reasoning).")
    )
    refresh_summary_cache: bool = field(
        default=False, metadata=_doc("Regenerate document summaries even when cached.")
    )
    review_plan: bool = field(
        default=False,
        metadata=_doc("Pause after plan_generation for a person to approve, edit or comment "
                      "on the plan (chunk_recall; the run needs a checkpointer and a thread)."),
    )
    # Intent recognition (nodes/intent.py, nodes/intent_form.py).
    precise_question_min_terms: int = field(
        default=2,
        metadata=_doc("A question that names no summary, review or critique is a precise "
                      "question about a finding, routed to recall by the rules without an "
                      "intent call, when it has at least this many research terms of its "
                      "own (Chinese: two characters a term)."),
    )
    intent_example_neighbours: int = field(
        default=3,
        metadata=_doc("When the rules are unsure of a message with words of its own, its this "
                      "many nearest labelled example messages decide if they agree on one "
                      "intent (decided_by 'examples'); 0 switches the examples off."),
    )
    intent_task_guard: bool = field(
        default=True,
        metadata=_doc("Overrule the intent model's (or the examples') LITERATURE_SUMMARY, "
                      "REVIEW_GENERATION or PAPER_REVIEW to LITERATURE_QA when the message "
                      "has a subject of its own and names no such task (decided_by 'guard')."),
    )
    precise_passages: int = field(
        default=8,
        metadata=_doc("The most passages a precise question (LITERATURE_QA) without options "
                      "keeps in its answer prompt, the best first, beside the best passage of "
                      "each document a recall step was aimed at: one finding needs few, and "
                      "a small model reads a short prompt sooner and better."),
    )
    precise_answer_tokens: int = field(
        default=512,
        metadata=_doc("The longest answer to a precise question (LITERATURE_QA) over "
                      "recalled passages, in tokens: the finding with its passage, not an "
                      "essay; a model that rambles stops here."),
    )
    # Multiple choice (nodes/option_reading.py): each reading is a step of option_reading.
    multiple_choice: bool = field(
        default=True,
        metadata=_doc("A question that lists lettered options is asked without them over "
                      "the passages, and the model's answer in words is matched to an "
                      "option (option_reading: one or two short calls); when it names none, "
                      "the answer says the passages do not settle the question. False: the "
                      "model writes the answer with the options in view."),
    )
    option_match_share: float = field(default=0.6, metadata=_doc(
        "Multiple choice: the share of an option's words the model's answer must hold to "
        "name that option."))
    option_naming: bool = field(
        default=True,
        metadata=_doc("Multiple choice: when the readings answered in words that name no "
                      "option by their words (a synonym, a part of a name, another "
                      "spelling), one more short call shows the model its own answer and "
                      "the options and asks which one it states (name_option); a pick "
                      "without every number of the answer is refused. False: no such "
                      "call."),
    )
    option_excerpt_sentences: int = field(
        default=3,
        metadata=_doc("Multiple choice: the passages' sentences nearest the question that "
                      "the first, short reading shows, with each option's best sentence "
                      "naming it (each with one either side); 0 reads the whole passages "
                      "only."),
    )
    option_answer_tokens: int = field(default=32, metadata=_doc(
        "Multiple choice: the longest answer in words a reading may write."))
    option_pressing: bool = field(default=True, metadata=_doc(
        "Multiple choice: when every reading said only that the passages do not say, one "
        "more short call asks the question again over the nearest sentences, told they "
        "answer it (read_pressed); its option counts only when a passage sentence names "
        "it. False: no such call."))
    option_passages: int = field(
        default=6,
        metadata=_doc("Multiple choice: the best passages the answer prompt keeps; of the "
                      "rest, only those naming an option."),
    )
    # What a summary of many documents may cost before a person approves it (cost_check).
    approval_documents: int | None = field(
        default=20,
        metadata=_doc("A summary that would send more than this many documents through the "
                      "model (those without a cached summary) asks for approval before it "
                      "starts: the run pauses (it needs a checkpointer and a thread), the CLI "
                      "needs --approve-cost. null: no limit."),
    )
    approval_tokens: int | None = field(
        default=300_000,
        metadata=_doc("A summary whose estimated prompt tokens (every summary and merge call) "
                      "pass this asks for approval before it starts, as approval_documents. "
                      "null: no limit."),
    )

    def __post_init__(self) -> None:
        settings = get_settings()  # fills what the caller left unset, never what it passed
        if self.model_name is None:
            self.model_name = settings.model
        if self.openai_api_base is None:
            self.openai_api_base = settings.openai_base_url
        if self.openai_api_key is None:
            self.openai_api_key = revealed(settings.openai_api_key)
        if self.search_engine is None:
            only_bocha = settings.bocha_api_key and not settings.tavily_api_key
            self.search_engine = "bocha" if only_bocha else "tavily"
        if self.search_engine_api_key is None:
            key = (settings.tavily_api_key if self.search_engine == "tavily"
                   else settings.bocha_api_key)
            self.search_engine_api_key = revealed(key)
        self._validate()

    def _validate(self) -> None:
        # Types first: a JSON client's "big" must not reach a comparison (TypeError).
        hints = _field_types()
        for f in fields(self):
            if (need := _type_words(hints[f.name], getattr(self, f.name))) is not None:
                raise _invalid(self, f, f"must be {need}")
        positive = ("max_context_tokens", "reserved_answer_tokens", "max_concurrent_llm_calls",
                    "max_intent_recognition_retries", "top_n", "max_results",
                    "recall_tool_cache_size", "option_answer_tokens", "option_passages",
                    "precise_question_min_terms", "precise_answer_tokens",
                    "precise_passages")
        named = {f.name: f for f in fields(self)}
        for name in positive:  # None: from the environment, the server or the window
            if (value := getattr(self, name)) is not None and value < 1:
                raise _invalid(self, named[name], "must be at least 1")
        for name in ("system_tokens_estimate", "option_excerpt_sentences", "approval_documents",
                     "approval_tokens", "intent_example_neighbours"):
            if (value := getattr(self, name)) is not None and value < 0:
                raise _invalid(self, named[name], "must be at least 0")
        for name in ("direct_content_threshold", "similarity_threshold",
                     "vector_similarity_weight", "option_match_share"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise _invalid(self, named[name], "must be between 0 and 1")
        for name in ("temperature", "reading_temperature"):
            if (value := getattr(self, name)) is not None and not 0.0 <= value <= 2.0:
                raise _invalid(self, named[name], "must be between 0 and 2")
        if self.llm_timeout_seconds <= 0:
            raise _invalid(self, named["llm_timeout_seconds"],
                           "must be a number of seconds above 0")
        check_endpoints(self.openai_api_base)  # a bad URL: refused once, before any call

    @property
    def llm_configured(self) -> bool:
        """Whether an endpoint or key says where the LLM is."""
        return bool(self.openai_api_key or self.openai_api_base)


SECRET_FIELDS = frozenset({"openai_api_key", "search_engine_api_key"})
# What only the server's operator sets, from the server's environment:
# - the endpoint: the server's key goes wherever it points, so a client that
#   could set it could collect the key;
# - the process-wide LLM limit: one client's run would resize it for all.
SERVER_FIELDS = SECRET_FIELDS | {"openai_api_base", "max_concurrent_llm_calls",
                                 "adaptive_llm_limit"}

# The context schema of the graph LangGraph server serves. The server mirrors a
# run's context into its configuration, and string values of that end up in
# checkpoint metadata; it drops keys the schema does not name. So a served run
# takes its keys, endpoint and limit from the server's environment only, and a
# key sent in the context is dropped before it could be stored.
ServedContext: type[Any] = make_dataclass(
    "ServedContext",
    [(f.name, f.type, field(default=f.default, default_factory=f.default_factory,
                            metadata=f.metadata))
     for f in fields(Context) if f.name not in SERVER_FIELDS],
    kw_only=True,
    namespace={
        "__module__": __name__,
        "__doc__": f"{Context.__doc__} API keys, the endpoint and the LLM limit come from "
                   "the server's environment.",
    },
)


def get_context(runtime: Runtime[Any] | None) -> Context:
    """The run's context as a full `Context`; defaults and environment fill what is unset."""
    return as_context(runtime.context if runtime is not None else None)


def as_context(ctx: Any, schema: type[Any] = Context) -> Context:
    """`ctx` (None, a Context, a dict of `schema`'s fields, or a dataclass such as
    ServedContext) as a full, checked Context; InvalidContextError names a wrong field."""
    if ctx is None:
        return Context()
    if isinstance(ctx, Context):
        return ctx
    if isinstance(ctx, dict):  # a server may hand over the raw JSON object
        known = [f.name for f in fields(schema)]
        if unknown := [k for k in ctx if k not in known]:
            close = difflib.get_close_matches(str(unknown[0]), known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            # Every field named would make a line too long to read: the schema lists them.
            raise InvalidContextError(
                f"invalid context: unknown field {_shown(unknown[0])}{hint}; leave it out, or "
                f"use one of the {len(known)} fields of the graph's context schema "
                "(scholarflow.Context; Studio's configuration panel lists them)")
        return Context(**ctx)
    return Context(**{f.name: getattr(ctx, f.name) for f in fields(ctx)})


@cache
def _field_types() -> dict[str, Any]:
    return get_type_hints(Context)


def _type_words(hint: Any, value: Any) -> str | None:
    """What a field of type `hint` must be when `value` is not one, else None."""
    options = get_args(hint) if get_origin(hint) in (Union, UnionType) else (hint,)
    words = []
    for option in options:
        if option is type(None):
            ok, word = value is None, "null"
        elif get_origin(option) is Literal:
            ok = isinstance(value, str) and value in get_args(option)
            word = "one of " + ", ".join(map(repr, get_args(option)))
        elif option is bool:
            ok, word = isinstance(value, bool), "true or false"
        elif option is int:
            ok = isinstance(value, int) and not isinstance(value, bool)
            word = "a whole number"
        elif option is float:  # an int is a float here, as in JSON; nan and inf are not
            ok = (isinstance(value, int | float) and not isinstance(value, bool)
                  and math.isfinite(value))
            word = "a number"
        elif option is str:
            ok, word = isinstance(value, str), "a string"
        else:
            ok, word = isinstance(value, option), f"a {option.__name__}"
        if ok:
            return None
        words.append(word)
    return " or ".join(words)


def _invalid(ctx: Context, f: Field[Any], rule: str) -> InvalidContextError:
    """`invalid context: NAME must ..., not VALUE; leave it out for the default`."""
    value = getattr(ctx, f.name)
    shown = f"a {type(value).__name__} value" if f.name in SECRET_FIELDS else _shown(value)
    # None and factory defaults mean "from the environment": no single value to name,
    # unless the field says in words what leaving it out gives.
    default = f.metadata.get("default_words") or (
        "" if f.default in (MISSING, None) else f" {f.default!r}")
    return InvalidContextError(f"invalid context: {f.name} {rule}, not {shown}; "
                               f"leave it out for the default{default}")


def _shown(value: object, limit: int = 40) -> str:
    """repr(value), shortened: one line however long the value."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit - 5]}...{text[-2:]}"


def first_attempt(runtime: Runtime[Any] | None) -> bool:
    """Whether this is the node's first attempt (not a retry by its RetryPolicy)."""
    info = runtime.execution_info if runtime is not None else None
    return info is None or info.node_attempt <= 1
