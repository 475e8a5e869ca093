"""Hostile library management: `ingest` killed with -9 at random moments and run again,
two `ingest` processes into one knowledge base at once, `kb remove` while searches run,
and the `kb` commands given what does not exist. Nothing lost, nothing duplicated, no half
document, one clear line each."""

from __future__ import annotations

import asyncio
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import closing, suppress
from pathlib import Path

import pytest

from scholarflow.retrieval.kb import RecallParams
from tests.integration.hostile.harness import (
    EXAMPLES,
    EXIT_BAD_REQUEST,
    REPO,
    SEED_KB,
    TIMEOUT,
    Seeded,
    assert_clean_error,
    assert_clean_success,
    assert_intact,
    llm_env,
    run,
)
from tests.support import FakeOpenAIServer

PAPERS = sorted(EXAMPLES.glob("*.md"))
FILES = 24


def _folder(tmp_path: Path, count: int = FILES, name: str = "papers") -> Path:
    """`count` distinct Markdown papers (variants of the examples)."""
    folder = tmp_path / name
    folder.mkdir()
    texts = [p.read_text(encoding="utf-8") for p in PAPERS]
    for i in range(count):
        (folder / f"{i:02d}.md").write_text(f"{texts[i % len(texts)]}\n\nVariant {i}.\n",
                                            encoding="utf-8")
    return folder


def _start_ingest(paths: list[Path], env: dict[str, str], kb: str) -> subprocess.Popen[str]:
    """A real process (its pid is what kill -9 needs), not a fork-server run."""
    return subprocess.Popen(
        [sys.executable, "-m", "scholarflow.cli", "ingest", *map(str, paths), "--kb", kb],
        env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        encoding="utf-8")


def _whole_documents(db: Path) -> dict[str, int]:
    """doc_id -> chunks, after checking every document is whole: its text, all its chunks,
    no chunk without its document, each chunk once."""
    with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        docs = dict(conn.execute("SELECT doc_id, chunks FROM documents").fetchall())
        chunks = dict(conn.execute("SELECT doc_id, COUNT(*) FROM chunks GROUP BY doc_id"))
        texts = [row[0] for row in conn.execute("SELECT doc_id FROM texts")]
        ids = [row[0] for row in conn.execute("SELECT chunk_id FROM chunks")]
    assert chunks == {d: n for d, n in docs.items() if n}, "a half document or orphan chunks"
    assert sorted(texts) == sorted(docs) and len(ids) == len(set(ids))
    return docs


def test_ingest_killed_at_random_moments_finishes_on_rerun(
    llm_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    env = llm_env(llm_server.base_url, tmp_path / "home")
    folder = _folder(tmp_path)
    db = tmp_path / "home" / "kb" / "killed" / "index.sqlite"
    seed = int(os.environ.get("SCHOLARFLOW_TEST_SEED", time.time_ns()))
    rng = random.Random(seed)  # a failure names it: SCHOLARFLOW_TEST_SEED replays the kills
    stored_counts = []
    for round_ in range(4):
        proc = _start_ingest([folder], env, "killed")
        assert proc.stdout is not None
        if round_ == 0:  # anywhere in start-up (imports, the tokenizer's dictionary) or after
            time.sleep(rng.uniform(0.5, 8.0))
        else:  # once this run adds files (~20 a second here), within the next few
            while (line := proc.stdout.readline()) and '"status": "added"' not in line:
                pass
            time.sleep(rng.uniform(0.0, 0.3))
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=TIMEOUT)
        # A quick machine may finish a round before its kill comes (round 0 waits up to
        # 8 s): such a run must have succeeded; every other round was really killed.
        assert proc.returncode in (-signal.SIGKILL, 0), f"seed {seed}"
        stored_counts.append(len(_whole_documents(db)) if db.exists() else 0)
    # nothing stored was lost by a kill
    assert stored_counts == sorted(stored_counts), f"seed {seed}: {stored_counts}"
    before = _whole_documents(db) if db.exists() else {}
    again = run(["ingest", str(folder), "--kb", "killed"], env)
    assert_clean_success(again)
    statuses = [line for line in again.stdout.splitlines() if line.startswith("{")]
    assert sum('"status": "unchanged"' in s for s in statuses) == len(before)  # not redone
    assert sum('"status": "added"' in s for s in statuses) == FILES - len(before)
    after = _whole_documents(db)
    assert len(after) == FILES and before.items() <= after.items()


