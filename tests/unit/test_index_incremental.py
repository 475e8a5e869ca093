"""The embedded index grows incrementally: BM25 segments, lazy scores, snapshots saved rarely.

Scores after any sequence of writes must equal those of an index built at
once, a write must not rewrite the snapshot file, and a crash while the
snapshot is being written must leave a knowledge base that opens and answers
as before.
"""

from __future__ import annotations

import asyncio
import math
import os
import random
import signal
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from scholarflow.retrieval.index.bm25 import K1, B, Bm25Index
from scholarflow.retrieval.index.embedded import SNAPSHOT_FILENAME, EmbeddedKnowledgeBase
from scholarflow.retrieval.kb import Chunk, KnowledgeBase, RecallParams, StoredDocument
from scholarflow.retrieval.kb_registry import close_all, open_knowledge_base
from tests.support.embeddings import HashingEmbedder

ALL = RecallParams(top_n=1000, similarity_threshold=-9.0)
WORDS = [f"w{i}" for i in range(400)] + ["注意", "力", "检索", "bert-base"]


def _texts(rng: random.Random, n: int) -> list[str]:
    weights = [1 / (i + 1) for i in range(len(WORDS))]
    return [" ".join(rng.choices(WORDS, weights=weights, k=rng.randint(0, 50))) for _ in range(n)]


def _reference(texts: list[str], terms: list[str]) -> np.ndarray:
    """Textbook Lucene BM25 (without the constant k1 + 1), in float64, chunk by chunk."""
    docs = [Counter(t.split()) for t in texts]
    lengths = [sum(d.values()) for d in docs]
    n = len(docs)
    avgdl = max(sum(lengths) / n, 1.0)
    out = np.zeros(n)
    for term in terms:
        df = sum(term in d for d in docs)
        idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
        for i, d in enumerate(docs):
            if term in d:
                tf = d[term]
                out[i] += idf * tf / (tf + K1 * (1 - B + B * lengths[i] / avgdl))
    return out


def test_incremental_scores_equal_a_fresh_build() -> None:
    rng = random.Random(4)
    texts = _texts(rng, 1500)
    growing = Bm25Index()
    done = 0
    while done < len(texts):
        step = rng.choice([1, 3, 20, 150])
        growing.add(texts[done:done + step])
        done += step
        if rng.random() < 0.6:
            growing.settle()  # delta merges into main once it is 1/8 of it
        if rng.random() < 0.3:  # a search between writes computes (and caches) some scores
            growing.scores(growing.term_ids(rng.sample(WORDS, 4)))
    assert growing.main.postings and growing.delta.postings  # both segments in play
    at_once = Bm25Index()
    at_once.add(texts)
    at_once.merge()
    for _ in range(60):
        terms = list(dict.fromkeys([*rng.choices(WORDS, k=rng.randint(1, 6)), "unseen"]))
        ids = growing.term_ids(terms)
        assert ids == at_once.term_ids(terms)
        got = growing.scores(ids)
        np.testing.assert_allclose(got, at_once.scores(ids), rtol=0, atol=1e-6)
        np.testing.assert_allclose(got, _reference(texts, terms), rtol=1e-6, atol=1e-6)
        assert growing.bound(ids) == pytest.approx(at_once.bound(ids), abs=1e-9)
        for t in ids:
            chunks, scores = growing.postings(t)
            assert np.all(np.diff(chunks) > 0)
            np.testing.assert_allclose(scores, got_for(at_once, t)[chunks], atol=1e-6)


def got_for(index: Bm25Index, term: int) -> np.ndarray:
    return index.scores([term])


# --- through the knowledge base ----------------------------------------------------


def _document(doc_id: str, texts: list[str]) -> tuple[StoredDocument, str, list[Chunk]]:
    chunks = [Chunk(f"{doc_id}:{n:05d}", doc_id, n, t or "x", 1, None, None)
              for n, t in enumerate(texts)]
    return (StoredDocument(doc_id, doc_id, None, f"h-{doc_id}", len(texts), len(chunks)),
            "\n\n".join(texts), chunks)


async def _search_all(kb: KnowledgeBase, queries: list[str]) -> list[list[tuple[str, float]]]:
    return [[(c.chunk_id, c.score) for c in await kb.search(q, doc_ids=None, params=ALL)]
            for q in queries]


async def _fresh_view(folder: Path) -> EmbeddedKnowledgeBase:
    """The knowledge base as a new process sees it with no snapshot file: built from SQLite."""
    (folder / SNAPSHOT_FILENAME).unlink(missing_ok=True)
    return await EmbeddedKnowledgeBase.open(folder.name, embedder=HashingEmbedder())


