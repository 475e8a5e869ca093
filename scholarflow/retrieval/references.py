"""Whether a question is about what a paper cites: only then does recall serve reference lists.

A reference list matches almost any query by its words (titles of other
papers) and answers none about the paper's own content, so it is left out of
recall (`RecallParams.include_references`) unless the question asks for it.
"""

from __future__ import annotations

import re

__all__ = ["asks_about_references"]

_ABOUT_REFERENCES = re.compile(
    r"\b(?:cit(?:e|es|ed|ing|ation|ations)|references?|referenced|bibliograph\w*|"
    r"reference list|works cited|prior work they build on)\b"
    r"|参考文献|引用|引文|文献列表",
    re.IGNORECASE,
)


def asks_about_references(query: str) -> bool:
    """True when the question names citations, references or a bibliography."""
    return _ABOUT_REFERENCES.search(query) is not None
