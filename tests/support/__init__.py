"""Test helpers: a scripted OpenAI-compatible server (see `fake_openai`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tests.support.fake_openai import FakeOpenAIServer, FakeStats

__all__ = ["FakeOpenAIServer", "FakeStats"]


def __getattr__(name: str) -> Any:
    # Imported lazily: an eager import would make `python -m
    # tests.support.fake_openai` warn that the module was already loaded.
    if name in __all__:
        from tests.support import fake_openai

        return getattr(fake_openai, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
