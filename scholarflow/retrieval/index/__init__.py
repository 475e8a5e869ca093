"""Knowledge-base backends: the embedded on-disk hybrid index and Elasticsearch."""

from __future__ import annotations

import re

from scholarflow.errors import InputError

# The knowledge base of `ingest`/`search` without --kb, and of stored documents named
# without one: the one definition.
DEFAULT_KB = "default"
_KB_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
# A person's knowledge base on a server is stored as "<person>.<name>" (retrieval/owners.py);
# a person names another's, shared with them, "<person>/<name>". Names of people:
# scholarflow/storage/people.py.
_PERSON = r"[a-z][a-z0-9_-]{0,31}"
_STORED_NAME = re.compile(rf"(?:{_PERSON}\.)?[A-Za-z0-9_-]{{1,64}}")
_KB_REF = re.compile(rf"(?:{_PERSON}/)?[A-Za-z0-9_-]{{1,64}}")


class InvalidKnowledgeBaseNameError(InputError):
    """A knowledge base name that cannot name a folder or an index safely."""


def check_kb_name(name: str) -> str:
    """`name` if it is 1-64 ASCII letters, digits, '_' or '-'; else a clear error."""
    if not isinstance(name, str) or not _KB_NAME.fullmatch(name):
        raise InvalidKnowledgeBaseNameError(
            f"invalid knowledge base name {name!r}: use 1-64 letters, digits, '_' or '-'"
        )
    return name


def check_stored_name(name: str) -> str:
    """`name` if it names a stored knowledge base: a name, or "<person>.<name>"."""
    if not isinstance(name, str) or not _STORED_NAME.fullmatch(name):
        raise InvalidKnowledgeBaseNameError(
            f"invalid knowledge base name {name!r}: use 1-64 letters, digits, '_' or '-'"
        )
    return name


def check_kb_ref(ref: str) -> str:
    """`ref` if it is a knowledge base name, or "<person>/<name>" for another's."""
    if not isinstance(ref, str) or not _KB_REF.fullmatch(ref):
        raise InvalidKnowledgeBaseNameError(
            f"invalid knowledge base name {ref!r}: use 1-64 letters, digits, '_' or '-', or "
            "PERSON/NAME for a knowledge base another person shares with you"
        )
    return ref
