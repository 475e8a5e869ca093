"""A reader that goes away, and a data folder that is a file.

`scholarflow search ... | head -1`: the reader closes the pipe while the command
still writes. Unix tools stop quietly then (SIGPIPE): no `error:` line, no
traceback, no "Exception ignored" from the interpreter's flush at exit; the
exit code is the shell's 141 (128 + SIGPIPE). What was stored before stays.

A SCHOLARFLOW_HOME that is a file (or inside one) is one line naming the setting
and what to do, whatever the command: a command that only reads (search, route)
must not send the user to create a knowledge base where none can be.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from scholarflow.cli.main import EXIT_PIPE_CLOSED
from tests.integration.hostile.harness import (
    EXAMPLES,
    EXIT_BAD_REQUEST,
    REPO,
    SEED_KB,
    TIMEOUT,
    Seeded,
    assert_clean_error,
    assert_intact,
    llm_env,
    run,
)
from tests.support import FakeOpenAIServer

PIPED = [
    ("search", ["search", "retrieval", "--kb", SEED_KB, "--top-n", "200"]),
    ("sessions-list", ["sessions", "list"]),
    ("ingest", ["ingest", str(EXAMPLES), "--kb", "more"]),
    ("ask-json", ["ask", "What does the paper propose?", "--kb", SEED_KB, "--json"]),
]


@pytest.mark.parametrize("args", [c[1] for c in PIPED], ids=[c[0] for c in PIPED])
def test_a_reader_that_goes_away_ends_the_command_quietly(
    args: list[str], seeded: Seeded, llm_server: FakeOpenAIServer
) -> None:
    # A real process (not the fork server): its stdout is a pipe whose reader we close
    # before it writes, so every write it makes meets the closed pipe.
    proc = subprocess.Popen(
        [sys.executable, "-m", "scholarflow.cli", *args], cwd=REPO,
        env=llm_env(llm_server.base_url, seeded.home), stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    try:
        stderr = proc.stderr.read().decode(errors="replace")
        code = proc.wait(timeout=TIMEOUT)
    finally:
        proc.kill()
        proc.stderr.close()
    assert code == EXIT_PIPE_CLOSED, (code, stderr)  # each of these commands writes
    for said in ("error:", "Traceback", "Exception ignored", "BrokenPipe", "Broken pipe"):
        assert said not in stderr, stderr
    assert_intact(seeded)


HOME_COMMANDS = [
    ("search", ["search", "retrieval", "--kb", SEED_KB]),
    ("search-default", ["search", "retrieval"]),
    ("route", ["route", "what does it propose?", "--kb", SEED_KB]),
    ("sessions-list", ["sessions", "list"]),
    ("ingest", ["ingest", str(EXAMPLES / "en_retrieval_qa.md")]),
]


@pytest.mark.parametrize("inside", [False, True], ids=["home-is-a-file", "home-inside-a-file"])
@pytest.mark.parametrize("args", [c[1] for c in HOME_COMMANDS], ids=[c[0] for c in HOME_COMMANDS])
def test_a_home_that_is_a_file_is_named_with_the_fix(
    args: list[str], inside: bool, tmp_path: Path, llm_server: FakeOpenAIServer
) -> None:
    blocker = tmp_path / "home"
    blocker.write_text("not a folder\n")
    home = blocker / "sub" if inside else blocker
    result = run(args, llm_env(llm_server.base_url, home))
    line = assert_clean_error(result, exit_code=EXIT_BAD_REQUEST,
                              names=("SCHOLARFLOW_HOME", "point SCHOLARFLOW_HOME at a folder"))
    assert ("inside" in line) == inside, line
    assert blocker.read_text() == "not a folder\n"  # the file is left as it was
