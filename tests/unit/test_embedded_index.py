"""The embedded knowledge base: storage, atomicity, isolation and hybrid recall."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import sys
from pathlib import Path

import pytest

from scholarflow.errors import InputError
from scholarflow.retrieval.index.embedded import (
    DB_FILENAME,
    SNAPSHOT_FILENAME,
    EmbeddedKnowledgeBase,
    EmbedderMismatchError,
)
from scholarflow.retrieval.kb import (
    Chunk,
    DocumentNotFoundError,
    KnowledgeBase,
    KnowledgeBaseNotFoundError,
    RecallParams,
    StoredDocument,
)
from scholarflow.retrieval.kb_registry import close_all, list_knowledge_bases, open_knowledge_base
from tests.support.embeddings import HashingEmbedder

ALL = RecallParams(top_n=100, similarity_threshold=-1.0)  # every chunk, cosine may be < 0
LEXICAL = RecallParams(top_n=100, similarity_threshold=-1.0, vector_similarity_weight=0.0)

EN_ATTENTION = "Multi-head attention lets the transformer attend to several positions at once."
EN_BATCHNORM = "Batch normalization keeps layer inputs stable by normalizing each minibatch."
EN_COOKING = "Whisk two eggs with flour and sugar, then bake the cake for forty minutes."
ZH_ANCHOR = "锚框是以每个像素为中心生成的多个边界框，交并比用来衡量锚框和真实边界框的相似度。"
ZH_RNN = "循环神经网络使用隐状态保存序列的历史信息，困惑度用来评价语言模型的质量。"


def make_doc(doc_id: str, *texts: str, title: str | None = None) -> tuple[
    StoredDocument, str, list[Chunk]
]:
    chunks = [
        Chunk(chunk_id=f"{doc_id}:{n:05d}", doc_id=doc_id, n=n, text=t, tokens=len(t.split()),
              heading=f"Section {n}" if n else None, page=n + 1)
        for n, t in enumerate(texts)
    ]
    text = "\n\n".join(texts)
    document = StoredDocument(doc_id=doc_id, title=title or doc_id, source=f"{doc_id}.md",
                              content_hash=f"hash-{doc_id}", tokens=len(text.split()),
                              chunks=len(chunks))
    return document, text, chunks


async def add(kb: KnowledgeBase, doc_id: str, *texts: str) -> bool:
    return await kb.add(*make_doc(doc_id, *texts))


@pytest.fixture
async def kb(home: Path) -> KnowledgeBase:
    kb = await open_knowledge_base("papers", create=True, embedder=HashingEmbedder())
    await add(kb, "en", EN_ATTENTION, EN_BATCHNORM, EN_COOKING)
    await add(kb, "zh", ZH_ANCHOR, ZH_RNN)
    return kb


async def test_add_stores_the_document_once(kb: KnowledgeBase) -> None:
    assert not await add(kb, "en", "a different text under the same id")
    docs = await kb.documents()
    assert [d.doc_id for d in docs] == ["en", "zh"]
    assert docs[0].chunks == 3 and docs[0].title == "en"
    assert await kb.document_text("en") == "\n\n".join([EN_ATTENTION, EN_BATCHNORM, EN_COOKING])
    assert [d.doc_id for d in await kb.documents(["zh", "missing", "en"])] == ["zh", "en"]
    with pytest.raises(DocumentNotFoundError):
        await kb.document_text("missing")


async def test_english_and_chinese_queries_find_their_chunk(kb: KnowledgeBase) -> None:
    found = await kb.search("how does multi-head attention work", doc_ids=None, params=ALL)
    assert found[0].chunk_id == "en:00000"
    assert found[0].title == "en" and found[0].page == 1
    # The hashing vectors carry no meaning, and the hybrid score gives the best cosine
    # the whole vector weight (see hybrid.py): a two-character question is left to BM25.
    found = await kb.search("什么是交并比", doc_ids=None, params=LEXICAL)
    assert found[0].chunk_id == "zh:00000"
    found = await kb.search("困惑度 评价 语言模型", doc_ids=None, params=ALL)
    assert found[0].chunk_id == "zh:00001"
    scores = [c.score for c in found]
    assert scores == sorted(scores, reverse=True)


async def test_doc_ids_filter_and_unknown_document(kb: KnowledgeBase) -> None:
    found = await kb.search("attention 锚框", doc_ids=["zh"], params=ALL)
    assert found and {c.doc_id for c in found} == {"zh"}
    assert await kb.search("attention", doc_ids=[], params=ALL) == []
    with pytest.raises(DocumentNotFoundError, match="nope"):
        await kb.search("attention", doc_ids=["en", "nope"], params=ALL)


async def test_threshold_and_top_n(kb: KnowledgeBase) -> None:
    everything = await kb.search("batch normalization", doc_ids=None, params=ALL)
    assert len(everything) == 5
    best = everything[0]
    assert best.chunk_id == "en:00001"
    # BM25 is normalised by what the query could score at most, so no score reaches 1,
    # and the chunk holding every query term is well above the default threshold.
    assert 0.2 < best.score < 1.0
    top1 = await kb.search("batch normalization", doc_ids=None, params=RecallParams(top_n=1))
    assert [c.chunk_id for c in top1] == [best.chunk_id]
    strict = RecallParams(top_n=10, similarity_threshold=best.score - 1e-4)
    assert [c.chunk_id for c in await kb.search("batch normalization", doc_ids=None,
                                                params=strict)] == [best.chunk_id]
    none = RecallParams(similarity_threshold=1.01)
    assert await kb.search("batch normalization", doc_ids=None, params=none) == []


async def test_vector_weight_ranks_by_cosine_alone(kb: KnowledgeBase) -> None:
    # w = 1: BM25 plays no part; the hashing embedder still shares n-grams with the text.
    params = RecallParams(top_n=1, similarity_threshold=-1.0, vector_similarity_weight=1.0)
    found = await kb.search("eggs flour sugar cake", doc_ids=None, params=params)
    assert found[0].chunk_id == "en:00002"


async def test_punctuation_only_query_is_a_clear_error(kb: KnowledgeBase) -> None:
    with pytest.raises(InputError, match="no searchable words"):
        await kb.search("?!。，…", doc_ids=None, params=ALL)
    # Only stopwords: no BM25 terms, but still a question the vectors can rank.
    assert await kb.search("what is the", doc_ids=None, params=ALL)


async def test_isolation_between_knowledge_bases(kb: KnowledgeBase) -> None:
    other = await open_knowledge_base("other", create=True, embedder=HashingEmbedder())
    await add(other, "other-doc", "Residual blocks add the input back: multi-head attention.")
    found = await other.search("multi-head attention", doc_ids=None, params=ALL)
    assert {c.doc_id for c in found} == {"other-doc"}
    found = await kb.search("residual blocks input", doc_ids=None, params=ALL)
    assert "other-doc" not in {c.doc_id for c in found}
    with pytest.raises(DocumentNotFoundError):
        await kb.search("attention", doc_ids=["other-doc"], params=ALL)
    assert await list_knowledge_bases() == ["other", "papers"]


async def test_persistence_across_reopen_and_a_lost_cache(kb: KnowledgeBase, home: Path) -> None:
    before = await kb.search("normalization minibatch", doc_ids=None, params=ALL)
    await close_all()
    folder = home / "kb" / "papers"
    assert (folder / SNAPSHOT_FILENAME).is_file()
    reopened = await open_knowledge_base("papers", embedder=HashingEmbedder())
    assert reopened is not kb
    assert await reopened.search("normalization minibatch", doc_ids=None, params=ALL) == before
    await close_all()
    (folder / SNAPSHOT_FILENAME).write_bytes(b"not a snapshot")  # a corrupt cache is rebuilt
    again = await open_knowledge_base("papers", embedder=HashingEmbedder())
    assert await again.search("normalization minibatch", doc_ids=None, params=ALL) == before


async def test_a_second_writer_is_seen_by_an_open_reader(kb: KnowledgeBase) -> None:
    assert await kb.search("gradient clipping", doc_ids=None, params=ALL)  # snapshot built
    assert isinstance(kb, EmbeddedKnowledgeBase)
    writer = await EmbeddedKnowledgeBase.open("papers", embedder=HashingEmbedder())
    try:
        await add(writer, "late", "Gradient clipping rescales gradients whose norm is too large.")
    finally:
        await writer.close()
    found = await kb.search("gradient clipping", doc_ids=None, params=ALL)
    assert found[0].doc_id == "late"


async def test_unknown_and_invalid_names_and_embedder_mismatch(home: Path) -> None:
    with pytest.raises(KnowledgeBaseNotFoundError, match="scholarflow ingest FILE --kb nope"):
        await open_knowledge_base("nope")
    for bad in ("", "a/b", "..", "x" * 65, "名字"):
        with pytest.raises(InputError, match="invalid knowledge base name"):
            await open_knowledge_base(bad, create=True)
    await open_knowledge_base("made", create=True, embedder=HashingEmbedder(64))
    with pytest.raises(EmbedderMismatchError, match="hashing/64"):
        await open_knowledge_base("made", embedder=HashingEmbedder(32))
    await close_all()
    with pytest.raises(EmbedderMismatchError, match="hashing/64"):
        await open_knowledge_base("made", embedder=HashingEmbedder(32))


async def test_empty_knowledge_base_and_empty_document(home: Path) -> None:
    kb = await open_knowledge_base("empty", create=True, embedder=HashingEmbedder())
    assert await kb.search("anything", doc_ids=None, params=ALL) == []
    assert await kb.add(*make_doc("blank"))  # a document with no chunks still has its text
    assert await kb.document_text("blank") == ""
    assert await kb.search("anything", doc_ids=["blank"], params=ALL) == []


async def test_a_failure_inside_the_transaction_leaves_nothing(kb: KnowledgeBase) -> None:
    document, text, chunks = make_doc("broken", "first chunk about dropout", "second chunk")
    clash = [chunks[0], Chunk(**{**_fields(chunks[1]), "chunk_id": chunks[0].chunk_id})]
    with pytest.raises(sqlite3.IntegrityError):  # the second chunk fails after the first went in
        await kb.add(document, text, clash)
    assert "broken" not in {d.doc_id for d in await kb.documents()}
    # Every chunk is found at ALL's threshold: the five before, none of the failed add's.
    found = await kb.search("dropout", doc_ids=None, params=ALL)
    assert sorted(c.chunk_id for c in found) == [
        "en:00000", "en:00001", "en:00002", "zh:00000", "zh:00001"]
    assert await kb.add(document, text, chunks)  # and the document can still go in whole
    assert (await kb.search("dropout", doc_ids=None, params=ALL))[0].doc_id == "broken"


def _fields(chunk: Chunk) -> dict[str, object]:
    return {name: getattr(chunk, name) for name in Chunk.__slots__}


_WRITER = """
import asyncio, time
from tests.support.embeddings import HashingEmbedder
from scholarflow.retrieval.index.embedded import EmbeddedKnowledgeBase
from scholarflow.retrieval.kb import Chunk, StoredDocument

