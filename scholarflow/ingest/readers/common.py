"""What every reader says the same way: the one-line errors."""

from __future__ import annotations

from scholarflow.ingest.documents import DocumentError

__all__ = ["too_many_pages", "unreadable"]


def unreadable(shown: str, exc: BaseException) -> DocumentError:
    reason = " ".join(str(exc).split()) or type(exc).__name__
    return DocumentError(f"{shown} is not a readable PDF ({reason[:200]}): re-export it as PDF, "
                         "or give its text as a .txt or .md file")


def too_many_pages(shown: str, count: int) -> DocumentError:
    from scholarflow.ingest.readers import MAX_PAGES

    return DocumentError(f"{shown} has {count:,} pages, more than the {MAX_PAGES:,} a document "
                         "may have: split it, or give its text as a .txt or .md file")
