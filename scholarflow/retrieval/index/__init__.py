"""Knowledge-base backends: the embedded on-disk hybrid index and Elasticsearch."""

from __future__ import annotations

import re

from scholarflow.errors import InputError

# The knowledge base of `ingest`/`search` without --kb, and of stored documents named
# without one: the one definition.
DEFAULT_KB = "default"
_KB_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


class InvalidKnowledgeBaseNameError(InputError):
    """A knowledge base name that cannot name a folder or an index safely."""


def check_kb_name(name: str) -> str:
    """`name` if it is 1-64 ASCII letters, digits, '_' or '-'; else a clear error."""
    if not isinstance(name, str) or not _KB_NAME.fullmatch(name):
        raise InvalidKnowledgeBaseNameError(
            f"invalid knowledge base name {name!r}: use 1-64 letters, digits, '_' or '-'"
        )
    return name
