"""Reading order on a page: columns top to bottom, left to right."""

from __future__ import annotations

from scholarflow.ingest.readers import Line, PageText

__all__ = ["reading_order"]


def reading_order(page: PageText, lines: list[Line]) -> list[Line]:
    return lines
