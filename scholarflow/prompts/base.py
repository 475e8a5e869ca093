"""A prompt template whose variables are checked when it is defined and when it is filled."""

from __future__ import annotations

import string
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class PromptTemplate:
    name: str
    template: str
    variables: frozenset[str]

    def __post_init__(self) -> None:
        found = {f for _, f, _, _ in string.Formatter().parse(self.template) if f}
        if found != self.variables:
            raise ValueError(
                f"prompt {self.name}: template uses {sorted(found)}, "
                f"declared {sorted(self.variables)}"
            )

    def format(self, **values: object) -> str:
        given = set(values)
        if given != self.variables:
            missing = sorted(self.variables - given)
            extra = sorted(given - self.variables)
            raise ValueError(f"prompt {self.name}: missing {missing}, unexpected {extra}")
        return self.template.format(**values)


def prompt(name: str, template: str, *variables: str) -> PromptTemplate:
    return PromptTemplate(name=name, template=template, variables=frozenset(variables))
