"""Hostile requests on the command line: bad arguments get one line and exit 2."""

from __future__ import annotations

from tests.hostile.harness import (
    EXIT_BAD_REQUEST,
    Seeded,
    assert_clean_error,
    assert_intact,
    assert_no_secret,
    llm_env,
    run,
)
from scholarflow.testing import FakeOpenAIServer


def test_unknown_session_id_format(seeded: Seeded, llm_server: FakeOpenAIServer) -> None:
    result = run(["sessions", "show", "no-such-session"], llm_env(llm_server.base_url, seeded.home))
    assert_clean_error(result, exit_code=EXIT_BAD_REQUEST, names=["sessions list"])
    assert_no_secret(seeded.home, result.stdout, result.stderr)
    assert_intact(seeded)
