"""`scholarflow ... --server URL`: the command line as a lab server's client, as two people use it.

One real `langgraph dev` on the repository's langgraph.json with authentication
on, the embedded storage and the scripted model (tests/support/langgraph_dev.py,
as tests/integration/test_lab_server.py starts it). The operator adds ada and
bob with `scholarflow users add` on the server's data folder; each then runs
`scholarflow` as a new process on their own "laptop" (an empty data folder of
their own), with SCHOLARFLOW_SERVER or --server and their SCHOLARFLOW_TOKEN.
Every run is checked for a traceback and for any token in its output.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import EXAMPLES
from tests.integration.hostile.harness import Result, base_env, run
from tests.support.langgraph_dev import (
    LANGGRAPH,
    NO_CLI,
    REPO,
    Fake,
    Server,
    clean_env,
    free_port,
    start_fake,
    start_server,
    tail,
)

pytestmark = pytest.mark.skipif(LANGGRAPH is None, reason=NO_CLI)

EXIT_FAILED = 1
EXIT_BAD_REQUEST = 2
TIMEOUT = 180.0
LOCAL_INGEST_KEYS = ["doc_id", "title", "chunks", "tokens", "source", "status"]
# How a prompt names a document of ada's (en_sparse_attention.md) or bob's (en_retrieval_qa.md)
# that it quotes: the papers cite each other, so only the quoted document's title attribute
# says whose library was read.
ADA_MARK = 'title="AnchorWindow'
BOB_MARK = 'title="SectionRAG'
# Cited answers under six words: citation attribution (nodes/attribution.py) keeps them as
# they are.
Q_ADA = "What does the attention model keep from each section?"
A_ADA = "A window and anchors [1]."
Q_FOLLOW = "How wide is that window?"
A_FOLLOW = "256 tokens wide [1]."
Q_BOB = "How does the retriever split the papers?"
A_BOB = "Along section boundaries [1]."
WRONG_TOKEN = "sf_" + "W" * 43


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cli_remote")


@pytest.fixture(scope="module")
def fake(workdir: Path) -> Iterator[Fake]:
    with start_fake(workdir) as started:
        yield started


@pytest.fixture(scope="module")
def server(fake: Fake, workdir: Path) -> Iterator[Server]:
    with start_server(workdir, fake, auth=True, name="lab",
                      env={"SCHOLARFLOW_EMBEDDING_MODEL": "fake-embedding"}) as started:
        yield started


@pytest.fixture(scope="module")
def tokens(server: Server) -> dict[str, str]:
    found = {}
    for name in ("ada", "bob"):
        done = subprocess.run([sys.executable, "-m", "scholarflow.cli", "users", "add", name],
                              cwd=REPO, env=clean_env(server.home), capture_output=True,
                              text=True, timeout=60, check=False, stdin=subprocess.DEVNULL)
        assert done.returncode == 0, done.stderr
        found[name] = json.loads(done.stdout)["token"]
    return found


class Person:
    """One person's laptop: an empty data folder, the server's address and their token."""

    def __init__(self, server: Server, token: str | None, home: Path, all_tokens: list[str]):
        self.server = server
        self.home = home
        self.env = base_env(home)
        self.env["SCHOLARFLOW_SERVER"] = server.url
        if token is not None:
            self.env["SCHOLARFLOW_TOKEN"] = token
        self.secrets = [*all_tokens, WRONG_TOKEN]

    def __call__(self, *args: str, stdin: str = "", **env: str) -> Result:
        result = run(list(args), {**self.env, **env}, stdin=stdin.encode(), timeout=TIMEOUT)
        text = result.describe()
        assert "Traceback" not in result.stdout + result.stderr, text
        for secret in self.secrets:
            assert secret not in result.stdout + result.stderr, f"a token was printed\n{text}"
        return result

    def many(self, *calls: Sequence[str]) -> list[Result]:
        return at_once(*((self, call) for call in calls))


def at_once(*calls: tuple[Person, Sequence[str]]) -> list[Result]:
    """Independent runs, of one person or several, concurrently; results in the order given."""
    with ThreadPoolExecutor(max_workers=min(len(calls), 3)) as pool:
        return list(pool.map(lambda call: call[0](*call[1]), calls))


@pytest.fixture(scope="module")
def people(server: Server, tokens: dict[str, str], workdir: Path) -> dict[str, Person]:
    every = list(tokens.values())
    return {name: Person(server, token, workdir / f"{name}-laptop", every)
            for name, token in tokens.items()}


def lines(result: Result, code: int = 0) -> list[dict[str, Any]]:
    assert result.returncode == code, result.describe()
    return [json.loads(line) for line in result.stdout.splitlines()]


def one_error(result: Result, code: int, says: str) -> str:
    """The run's one `error:` line, on stderr's last line, saying `says`; nothing on stdout."""
    text = result.describe()
    assert result.returncode == code, text
    assert len(result.error_lines) == 1 and result.stdout == "", text
    assert result.stderr.rstrip("\n").splitlines()[-1] == result.error_lines[0], text
    assert says in result.error_lines[0], text
    return result.error_lines[0]


def script(fake: Fake, **config: Any) -> None:
    admin = fake.base_url.removesuffix("/v1") + "/_admin"
    httpx.post(f"{admin}/reset", timeout=10).raise_for_status()
    httpx.post(f"{admin}/config", json=config, timeout=10).raise_for_status()


def prompts(fake: Fake) -> list[str]:
    """Every LLM request the server made since the fake was scripted, its messages' text."""
    admin = fake.base_url.removesuffix("/v1") + "/_admin"
    stats = httpx.get(f"{admin}/stats", timeout=10).json()
    return ["\n".join(str(m.get("content")) for m in r["messages"]) for r in stats["requests"]]