async def test_writes_between_searches_keep_results_and_the_file_untouched(home: Path) -> None:
    rng = random.Random(9)
    kb = await open_knowledge_base("grow", create=True, embedder=HashingEmbedder())
    assert isinstance(kb, EmbeddedKnowledgeBase)
    await kb.add(*_document("base", _texts(rng, 300)))
    queries = ["w1 w7 w30", "注意力 检索", "bert-base w2", "w399 w5"]
    await kb.search("w1", doc_ids=None, params=ALL)
    await kb.close()  # waits for the background save
    path = kb.folder / SNAPSHOT_FILENAME
    saved = path.stat(), path.read_bytes()

    for i in range(5):  # small writes: the snapshot file is not rewritten
        await kb.add(*_document(f"late{i}", _texts(rng, 3)))
        await kb.search("w1", doc_ids=None, params=ALL)
    await kb.close()
    assert path.stat().st_mtime_ns == saved[0].st_mtime_ns and path.read_bytes() == saved[1]
    incremental = await _search_all(kb, queries)
    assert any(c.startswith("late") for hits in incremental for c, _ in hits)

    # A new process: loads the file, reads the 15 newer chunks from SQLite.
    loaded = await EmbeddedKnowledgeBase.open("grow", embedder=HashingEmbedder())
    assert await _search_all(loaded, queries) == incremental
    await loaded.close()

    for i in range(8):  # ~1/8 more: segments merge and the file is replaced
        await kb.add(*_document(f"bulk{i}", _texts(rng, 10)))
        await kb.search("w1", doc_ids=None, params=ALL)
    await kb.close()
    assert path.read_bytes() != saved[1]
    incremental = await _search_all(kb, queries)
    rebuilt = await _fresh_view(kb.folder)
    assert await _search_all(rebuilt, queries) == incremental
    await rebuilt.close()


async def test_a_damaged_snapshot_or_a_stray_temporary_file_is_harmless(home: Path) -> None:
    rng = random.Random(2)
    kb = await open_knowledge_base("hurt", create=True, embedder=HashingEmbedder())
    await kb.add(*_document("d", _texts(rng, 200)))
    before = await _search_all(kb, ["w3 w4", "检索"])
    await close_all()
    folder = home / "kb" / "hurt"
    data = (folder / SNAPSHOT_FILENAME).read_bytes()
    (folder / f"{SNAPSHOT_FILENAME}abc.tmp").write_bytes(data[: len(data) // 3])
    for damaged in (data[: len(data) // 2], data[:-100], data[:100] + bytes(len(data) - 100)):
        (folder / SNAPSHOT_FILENAME).write_bytes(damaged)
        again = await open_knowledge_base("hurt", embedder=HashingEmbedder())
        assert await _search_all(again, ["w3 w4", "检索"]) == before
        await close_all()


_SAVER = """
import asyncio, time
from tests.support.embeddings import HashingEmbedder
from scholarflow.retrieval.index import snapshot_file
from scholarflow.retrieval.index.embedded import EmbeddedKnowledgeBase
from scholarflow.retrieval.kb import Chunk, RecallParams, StoredDocument

def stalled_savez(out, **arrays):
    # Write part of the file, then stall: the parent kills us mid-write.
    out.write(b"PK" + bytes(4096))
    out.flush()
    print("saving", flush=True)
    time.sleep(60)

async def main():
    kb = await EmbeddedKnowledgeBase.open("crash", embedder=HashingEmbedder())
    for i in range(40):  # enough to merge the segments, so the snapshot is saved
        doc = f"more{i}"
        chunks = [Chunk(f"{doc}:{n:05d}", doc, n, f"w{n} w{i} more", 3, None, None)
                  for n in range(10)]
        await kb.add(StoredDocument(doc, doc, None, "h", 30, 10), "text", chunks)
    snapshot_file.np.savez = stalled_savez
    await kb.search("w1", doc_ids=None, params=RecallParams())

asyncio.run(main())
"""


async def test_kill_9_while_the_snapshot_is_written(home: Path) -> None:
    kb = await open_knowledge_base("crash", create=True, embedder=HashingEmbedder())
    await kb.add(*_document("first", [f"w{i} w{i + 1} first" for i in range(30)]))
    await kb.search("w1", doc_ids=None, params=ALL)
    await close_all()
    saved = (home / "kb" / "crash" / SNAPSHOT_FILENAME).read_bytes()

    env = {**os.environ, "SCHOLARFLOW_HOME": str(home)}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _SAVER, env=env, stdout=asyncio.subprocess.PIPE)
    assert proc.stdout is not None
    assert (await asyncio.wait_for(proc.stdout.readline(), 60)).strip() == b"saving"
    proc.send_signal(signal.SIGKILL)
    await proc.wait()

    folder = home / "kb" / "crash"
    assert (folder / SNAPSHOT_FILENAME).read_bytes() == saved  # the old file, whole
    assert any(p.name.endswith(".tmp") for p in folder.iterdir())  # the half-written one
    kb = await open_knowledge_base("crash", embedder=HashingEmbedder())
    found = await _search_all(kb, ["w3 more", "w1 first"])
    assert any(c.startswith("more39") for c, _ in found[0])
    rebuilt = await _fresh_view(folder)
    assert await _search_all(rebuilt, ["w3 more", "w1 first"]) == found
    await rebuilt.close()
