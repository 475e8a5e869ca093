"""The five intents of a request, shared by recognition, routing and prompts."""

from __future__ import annotations

from enum import StrEnum


class Intent(StrEnum):
    SIMPLE_INTERACTION = "SIMPLE_INTERACTION"
    LITERATURE_SUMMARY = "LITERATURE_SUMMARY"
    REVIEW_GENERATION = "REVIEW_GENERATION"
    PAPER_REVIEW = "PAPER_REVIEW"
    LITERATURE_QA = "LITERATURE_QA"

    @classmethod
    def parse(cls, value: str) -> Intent:
        """The intent named by `value` (case and surrounding space ignored).

        Raises ValueError with the accepted names when `value` names none.
        """
        key = value.strip().upper().replace("-", "_").replace(" ", "_")
        try:
            return cls(key)
        except ValueError:
            names = ", ".join(i.value for i in cls)
            raise ValueError(f"unknown intent {value!r}; use one of: {names}") from None
