"""`scholarflow ingest` and `scholarflow search`, run as real subprocesses.

Embeddings come from the scripted server (`SCHOLARFLOW_EMBEDDING_MODEL` set),
so no local model loads; its vectors are character n-gram hashes, so the
queries here are found by their words (BM25) more than by meaning.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from scholarflow.retrieval.index.embedded import DB_FILENAME
from tests.conftest import EXAMPLES
from tests.integration.test_cli import (
    REPO,
    TIMEOUT,
    Result,
    assert_one_error_line,
    base_env,
    run,
    run_many,
)
from tests.support import FakeOpenAIServer
from tests.unit.test_ingest import PAGE_1, PAGE_2, make_pdf

PAPERS = sorted(EXAMPLES.glob("*.md"))
DOC_KEYS = {"doc_id", "title", "chunks", "tokens", "source", "status"}
HIT_KEYS = {"doc_id", "chunk_id", "score", "text", "title", "heading", "page", "kind"}


def kb_env(server: FakeOpenAIServer, home: Path) -> dict[str, str]:
    # The key makes an LLM configured, so `search` asks it for a translation: the scripted
    # server (its default reply, "ok: <query>", changes no ranking these tests check).
    return {**base_env(home), "SCHOLARFLOW_EMBEDDING_MODEL": "fake-embedding",
            "SCHOLARFLOW_EMBEDDING_BASE_URL": server.base_url, "OPENAI_API_KEY": "dummy",
            "OPENAI_BASE_URL": server.base_url}


@dataclass(frozen=True)
class Ingested:
    env: dict[str, str]
    first: Result
    ids: dict[str, str]  # file name -> doc_id


@pytest.fixture(scope="module")
def ingested(llm_server: FakeOpenAIServer, tmp_path_factory: pytest.TempPathFactory) -> Ingested:
    env = kb_env(llm_server, tmp_path_factory.mktemp("kb") / "home")
    first = run(["ingest", *map(str, PAPERS)], env)
    assert first.returncode == 0, first.describe()
    ids = {Path(d["source"]).name: d["doc_id"] for d in first.json_lines()}
    return Ingested(env, first, ids)


def hits(result: Result) -> list[dict[str, Any]]:
    assert result.returncode == 0, result.describe()
    found = result.json_lines()
    for hit in found:
        assert hit.keys() == HIT_KEYS
    assert [h["score"] for h in found] == sorted((h["score"] for h in found), reverse=True)
    return found


def test_ingest_prints_one_line_per_document(ingested: Ingested) -> None:
    lines = ingested.first.json_lines()
    assert [Path(d["source"]).name for d in lines] == [p.name for p in PAPERS]
    for doc in lines:
        assert doc.keys() == DOC_KEYS and doc["status"] == "added"
        assert len(doc["doc_id"]) == 16 and doc["chunks"] > 1 and doc["tokens"] > 500
    assert lines[-1]["title"] == "大语言模型多文档摘要中的分组合并策略"
    # No terminal: no progress bar, only a plain progress line each PLAIN_EVERY seconds
    # (none when the ingest is quicker than that, some on a busy machine).
    progress = re.compile(r"ingest: \d+/4 files, \d+ chunks, [\d.]+ chunks/s, [^\r\x1b]+")
    assert all(progress.fullmatch(line) for line in ingested.first.stderr.splitlines())


def test_reingest_changes_nothing(ingested: Ingested, llm_server: FakeOpenAIServer) -> None:
    query = ["search", "sparse attention memory"]
    before = run(query, ingested.env)
    calls = llm_server.stats().embedding_calls
    again = run(["ingest", str(EXAMPLES)], ingested.env)  # the folder: the same four files
    assert again.returncode == 0, again.describe()
    assert [d["status"] for d in again.json_lines()] == ["unchanged"] * 4
    assert [(d["doc_id"], d["chunks"], d["tokens"]) for d in again.json_lines()] == [
        (d["doc_id"], d["chunks"], d["tokens"]) for d in ingested.first.json_lines()]
    assert llm_server.stats().embedding_calls == calls  # nothing was embedded again
    assert run(query, ingested.env).stdout == before.stdout


def test_search_english_and_chinese(ingested: Ingested) -> None:
    english, chinese, only_one = run_many([
        # The fake vectors are noise and the best cosine scores the whole vector weight
        # (hybrid.py), so the question has enough words for BM25 to decide.
        (["search", "How much GPU memory does AnchorWindow save compared with full attention?",
          "--top-n", "3"], ingested.env),
        (["search", "向量权重 α 取多少效果最好", "--top-n", "3"], ingested.env),
        (["search", "retrieval", "--doc", ingested.ids["zh_hybrid_retrieval.md"]], ingested.env),
    ])
    found = hits(english)
    assert 0 < len(found) <= 3
    assert found[0]["doc_id"] == ingested.ids["en_sparse_attention.md"]
    assert found[0]["chunk_id"].startswith(found[0]["doc_id"] + ":")
    assert found[0]["title"].startswith("AnchorWindow") and found[0]["page"] is None
    top = hits(chinese)[0]
    assert top["doc_id"] == ingested.ids["zh_hybrid_retrieval.md"]
    assert "α" in top["text"] and top["heading"]
    assert {h["doc_id"] for h in hits(only_one)} == {ingested.ids["zh_hybrid_retrieval.md"]}


def test_search_adds_the_llm_translation_of_the_query(
        ingested: Ingested, llm_server: FakeOpenAIServer) -> None:
    question = "稀疏注意力在八千词元时的峰值显存"  # the answer is in an English paper
    llm_server.configure(rules=[{
        "match": "Translate the user's search query", "role": "system",
        "reply": "AnchorWindow peak GPU memory at 8K compared with full attention"}])
    try:
        calls = llm_server.stats().chat_calls
        translated = hits(run(["search", question, "--top-n", "3"], ingested.env))
        assert llm_server.stats().chat_calls == calls + 1
        alone = run(["search", question, "--top-n", "3", "--no-translate"], ingested.env)
        assert llm_server.stats().chat_calls == calls + 1  # no call with --no-translate
    finally:
        llm_server.reset()
    anchor = ingested.ids["en_sparse_attention.md"]
    assert translated[0]["doc_id"] == anchor
    assert hits(alone)[0]["doc_id"] != anchor  # the fake vectors mean nothing: BM25 decides
    # An LLM that fails: one note on stderr, and the query alone is searched.
    llm_server.configure(fail_first_n=1, fail_status=400)
    try:
        failed = run(["search", question, "--top-n", "3"], ingested.env)
    finally:
        llm_server.reset()
    assert failed.returncode == 0 and hits(failed)
    assert failed.stderr.startswith("note: the query was not translated")
    assert len(failed.stderr.strip().splitlines()) == 1


def test_search_bad_input_is_one_error_line(ingested: Ingested) -> None:
    unknown_kb, unknown_doc, punctuation, empty, bad_n = run_many([
        (["search", "attention", "--kb", "nope"], ingested.env),
        (["search", "attention", "--doc", "0123456789abcdef"], ingested.env),
        (["search", "?!。，……"], ingested.env),
        (["search", "   "], ingested.env),
        (["search", "attention", "--top-n", "0"], ingested.env),
    ])
    assert_one_error_line(unknown_kb, mentions="'nope'")
    assert_one_error_line(unknown_doc, mentions="0123456789abcdef")
    assert_one_error_line(punctuation, mentions="no words")
    assert_one_error_line(empty, mentions="no words")
    for result in (unknown_kb, unknown_doc, punctuation, empty):
        assert result.returncode == 2 and result.stdout == ""
    assert bad_n.returncode == 2 and "--top-n" in bad_n.stderr
    assert hits(run(["search", "attention"], ingested.env))  # nothing lost


def test_bad_files_among_good_ones(llm_server: FakeOpenAIServer, tmp_path: Path) -> None:
    env = kb_env(llm_server, tmp_path / "home")
    good_pdf = tmp_path / "paper.pdf"
    good_pdf.write_bytes(make_pdf([PAGE_1, PAGE_2], title="Sparse Attention on Papers"))
    empty = tmp_path / "empty.md"
    empty.write_bytes(b"")
    cut = tmp_path / "corrupt.pdf"
    cut.write_bytes(good_pdf.read_bytes()[:400])
    locked = tmp_path / "locked.pdf"
    locked.write_bytes(make_pdf([PAGE_1], password="pw"))
    missing = tmp_path / "missing.md"
    args = ["ingest", str(PAPERS[0]), str(empty), str(cut), str(good_pdf), str(locked),
            str(missing), "--kb", "mixed"]
    result = run(args, env)
    assert result.returncode == 1, result.describe()
    assert [Path(d["source"]).name for d in result.json_lines()] == [PAPERS[0].name, "paper.pdf"]
    # A slow machine also gets progress lines ("ingest: 1/6 files, ...", every 10 s).
    errors = [line for line in result.err_lines if not line.startswith("ingest: ")]
    assert errors == [
        f"error: {empty} is empty; give a file with some text",
        errors[1],
        f"error: {locked} is encrypted; decrypt it first",
        f"error: no such file: {missing}; check the path",
    ], result.describe()
    assert errors[1].startswith(f"error: {cut} is not a readable PDF (")

    found = hits(run(["search", "training sequences GPUs", "--kb", "mixed"], env))
    assert found[0]["title"] == "Sparse Attention on Papers"
    assert found[0]["page"] == 2 and found[0]["heading"] == "2 Method > 2.1 Training"

    all_bad = run(["ingest", str(empty), str(missing), "--kb", "mixed"], env)
    assert all_bad.returncode == 2 and all_bad.stdout == ""
    assert len([line for line in all_bad.err_lines if not line.startswith("ingest: ")]) == 2
    bad_name = run(["ingest", str(PAPERS[0]), "--kb", "no spaces"], env)
    assert_one_error_line(bad_name, mentions="knowledge base name")


def test_route_accepts_a_pdf_file(llm_server: FakeOpenAIServer, tmp_path: Path) -> None:
    pdf = tmp_path / "paper.pdf"
    pdf.write_bytes(make_pdf([PAGE_1, PAGE_2]))
    locked = tmp_path / "locked.pdf"
    locked.write_bytes(make_pdf([PAGE_1], password="pw"))
    env = base_env(tmp_path / "home")  # no LLM: the rules decide
    ok, bad = run_many([(["route", "summarize this paper", "--file", str(pdf)], env),
                        (["route", "summarize this paper", "--file", str(locked)], env)])
    assert ok.returncode == 0, ok.describe()
    assert ok.json_lines()[0]["strategy"] == "full_content"
    assert_one_error_line(bad, mentions="is encrypted; decrypt it first")


def test_kill_midway_leaves_whole_documents(llm_server: FakeOpenAIServer, tmp_path: Path) -> None:
    env = kb_env(llm_server, tmp_path / "home")
    folder = tmp_path / "papers"
    folder.mkdir()
    texts = [p.read_text(encoding="utf-8") for p in PAPERS]
    for i in range(40):
        (folder / f"{i:02d}.md").write_text(f"{texts[i % 4]}\n\nVariant {i}.\n", encoding="utf-8")
    proc = subprocess.Popen(
        [sys.executable, "-m", "scholarflow.cli", "ingest", str(folder)], env=env, cwd=REPO,
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, encoding="utf-8")
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()  # one document is in; kill during the next ones
        assert json.loads(first)["status"] == "added"
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(TIMEOUT)
    whole = _whole_documents(tmp_path / "home" / "kb" / "default" / DB_FILENAME)
    assert 1 <= whole < 40
    again = run(["ingest", str(folder)], env)
    assert again.returncode == 0, again.describe()
    statuses = [d["status"] for d in again.json_lines()]
    assert statuses.count("unchanged") == whole and statuses.count("added") == 40 - whole
    assert _whole_documents(tmp_path / "home" / "kb" / "default" / DB_FILENAME) == 40


def _whole_documents(db: Path) -> int:
    """How many documents the index holds, checking each has its text and all its chunks."""
    with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        docs = dict(conn.execute("SELECT doc_id, chunks FROM documents").fetchall())
        chunks = dict(conn.execute("SELECT doc_id, COUNT(*) FROM chunks GROUP BY doc_id"))
        texts = {row[0] for row in conn.execute("SELECT doc_id FROM texts")}
    assert chunks == docs and texts == set(docs)  # no half document, no orphan chunk
    return len(docs)


def test_an_ingest_where_every_file_fails_leaves_no_knowledge_base(
    llm_server: FakeOpenAIServer, tmp_path: Path,
) -> None:
    env = kb_env(llm_server, tmp_path / "home")
    cut = tmp_path / "corrupt.pdf"
    cut.write_bytes(make_pdf([PAGE_1])[:400])
    result = run(["ingest", str(cut), "--kb", "onlybad"], env)
    assert result.returncode == 2 and result.stdout == "" and len(result.err_lines) == 1
    assert not (tmp_path / "home" / "kb" / "onlybad").exists()
    assert_one_error_line(run(["search", "attention", "--kb", "onlybad"], env),
                          mentions="no knowledge base 'onlybad'")


async def test_a_search_that_finds_nothing_says_why_on_stderr(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path,
    llm_server: FakeOpenAIServer,
) -> None:
    import argparse

    from scholarflow.cli import kb as cli_kb
    from scholarflow.ingest.documents import document_from_text
    from scholarflow.ingest.pipeline import add_document
    from scholarflow.retrieval import kb_registry
    from tests.conftest import scholarflow_environment

    # No LLM key: no translation, nothing on stderr. Embeddings from the scripted server.
    scholarflow_environment(monkeypatch, SCHOLARFLOW_HOME=str(tmp_path / "home"),
                            SCHOLARFLOW_EMBEDDING_MODEL="fake-embedding",
                            SCHOLARFLOW_EMBEDDING_BASE_URL=llm_server.base_url)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    # Two embedded knowledge bases, one of them empty; the command opens them by name.
    await kb_registry.open_knowledge_base("empty", create=True)
    lab = await kb_registry.open_knowledge_base("lab", create=True)
    await add_document(lab, document_from_text("# Sparse\n\nSparse attention saves memory."))

    async def search(query: str, kb: str, *docs: str) -> tuple[int, str, str]:
        args = argparse.Namespace(query=query, kb=kb, doc=list(docs), top_n=None,
                                  no_translate=True)
        code = await cli_kb.search(args)
        out, err = capsys.readouterr()
        return code, out, err

    code, out, err = await search("zebra migration", "lab")
    assert (code, out) == (0, "")
    assert kb_registry.open_stats().size == 0  # the command closed what it opened
    assert err.splitlines() == [
        "note: no chunk scored above similarity_threshold 0.2; try other words"]
    code, out, _err = await search("sparse attention", "lab")
    assert code == 0 and json.loads(out.splitlines()[0])["text"].startswith("# Sparse")
    code, out, err = await search("sparse attention", "empty")
    assert (code, out) == (0, "")
    assert err.splitlines() == ["note: knowledge base 'empty' has no documents; add some "
                                "with `scholarflow ingest FILE --kb empty`"]