def stall_in_chunk_insert(sql):
    # Called inside the document's transaction, after its documents and texts
    # rows and with its chunks being written: the parent kills us right here.
    if sql.startswith("INSERT INTO chunks"):
        print("mid", flush=True)
        time.sleep(60)

async def main():
    kb = await EmbeddedKnowledgeBase.open("crash", create=True, embedder=HashingEmbedder())
    for i in range(4):
        doc_id = f"doc{i}"
        chunks = [Chunk(f"{doc_id}:{n:05d}", doc_id, n, f"chunk {n} of document {i}", 5,
                        None, None) for n in range(20)]
        doc = StoredDocument(doc_id, doc_id, None, "h", 100, len(chunks))
        if i == 3:
            kb._db.locked(lambda conn: conn.set_trace_callback(stall_in_chunk_insert))
        await kb.add(doc, "text " * 100, chunks)
        print(i, flush=True)

asyncio.run(main())
"""


async def test_kill_9_mid_document_leaves_whole_documents_only(home: Path) -> None:
    env = {**os.environ, "SCHOLARFLOW_HOME": str(home)}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _WRITER, env=env, stdout=asyncio.subprocess.PIPE
    )
    assert proc.stdout is not None
    lines = [(await proc.stdout.readline()).strip() for _ in range(4)]
    proc.send_signal(signal.SIGKILL)
    await proc.wait()
    assert lines == [b"0", b"1", b"2", b"mid"]

    kb = await open_knowledge_base("crash", embedder=HashingEmbedder())
    docs = await kb.documents()
    assert [d.doc_id for d in docs] == ["doc0", "doc1", "doc2"]
    db = sqlite3.connect(home / "kb" / "crash" / DB_FILENAME)
    try:
        counts = dict(db.execute("SELECT doc_id, count(*) FROM chunks GROUP BY doc_id").fetchall())
        texts = {row[0] for row in db.execute("SELECT doc_id FROM texts")}
    finally:
        db.close()
    assert set(counts) == texts == {"doc0", "doc1", "doc2"}
    assert all(counts[d.doc_id] == d.chunks == 20 for d in docs)
    found = await kb.search("chunk 7 of document 1", doc_ids=None, params=ALL)
    assert found[0].chunk_id == "doc1:00007"
    assert "doc3" not in {c.doc_id for c in found}
    assert await kb.add(*make_doc("doc3", "the interrupted document, added again"))


async def test_concurrent_adds_of_one_document_store_it_once(home: Path) -> None:
    kb = await open_knowledge_base("race", create=True, embedder=HashingEmbedder())
    results = await asyncio.gather(*(add(kb, "same", EN_ATTENTION, ZH_RNN) for _ in range(5)))
    assert sorted(results) == [False] * 4 + [True]
    assert [d.chunks for d in await kb.documents()] == [2]
