"""Fixtures the unit tests of knowledge bases share."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from scholarflow.retrieval.kb_registry import close_all


@pytest.fixture
async def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Path]:
    """An empty embedded data folder (no Elasticsearch); open knowledge bases closed after."""
    monkeypatch.setenv("SCHOLARFLOW_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("SCHOLARFLOW_ES_URL", raising=False)
    yield tmp_path / "home"
    await close_all()
