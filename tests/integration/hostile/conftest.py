"""Fixtures of the hostile suite: a seeded home (one session, one knowledge base) per case."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.hostile.harness import Seeded, copy_seeded, seed
from tests.support import FakeOpenAIServer


@pytest.fixture(scope="session")
def seeded_template(llm_server: FakeOpenAIServer,
                    tmp_path_factory: pytest.TempPathFactory) -> Seeded:
    llm_server.reset()
    return seed(llm_server.base_url, tmp_path_factory.mktemp("hostile-seed") / "home")


@pytest.fixture
def seeded(seeded_template: Seeded, llm_server: FakeOpenAIServer, tmp_path: Path) -> Seeded:
    """A fresh copy of the seeded home for one case, and the scripted server reset."""
    llm_server.reset()
    return copy_seeded(seeded_template, tmp_path / "home")