def test_two_ingests_into_one_knowledge_base_at_once(
    llm_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    env = llm_env(llm_server.base_url, tmp_path / "home")
    files = sorted(_folder(tmp_path).glob("*.md"))
    # Overlapping halves: the middle third is ingested by both, at about the same time.
    first = _start_ingest(files[: 2 * FILES // 3], env, "shared")
    second = _start_ingest(files[FILES // 3:], env, "shared")
    outputs = [p.communicate(timeout=4 * TIMEOUT) for p in (first, second)]
    for proc, (_out, err) in zip((first, second), outputs, strict=True):
        assert proc.returncode == 0, err
        assert "Traceback" not in err and "error:" not in err, err
    docs = _whole_documents(tmp_path / "home" / "kb" / "shared" / "index.sqlite")
    assert len(docs) == FILES  # every file once: none lost, none twice
    added = sum(out.count('"status": "added"') for out, _ in outputs)
    assert added == FILES  # a file both took is added by one, "unchanged" for the other


def test_kb_remove_during_searches(
    llm_server: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    env = llm_env(llm_server.base_url, home)
    assert_clean_success(run(["ingest", *map(str, PAPERS), "--kb", "lib"], env))
    docs = _whole_documents(home / "kb" / "lib" / "index.sqlite")
    victim = next(iter(docs))
    for key in [k for k in os.environ if k.startswith(("SCHOLARFLOW_", "OPENAI_"))]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("SCHOLARFLOW_HOME", str(home))
    from tests.support.embeddings import HashingEmbedder

    async def search_while_removing() -> list[set[str]]:
        from scholarflow.retrieval.kb_registry import close_all, open_knowledge_base

        kb = await open_knowledge_base("lib", embedder=_same_embedder(HashingEmbedder()))
        params = RecallParams(top_n=50, similarity_threshold=-1.0)
        seen: list[set[str]] = []
        remover = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "scholarflow.cli", "kb", "remove", "lib", victim,
            env=env, cwd=REPO, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        try:
            while remover.returncode is None:
                hits = await kb.search("attention retrieval model", doc_ids=None, params=params)
                seen.append({h.doc_id for h in hits})
                with suppress(TimeoutError):  # lets the remover's exit be noticed
                    await asyncio.wait_for(remover.wait(), 0.001)
            _out, err = await remover.communicate()
            assert remover.returncode == 0, err
            seen.append({h.doc_id for h in await kb.search(
                "attention retrieval model", doc_ids=None, params=params)})
        finally:
            await close_all()
        return seen

    seen = asyncio.run(search_while_removing())
    assert len(seen) >= 2 and victim in seen[0] and victim not in seen[-1]
    others = set(docs) - {victim}
    assert all(s - {victim} == others for s in seen)  # the others never flickered
    assert set(_whole_documents(home / "kb" / "lib" / "index.sqlite")) == others


def _same_embedder(embedder: object) -> object:
    """The scripted server's vectors for "fake-embedding", made in-process."""
    embedder.name = "openai/fake-embedding"  # type: ignore[attr-defined]
    return embedder


@pytest.mark.parametrize(("args", "names"), [
    (["kb", "docs", "nosuch"], ["no knowledge base 'nosuch'", "ingest"]),
    (["kb", "remove", "nosuch", "abc"], ["no knowledge base 'nosuch'"]),
    (["kb", "remove", SEED_KB, "no-such-doc"], ["no document 'no-such-doc'", "kb docs"]),
    (["kb", "docs", "../etc"], ["invalid knowledge base name"]),
    (["kb", "remove", "bad name!", "x"], ["invalid knowledge base name"]),
])
def test_kb_commands_on_what_does_not_exist(
    seeded: Seeded, llm_server: FakeOpenAIServer, args: list[str], names: list[str]
) -> None:
    result = run(args, llm_env(llm_server.base_url, seeded.home))
    assert_clean_error(result, exit_code=EXIT_BAD_REQUEST, names=names)
    assert_intact(seeded)
