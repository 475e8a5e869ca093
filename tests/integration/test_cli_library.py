"""`scholarflow kb list | docs | remove`, and a changed file re-ingested, as a user runs them."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from tests.integration.hostile.harness import (
    EXAMPLES,
    Result,
    assert_clean_success,
    llm_env,
    run,
)
from tests.support import FakeOpenAIServer

PAPERS = sorted(EXAMPLES.glob("*.md"))


def lines(result: Result) -> list[dict[str, Any]]:
    assert_clean_success(result)
    return [json.loads(line) for line in result.stdout.splitlines()]


def test_list_docs_remove(llm_server: FakeOpenAIServer, tmp_path: Path) -> None:
    env = llm_env(llm_server.base_url, tmp_path / "home")
    assert lines(run(["kb", "list"], env)) == []
    ingested = lines(run(["ingest", *map(str, PAPERS[:2]), "--kb", "lab"], env))
    lines(run(["ingest", str(PAPERS[2]), "--kb", "other"], env))
    listed = lines(run(["kb", "list"], env))
    chunks = sum(d["chunks"] for d in ingested)
    assert listed == [
        {"name": "lab", "documents": 2, "chunks": chunks, "backend": "embedded"},
        {"name": "other", "documents": 1, "chunks": listed[1]["chunks"], "backend": "embedded"},
    ]
    docs = lines(run(["kb", "docs", "lab"], env))
    assert [(d["doc_id"], d["title"], d["chunks"]) for d in docs] == [
        (d["doc_id"], d["title"], d["chunks"]) for d in ingested]
    for doc in docs:
        assert datetime.fromisoformat(doc["added"]).utcoffset().total_seconds() == 0  # type: ignore[union-attr]
        assert doc["source"] == str(Path(doc["source"]).absolute())
        assert {"year", "pages", "authors", "doi"} <= doc.keys()
    gone = docs[0]["doc_id"]
    assert lines(run(["kb", "remove", "lab", gone], env)) == [
        {"doc_id": gone, "kb": "lab", "status": "removed"}]
    assert [d["doc_id"] for d in lines(run(["kb", "docs", "lab"], env))] == [docs[1]["doc_id"]]
    hits = lines(run(["search", "retrieval attention summary", "--kb", "lab", "--top-n", "50"],
                     env))
    assert hits and {h["doc_id"] for h in hits} == {docs[1]["doc_id"]}
    assert all(h["kind"] == "body" for h in hits)


def test_a_changed_file_replaces_its_old_version(
    llm_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    env = llm_env(llm_server.base_url, tmp_path / "home")
    paper = tmp_path / "paper.md"
    other = tmp_path / "other.md"
    paper.write_text(PAPERS[0].read_text(encoding="utf-8"), encoding="utf-8")
    other.write_text(PAPERS[1].read_text(encoding="utf-8"), encoding="utf-8")
    [first, kept] = lines(run(["ingest", str(paper), str(other)], env))
    paper.write_text(PAPERS[0].read_text(encoding="utf-8") + "\n\nA corrected result.\n",
                     encoding="utf-8")
    [second, same] = lines(run(["ingest", str(paper), str(other)], env))
    assert second["status"] == "added" and second["replaced"] == [first["doc_id"]]
    assert same["status"] == "unchanged" and "replaced" not in same
    docs = lines(run(["kb", "docs", "default"], env))
    assert sorted(d["doc_id"] for d in docs) == sorted([kept["doc_id"], second["doc_id"]])
    # The same file named another way (relative to another folder) is still the same file.
    paper.write_text("# Short\n\nOnly this now.\n", encoding="utf-8")
    [third] = lines(run(["ingest", f"{tmp_path}/./paper.md"], env))
    assert third["replaced"] == [second["doc_id"]]
    assert len(lines(run(["kb", "docs", "default"], env))) == 2
