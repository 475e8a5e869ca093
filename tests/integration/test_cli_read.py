"""`scholarflow read`, run as a real subprocess: what it shows is what `ingest` stores."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path

from scholarflow.retrieval.index.embedded import DB_FILENAME
from tests.integration.test_cli import base_env, run, run_many
from tests.integration.test_cli_kb import kb_env
from tests.support import FakeOpenAIServer
from tests.unit.test_ingest import PAGE_1, PAGE_2, make_pdf

READ_KEYS = {"file", "outcome", "message", "title", "authors", "year", "doi", "pages",
             "ocr_pages", "unreadable_pages", "chunks"}
REFERENCES = ["References", "[1] A. Smith and B. Jones. Sparse attention. In Proc. NeurIPS, 2019.",
              "[2] C. Wu, D. Li, and E. Kim. Long inputs. J. Mach. Learn. Res., 21:1-30, 2020."]


def test_read_json_shows_each_file_and_stores_nothing(tmp_path: Path) -> None:
    paper = tmp_path / "paper.pdf"
    paper.write_bytes(make_pdf([PAGE_1, PAGE_2 + REFERENCES], title="Sparse Attention"))
    (tmp_path / "empty.md").write_text("")
    home = tmp_path / "home"
    result = run(["read", "--json", str(paper), str(tmp_path / "empty.md")], base_env(home))
    assert result.returncode == 1, result.describe()  # one of the two was refused
    first, second = result.json_lines()
    assert set(first) == READ_KEYS and set(second) == READ_KEYS
    assert first["outcome"] == "ok" and first["message"] == ""
    assert first["title"] == "Sparse Attention" and first["pages"] == 2
    chunks = first["chunks"]
    assert {chunk["page"] for chunk in chunks} == {1, 2}
    assert all(set(chunk) == {"page", "heading", "kind", "text"} for chunk in chunks)
    assert chunks[-1]["kind"] == "references" and "Sparse attention. In Proc." in chunks[-1]["text"]
    assert any(chunk["kind"] == "body" and "eightfold" in chunk["text"] for chunk in chunks)
    assert second["outcome"] == "refused" and "is empty" in second["message"]
    assert second["chunks"] == []
    assert not (home / "kb").exists()  # read stores nothing


def test_read_shows_what_ingest_stores(llm_server: FakeOpenAIServer, tmp_path: Path) -> None:
    paper = tmp_path / "paper.pdf"
    paper.write_bytes(make_pdf([PAGE_1, PAGE_2 + REFERENCES]))
    env = kb_env(llm_server, tmp_path / "home")
    shown, ingested = run_many([(["read", "--json", str(paper)], env),
                                (["ingest", str(paper)], env)])
    assert shown.returncode == 0 and ingested.returncode == 0, shown.describe()
    record = shown.json_lines()[0]
    doc_id = json.loads(ingested.stdout)["doc_id"]
    db = tmp_path / "home" / "kb" / "default" / DB_FILENAME
    with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        stored = conn.execute("SELECT page, heading, text, kind FROM chunks WHERE doc_id = ? "
                              "ORDER BY n", (doc_id,)).fetchall()
        title, pages = conn.execute("SELECT title, pages FROM documents WHERE doc_id = ?",
                                    (doc_id,)).fetchone()
    assert [(c["page"], c["heading"], c["text"]) for c in record["chunks"]] == [
        (page, heading, text) for page, heading, text, _ in stored]
    assert [c["kind"] == "references" for c in record["chunks"]] == [
        kind == "references" for *_, kind in stored]
    assert (record["title"], record["pages"]) == (title, pages)


def test_read_text_mode_names_pages_kinds_and_refusals(tmp_path: Path) -> None:
    paper = tmp_path / "paper.pdf"
    paper.write_bytes(make_pdf([PAGE_1, PAGE_2]))
    result = run(["read", str(paper), str(tmp_path / "missing.pdf")], base_env(tmp_path / "h"))
    assert result.returncode == 1, result.describe()
    lines = result.stdout.splitlines()
    assert lines[0] == f"{paper}: ok, 2 pages, 4 chunks", result.describe()
    assert any(line.strip().startswith("[3] p. 2 | body | 2 Method > 2.1 Training")
               for line in lines), result.describe()
    assert lines[-1].endswith("refused: no such file: " + str(tmp_path / "missing.pdf")
                              + "; check the path"), result.describe()
