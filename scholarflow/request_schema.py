"""One validation of a request, for the command line, Python and LangGraph server.

LangGraph checks nothing about a graph's input: the START node writes the keys
that are input channels and drops the others with a log line, and a TypedDict
schema's types are never enforced. So `validate_request_input` checks a request
against `InputState` before the graph runs (strict types, no unknown field),
then the values no type says (a question with words, a knowledge base name, a
known intent). Each problem is one InvalidRequestError (an InputError): one line
naming the field and what to pass. A field added to `InputState` is validated by
its type with no change here; `FIELD_HELP` only words its message.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Iterator, Mapping
from functools import cache
from typing import Annotated, Any, NotRequired, cast, get_args, get_origin, get_type_hints

from langgraph.channels.delta import DeltaChannel
from pydantic import TypeAdapter, ValidationError
from pydantic_core import ErrorDetails

from scholarflow.errors import InvalidRequestError
from scholarflow.intents import Intent
from scholarflow.printable import undecodable
from scholarflow.retrieval.index import InvalidKnowledgeBaseNameError, check_kb_ref
from scholarflow.sessions.models import check_session_id
from scholarflow.state import InputState

# More documents than a request can sensibly name (recall lists 50 per prompt); it also
# keeps one error's list of missing ids readable.
MAX_DOCUMENTS = 1_000
_INTENTS = ", ".join(i.value for i in Intent)
_NO_SESSION = ("pass an id from `scholarflow sessions list`, or leave it out to start a "
               "new session")

# Searched first: undecodable() says where, but walks the text in Python (a 20 MB paper).
_SURROGATE = re.compile("[\ud800-\udfff]")

# field -> (what it must be, what to do): the words of each field's error.
FIELD_HELP: dict[str, tuple[str, str]] = {
    "messages": ("a list of messages", 'pass [{"type": "human", "content": "your question"}]'),
    "query": ("the question as a string",
              'pass {"query": "What learning rate did they use?"}'),
    "session_id": ("a session id (a string) or null", _NO_SESSION),
    "kb": ("a knowledge base name (a string) or null",
           'pass a name given to `scholarflow ingest --kb`, e.g. "lab"'),
    "doc_ids": ("a list of document ids", 'pass ["a74347d22dcc67aa"]'),
    "content": ("one document's text (a string) or null",
                "pass the text itself, or several documents as document_contents"),
    "document_contents": ("an object of {doc_id: text}",
                          'pass {"paper-1": "the text of paper 1"}'),
    "mode_type": ("an intent name (a string) or null", f"use one of {_INTENTS}"),
    "enable_web_search": ("true or false", "pass true or false"),
}


def validate_request_input(raw: object) -> InputState:
    """`raw` as the graph's input, checked; InvalidRequestError names the first wrong field."""
    if not isinstance(raw, Mapping):
        raise _refused(f'the input must be an object of fields, not {_kind(raw)}; '
                       'pass {"query": "your question"}')
    fields = input_fields()
    if unknown := [k for k in raw if k not in fields]:
        raise _refused(_unknown_field(unknown[0], fields))
    loose = _reducer_fields()  # validated by their reducer (e.g. add_messages coerces dicts)
    try:
        _adapter().validate_python({k: v for k, v in raw.items() if k not in loose},
                                   strict=True)
    except ValidationError as exc:
        raise _refused(_type_error(exc.errors()[0])) from None
    _check_text(_message_texts(raw.get("messages")))
    check_request_values(raw)
    return cast(InputState, dict(raw))


def check_request_values(request: Mapping[str, Any]) -> str | None:
    """What the types of a (type-checked) request do not say; returns the stripped query,
    None when the question is the last of `messages` (request_init checks that one).

    Also request_init's defence in depth: a state that skipped the graph's entry
    (`Command(update=...)`) is checked again there.
    """
    _check_text(_field_texts(request))
    query = request.get("query")
    if query is None and request.get("messages"):
        query = None
    elif query is None:
        raise _refused('query is missing; pass {"query": "your question"}, or the question '
                       'as a human message in messages')
    elif not isinstance(query, str) or not query.strip():
        raise _refused("query is empty; ask something, e.g. 'summarize this paper', or send "
                       "it as a human message in messages")
    else:
        query = query.strip()
    if session_id := request.get("session_id"):
        try:
            check_session_id(session_id)
        except ValueError as exc:
            raise _refused(f"session_id {_shown(session_id)} is not valid ({exc}); "
                           f"{_NO_SESSION}") from None
    if kb := request.get("kb"):
        try:
            check_kb_ref(kb)  # the knowledge bases' own rule
        except InvalidKnowledgeBaseNameError:
            raise _refused(f"kb {_shown(kb)} is not a knowledge base name; use 1-64 letters, "
                           "digits, '_' or '-', e.g. \"lab\", or PERSON/NAME for one "
                           "another person shares with you") from None
    _check_ids("doc_ids", list(request.get("doc_ids") or []))
    _check_ids("document_contents", list(request.get("document_contents") or {}))
    if mode := request.get("mode_type"):
        try:
            Intent.parse(mode)
        except ValueError:
            raise _refused(f"mode_type {_shown(mode)} is not an intent; use one of "
                           f"{_INTENTS}, or leave it out") from None
    return query