@pytest.fixture(scope="module")
def papers(workdir: Path) -> Path:
    """ada's folder: two papers in subfolders, an empty file, a hidden one."""
    root = workdir / "papers"
    (root / "a").mkdir(parents=True)
    (root / "b").mkdir()
    shutil.copy(EXAMPLES / "en_sparse_attention.md", root / "a")
    shutil.copy(EXAMPLES / "zh_hybrid_retrieval.md", root / "b")
    (root / "empty.md").write_text("", encoding="utf-8")
    (root / ".draft.md").write_text("# Draft\n\nNot to be ingested.\n", encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def ingested(people: dict[str, Person], papers: Path) -> dict[str, Any]:
    """ada's folder into her "lab"; bob's one paper into his "lab"."""
    ada, bob = at_once((people["ada"], ["ingest", str(papers), "--kb", "lab"]),
                       (people["bob"], ["ingest", str(EXAMPLES / "en_retrieval_qa.md"),
                                        "--kb", "lab"]))
    return {"ada": ada, "bob": bob}


# --- ingest and kb -------------------------------------------------------------------------------


def test_ingest_over_http_prints_what_ingest_prints_here(
    people: dict[str, Person], ingested: dict[str, Any], papers: Path, fake: Fake,
    workdir: Path,
) -> None:
    """Expected: the two papers added (one JSON line each, the keys and values of a local
    ingest but `source`, the file's name), the empty file one `error:` line, the hidden
    file left out, exit 1 (some failed); again: both unchanged, and a third file with the
    name of one an error; nothing stored locally."""
    ada = ingested["ada"]
    added = lines(ada, EXIT_FAILED)
    assert [(r["source"], r["status"]) for r in added] == [
        ("en_sparse_attention.md", "added"), ("zh_hybrid_retrieval.md", "added")], added
    assert all(list(r) == LOCAL_INGEST_KEYS for r in added), added
    assert len(ada.error_lines) == 1 and "empty.md" in ada.error_lines[0], ada.describe()
    assert "Draft" not in ada.stdout + ada.stderr
    assert re.search(r"^ingest: uploading 3 file\(s\)", ada.stderr, re.MULTILINE), ada.describe()
    assert lines(ingested["bob"])[0]["status"] == "added"

    env = {**base_env(workdir / "local-laptop"), "OPENAI_BASE_URL": fake.base_url,
           "OPENAI_API_KEY": "dummy", "SCHOLARFLOW_EMBEDDING_MODEL": "fake-embedding"}
    local = run(["ingest", str(papers), "--kb", "lab"], env, timeout=TIMEOUT)
    here = lines(local, EXIT_FAILED)
    assert [{**r, "source": Path(r["source"]).name} for r in here] == added
    assert [line.endswith("empty.md is empty; give a file with some text")
            for line in local.error_lines + ada.error_lines] == [True, True], ada.describe()

    # Again, with another file of the same name: on the server it would replace the first.
    other = workdir / "other"
    other.mkdir()
    (other / "en_sparse_attention.md").write_text("# Another\n\nAnother paper.\n",
                                                  encoding="utf-8")
    second = people["ada"]("ingest", str(papers / "a"), str(papers / "b"), str(other),
                           "--kb", "lab")
    assert [(r["doc_id"], r["status"]) for r in lines(second, EXIT_FAILED)] == [
        (r["doc_id"], "unchanged") for r in added]
    assert len(second.error_lines) == 1 and "has the name of" in second.error_lines[0], (
        second.describe())
    assert not people["ada"].home.exists(), "the remote ingest stored something locally"


def test_kb_list_docs_share_remove_as_two_people(
    people: dict[str, Person], ingested: dict[str, Any], papers: Path
) -> None:
    """Expected: each lists and reads only their own "lab"; ada/lab is missing to bob until
    ada shares it, then readable, never writable; a removed document is gone."""
    ada, bob = people["ada"], people["bob"]
    ada_ids = [r["doc_id"] for r in lines(ingested["ada"], EXIT_FAILED)]
    bob_ids = [r["doc_id"] for r in lines(ingested["bob"])]
    ada_list, ada_docs = ada.many(["kb", "list"], ["kb", "docs", "lab"])
    bob_list = bob("kb", "list")
    assert [(k["name"], k["documents"], k["owner"], k["writable"]) for k in lines(ada_list)] == [
        ("lab", 2, "ada", True)]
    assert [(k["name"], k["documents"], k["owner"]) for k in lines(bob_list)] == [
        ("lab", 1, "bob")]
    docs = lines(ada_docs)
    assert [d["doc_id"] for d in docs] == ada_ids
    assert list(docs[0]) == ["doc_id", "title", "year", "pages", "chunks", "added", "authors",
                             "doi", "source"]
    one_error(bob("kb", "docs", "ada/lab"), EXIT_BAD_REQUEST, "no knowledge base 'ada/lab'")

    assert lines(ada("kb", "share", "lab", "--with", "bob")) == [
        {"kb": "lab", "readers": ["person:bob"]}]
    try:
        listed, read, removed = bob.many(
            ["kb", "list"], ["kb", "docs", "ada/lab"], ["kb", "remove", "ada/lab", ada_ids[0]])
        assert {k["name"]: k["writable"] for k in lines(listed)} == {"lab": True,
                                                                    "ada/lab": False}
        assert [d["doc_id"] for d in lines(read)] == ada_ids
        one_error(removed, EXIT_BAD_REQUEST, "only ada changes it")
        refused = bob("ingest", str(papers / "a"), "--kb", "ada/lab")
        one_error(refused, EXIT_BAD_REQUEST, "only ada changes it")
    finally:
        assert lines(ada("kb", "share", "lab", "--with", "bob", "--revoke"))[0]["readers"] == []
    assert [d["doc_id"] for d in lines(ada("kb", "docs", "lab"))] == ada_ids

    scratch = lines(ada("ingest", str(EXAMPLES / "zh_multidoc_summary.md"), "--kb", "scratch"))
    gone = scratch[0]["doc_id"]
    removed, missing = ada.many(["kb", "remove", "scratch", gone], ["kb", "remove", "lab", "nope"])
    assert lines(removed) == [{"doc_id": gone, "kb": "scratch", "status": "removed"}]
    one_error(missing, EXIT_BAD_REQUEST, "knowledge base 'lab' has no document 'nope'")
    assert lines(ada("kb", "docs", "scratch")) == []
    assert bob_ids and not set(bob_ids) & set(ada_ids)


# --- ask and sessions ----------------------------------------------------------------------------


def session_of(result: Result) -> str:
    found = re.findall(r"^session (\S+) · ", result.stderr, re.MULTILINE)
    assert len(found) == 1, result.describe()
    return str(found[0])


def test_ask_on_the_server_and_each_persons_sessions(
    people: dict[str, Person], ingested: dict[str, Any], fake: Fake
) -> None:
    """Expected: the answer streams on stdout and the thinking on stderr, from the person's own
    library; --session continues the thread (its --json events end in final_answer); each
    person lists, shows and deletes only their own sessions."""
    ada, bob = people["ada"], people["bob"]
    script(fake, rules=[{"match": re.escape(q), "role": "last_user", "reply": a}
                        for q, a in [(Q_ADA, A_ADA), (Q_FOLLOW, A_FOLLOW), (Q_BOB, A_BOB)]])
    first = ada("ask", Q_ADA, "--kb", "lab", "--mode", "LITERATURE_QA")
    assert first.returncode == 0 and first.stdout.strip() == A_ADA, first.describe()
    assert [line for line in first.stderr.splitlines() if line.startswith("· ")], first.describe()
    session = session_of(first)
    sent = prompts(fake)
    assert any(ADA_MARK in p for p in sent) and not any(BOB_MARK in p for p in sent)

    theirs = bob("ask", Q_BOB, "--kb", "lab", "--mode", "LITERATURE_QA", "--no-thinking",
                 "--server", ada.server.url)
    assert theirs.returncode == 0 and theirs.stdout.strip() == A_BOB, theirs.describe()
    assert not [line for line in theirs.stderr.splitlines() if line.startswith("·")]
    bobs_prompts = prompts(fake)[len(sent):]
    assert any(BOB_MARK in p for p in bobs_prompts)
    assert not any(ADA_MARK in p for p in bobs_prompts)

    follow = ada("ask", Q_FOLLOW, "--kb", "lab", "--mode", "LITERATURE_QA", "--session",
                 session, "--json")
    events = lines(follow)
    assert follow.stderr == "", follow.describe()
    assert events[-1]["type"] == "final_answer" and events[-1]["session_id"] == session
    assert "".join(e["content"] for e in events if e["type"] == "answer_chunk") == A_FOLLOW
    # The session's first turn went into the follow-up's prompts: the thread was continued.
    assert any(Q_FOLLOW in p and Q_ADA in p and A_ADA in p for p in prompts(fake))

    mine, shown, bobs, peek, push = at_once(
        (ada, ["sessions", "list"]), (ada, ["sessions", "show", session]),
        (bob, ["sessions", "list"]), (bob, ["sessions", "show", session]),
        (bob, ["ask", "And then?", "--session", session]))
    listed = {s["session_id"]: s for s in lines(mine)}
    assert listed[session]["message_count"] == 4 and listed[session]["title"], listed
    assert session not in {s["session_id"] for s in lines(bobs)}
    assert session_of(theirs) in {s["session_id"] for s in lines(bobs)}
    messages = lines(shown)
    assert [(m["type"], m["content"]) for m in messages] == [
        ("USER", Q_ADA), ("ASSISTANT", A_ADA), ("USER", Q_FOLLOW), ("ASSISTANT", A_FOLLOW)]
    one_error(peek, EXIT_BAD_REQUEST, f"no session '{session}' of yours")
    one_error(push, EXIT_BAD_REQUEST, f"no session '{session}' of yours")
    one_error(bob("sessions", "delete", session), EXIT_BAD_REQUEST, "no session")

    assert lines(ada("sessions", "delete", session)) == [{"deleted": session}]
    after, gone = ada.many(["sessions", "list"], ["sessions", "show", session])
    assert session not in {s["session_id"] for s in lines(after)}
    one_error(gone, EXIT_BAD_REQUEST, "no session")
    one_error(ada("sessions", "show", "my-notes"), EXIT_BAD_REQUEST, "is no session of")


def test_a_paused_run_says_how_to_resume_it(
    people: dict[str, Person], ingested: dict[str, Any], fake: Fake
) -> None:
    """Expected: --review-plan with no answer on standard input: exit 2, one error line
    naming `scholarflow resume ID --server URL`; that command, approving, answers."""
    ada = people["ada"]
    script(fake, rules=[{"match": re.escape(Q_ADA), "role": "last_user", "reply": A_ADA}])
    paused = ada("ask", Q_ADA, "--kb", "lab", "--mode", "LITERATURE_QA", "--review-plan",
                 "--no-thinking")
    line = one_error(paused, EXIT_BAD_REQUEST, "no answer to the plan review")
    found = re.search(r"`scholarflow resume (\S+) --server (\S+)` continues it", line)
    assert found and found[2] == ada.server.url, line
    assert "plan for review" in paused.stderr and "sub-questions:" in paused.stderr
    resumed = ada("resume", found[1], "--no-thinking", stdin="\n")
    assert resumed.returncode == 0 and resumed.stdout.strip() == A_ADA, resumed.describe()
    assert session_of(resumed) == found[1]
    one_error(ada("resume", found[1]), EXIT_BAD_REQUEST, "has no unfinished run")


def test_a_file_given_directly_goes_with_the_question(
    people: dict[str, Person], ingested: dict[str, Any], fake: Fake
) -> None:
    """Expected: `--file` sends the file's text (document_contents): the answer's prompt
    quotes bob's paper, given by ada, who has no such paper on the server."""
    script(fake, rules=[{"match": re.escape(Q_BOB), "role": "last_user", "reply": A_BOB}])
    events = lines(people["ada"]("ask", Q_BOB, "--file", str(EXAMPLES / "en_retrieval_qa.md"),
                                 "--mode", "LITERATURE_QA", "--json"))
    assert events[-1]["type"] == "final_answer" and events[-1]["answer"] == A_BOB, events[-1]
    started = next(e for e in events
                   if e["type"] == "node_complete" and e.get("node") == "request_init")
    assert started["documents"] == 1, started
    assert any(BOB_MARK in p for p in prompts(fake))


# --- what goes wrong -----------------------------------------------------------------------------


def test_a_wrong_token_or_server_is_one_line(
    people: dict[str, Person], server: Server, tokens: dict[str, str]
) -> None:
    """Expected: a refused token, no token, a server that is not there, an address that is
    no scholarflow server, --server on an operator's command: one line and exit 2 (1 for a
    server that cannot be reached); no token in any output or in the server's log."""
    ada = people["ada"]
    wrong = dict(SCHOLARFLOW_TOKEN=WRONG_TOKEN)
    refused = [ada("kb", "list", **wrong), ada("ask", "Hello there", **wrong),
               ada("sessions", "list", **wrong), ada("ingest", str(EXAMPLES), **wrong)]
    for result in refused:
        one_error(result, EXIT_BAD_REQUEST, "the server refused the token in SCHOLARFLOW_TOKEN")
    none = Person(server, None, ada.home, ada.secrets)
    one_error(none("kb", "list"), EXIT_BAD_REQUEST, "asks for a token: set SCHOLARFLOW_TOKEN")
    away = f"http://127.0.0.1:{free_port()}"
    one_error(ada("sessions", "list", "--server", away), EXIT_FAILED,
              f"cannot reach the server at {away}")
    one_error(ada("kb", "list", SCHOLARFLOW_SERVER=away), EXIT_FAILED, "cannot reach")
    one_error(ada("--server", server.url, "users", "list"), EXIT_BAD_REQUEST,
              "`users` runs on this machine only")
    one_error(ada("kb", "list", "--server", f"http://ada:{tokens['ada']}@127.0.0.1:1"),
              EXIT_BAD_REQUEST, "with a user or password in it")
    one_error(ada("kb", "list", SCHOLARFLOW_TOKEN="two words"), EXIT_BAD_REQUEST,
              "SCHOLARFLOW_TOKEN holds spaces")
    log = tail(server.log, 1_000_000)
    for name, token in tokens.items():
        assert token not in log, f"{name}'s token is in the server's log"
