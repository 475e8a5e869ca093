"""The harness itself: a run forked from the fork server is the process a new interpreter
would be (argv bytes, stdio, environment, working directory, exit status), and every
scholarflow module is imported afresh in it."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.integration.hostile.harness import REPO, Result, base_env, fork_server, llm_env, run

PROBE = "tests.integration.hostile.process_probe"
ARGS: list[str | bytes] = ["plain", b"not \xff\xfe utf-8", b"surrogate \xed\xa0\x80", "中文",
                           "a\x1bb", ""]


def _both(args: list[str | bytes], env: dict[str, str], *, stdin: bytes = b"",
          cwd: Path = REPO) -> tuple[Result, Result]:
    server = fork_server()
    if server is None or not server.accepts(env):
        pytest.skip("runs are subprocesses here: nothing to compare")
    forked = run(args, env, stdin=stdin, cwd=cwd, module=PROBE)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SCHOLARFLOW_TEST_SUBPROCESS", "1")  # the same run, as a new interpreter
        fresh = run(args, env, stdin=stdin, cwd=cwd, module=PROBE)
    return forked, fresh


def _facts(result: Result) -> dict[str, Any]:
    assert result.stdout, result.describe()
    found: dict[str, Any] = json.loads(result.stdout.splitlines()[0])
    return found


def test_a_forked_run_starts_as_a_new_interpreter_would(tmp_path: Path) -> None:
    env = {**base_env(tmp_path / "home"), "PROBE_PGRP": str(os.getpgrp()),
           "OPENAI_API_KEY": "sk-probe", "EXTRA": "value with spaces \u00e9"}
    forked, fresh = _both([*ARGS], env, stdin=b"line one\n\xff\xfe raw\n", cwd=tmp_path)
    assert (forked.returncode, fresh.returncode) == (0, 0), forked.describe() + fresh.describe()
    assert _facts(forked) == _facts(fresh)
    assert forked.raw_stderr == fresh.raw_stderr  # the same bytes, escapes and all
    facts = _facts(forked)
    assert facts["scholarflow_loaded"] == []  # the run imports scholarflow itself
    assert facts["cwd"] == facts["path0"] == str(tmp_path)
    assert facts["env"] == env


@pytest.mark.parametrize(("args", "code"), [
    (["exit", "3"], 3), (["exit", "0"], 0), (["raise"], 1), (["kill"], -9),
])
def test_a_forked_run_ends_as_a_new_interpreter_would(args: list[str | bytes], code: int,
                                                      tmp_path: Path) -> None:
    env = {**base_env(tmp_path / "home"), "PROBE_PGRP": str(os.getpgrp())}
    forked, fresh = _both(args, env)
    assert forked.returncode == fresh.returncode == code, forked.describe() + fresh.describe()
    assert ("Traceback" in forked.stderr) == ("Traceback" in fresh.stderr) == (code == 1)
    assert forked.stderr.splitlines()[-1] == fresh.stderr.splitlines()[-1]


def test_a_run_over_its_time_is_killed(tmp_path: Path) -> None:
    if fork_server() is None:
        pytest.skip("runs are subprocesses here")
    with pytest.raises(subprocess.TimeoutExpired) as info:
        run(["sleep", "60"], base_env(tmp_path / "home"), timeout=3, module=PROBE)
    assert b'"argv"' in (info.value.output or b"")  # what it printed before, as subprocess


def test_the_cases_are_forked_and_other_interpreters_are_not(tmp_path: Path) -> None:
    server = fork_server()
    if server is None:
        pytest.skip("runs are subprocesses here")
    env = llm_env("http://u:pw@127.0.0.1:1/v1", tmp_path / "home", SCHOLARFLOW_LLM_TIMEOUT="1")
    assert server.accepts(env)  # what the cases set: forked
    assert not server.accepts({**env, "PYTHONIOENCODING": "latin-1"})  # read at start-up
    assert not server.accepts({**env, "LC_ALL": "C"})
    assert not server.accepts({**env, "OPENAI_LOG": "debug"})  # read by openai's import
    assert not server.accepts({**env, "EXTRA": b"bytes"})