def _check_text(texts: Iterable[tuple[str, object]]) -> None:
    """Refuse text no store can keep: a NUL (PostgreSQL cannot store it in a checkpoint,
    and no text needs it), or a lone surrogate (not Unicode: it cannot be encoded as
    UTF-8, so saving or sending it fails mid-run; what decoding bytes as UTF-8 with
    errors="surrogateescape" leaves, or a JSON "\\ud800")."""
    for where, text in texts:
        if not isinstance(text, str):
            continue  # the types' check names it
        if "\x00" in text:
            raise _refused(f"{where} contains a NUL character (\\x00); remove it")
        if _SURROGATE.search(text) and (why := undecodable(text)):
            raise _refused(f"{where} is not valid Unicode text ({why}); decode it as "
                           'UTF-8 (errors="replace" keeps the rest) and send it again')


def _field_texts(request: Mapping[str, Any]) -> Iterator[tuple[str, object]]:
    """(where, text) for every text of a request but its messages."""
    for field in ("query", "content", "kb", "mode_type", "session_id"):
        yield field, request.get(field)
    doc_ids = request.get("doc_ids")
    if isinstance(doc_ids, list | tuple):
        yield from ((f"doc_ids[{i}]", doc_id) for i, doc_id in enumerate(doc_ids))
    contents = request.get("document_contents")
    if isinstance(contents, Mapping):
        for key, text in contents.items():
            yield f"a key of document_contents ({_shown(key)})", key
            if isinstance(key, str) and not undecodable(key):
                yield f"document_contents[{key!r}]", text


def _message_texts(messages: object) -> Iterator[tuple[str, object]]:
    """(where, text) for the text of each message as LangGraph accepts them: message
    objects, dicts, (role, content) pairs or strings; content a string or a list of parts."""
    if not isinstance(messages, list | tuple):
        return
    for i, message in enumerate(messages):
        if isinstance(message, str):
            content: object = message
        elif isinstance(message, Mapping):
            content = message.get("content")
        elif isinstance(message, list | tuple) and len(message) == 2:
            content = message[1]
        else:
            content = getattr(message, "content", None)
        parts = content if isinstance(content, list) else [content]
        for part in parts:
            text = part.get("text") if isinstance(part, Mapping) else part
            yield f"messages[{i}].content", text


def _check_ids(field: str, ids: list[Any]) -> None:
    if len(ids) > MAX_DOCUMENTS:
        raise _refused(f"{field} names {len(ids)} documents, at most {MAX_DOCUMENTS} per "
                       "request; ask about fewer, or pass kb without doc_ids for all of its "
                       "documents")
    if any(not isinstance(i, str) or not i.strip() for i in ids):
        raise _refused(f"{field} has an empty document id; {FIELD_HELP[field][1]}")


def _refused(problem: str) -> InvalidRequestError:
    return InvalidRequestError(f"invalid request: {problem}")


@cache
def input_fields() -> tuple[str, ...]:
    """InputState's fields, in their order."""
    return tuple(get_type_hints(InputState))


@cache
def _reducer_fields() -> frozenset[str]:
    """Input fields annotated with a reducer: LangGraph coerces what they are given."""
    found = set()
    for name, hint in get_type_hints(InputState, include_extras=True).items():
        while get_origin(hint) is NotRequired:
            hint = get_args(hint)[0]
        # Annotated[T, Field(...)] only describes; a reducer (or a DeltaChannel's) coerces.
        if get_origin(hint) is Annotated and any(
                callable(m) or isinstance(m, DeltaChannel) for m in hint.__metadata__):
            found.add(name)
    return frozenset(found)


@cache
def _adapter() -> TypeAdapter[InputState]:
    # pydantic reads NotRequired from state.py's string annotations; TypedDict's own
    # __required_keys__ cannot (PEP 563 on Python 3.11) and says every field is required.
    return TypeAdapter(InputState)


def _unknown_field(key: object, fields: tuple[str, ...]) -> str:
    close = difflib.get_close_matches(str(key), fields, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"unknown field {_shown(key)}{hint}; the fields are {', '.join(fields)}"


def _type_error(error: ErrorDetails) -> str:
    loc = error["loc"]
    field = str(loc[0]) if loc else "input"
    what, fix = FIELD_HELP.get(field, (f"as the graph's input schema says ({error['msg']})",
                                       "see the graph's input schema"))
    if error["type"] == "missing":
        return f"{field} is missing; {fix}"
    if len(loc) == 1:
        return f"{field} must be {what}, not {_kind(error['input'])}; {fix}"
    inner = loc[1:]
    if inner[-1] == "[key]":
        where = f"a key of {field}"
    else:
        where = field + "".join(f"[{part!r}]" for part in inner)
    return f"{field} must be {what}, but {where} is {_kind(error['input'])}; {fix}"


def _kind(value: object) -> str:
    """What a value is, in JSON's words."""
    if value is None:
        return "null"
    kinds: list[tuple[type | tuple[type, ...], str]] = [
        (bool, "a boolean"), ((int, float), "a number"), (str, "a string"),
        ((bytes, bytearray), "bytes"), (Mapping, "an object"), ((list, tuple), "a list"),
    ]
    return next((name for t, name in kinds if isinstance(value, t)),
                f"a {type(value).__name__}")


def _shown(value: object, limit: int = 40) -> str:
    """repr(value), shortened: one line even for a 10k-character id."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit - 5]}...{text[-2:]}"
