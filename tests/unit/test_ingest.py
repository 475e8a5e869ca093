"""Ingestion: PDF/Markdown/text extraction, chunking along structure, and the pipeline."""

from __future__ import annotations

import io
import itertools
import re
import sqlite3
from collections.abc import Sequence
from contextlib import closing
from dataclasses import replace
from pathlib import Path

import pytest
from pypdf import PdfWriter
from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

from scholarflow.ingest import chunk_document, chunk_text, extract_file
from scholarflow.ingest.chunking import MAX_TOKENS, plain_heading_level
from scholarflow.ingest.documents import DocumentError, content_hash
from scholarflow.ingest.extract import load_document_file
from scholarflow.ingest.pipeline import collect_files, ingest_files, ingest_paths
from scholarflow.retrieval.embeddings import Vectors
from scholarflow.retrieval.index.embedded import DB_FILENAME, EmbeddedKnowledgeBase
from scholarflow.retrieval.kb import KnowledgeBase
from scholarflow.retrieval.kb_registry import close_all, list_knowledge_bases, open_knowledge_base
from scholarflow.tokens import count_tokens
from tests.conftest import EXAMPLES
from tests.support import FakeOpenAIServer
from tests.support.embeddings import HashingEmbedder

D2L = Path("/work/shared/corpus/d2l")


# --- helpers ----------------------------------------------------------------------


def make_pdf(pages: Sequence[Sequence[str]], *, title: str | None = None,
             password: str | None = None, algorithm: str = "AES-128") -> bytes:
    """A PDF with one Helvetica text line per string, written by pypdf itself."""
    writer = PdfWriter()
    font = writer._add_object(DictionaryObject({
        NameObject("/Type"): NameObject("/Font"), NameObject("/Subtype"): NameObject("/Type1"),
        NameObject("/BaseFont"): NameObject("/Helvetica"),
    }))
    for lines in pages:
        page = writer.add_blank_page(612, 792)
        ops = ["BT", "/F1 10 Tf", "13 TL", "50 750 Td"]
        for line in lines:
            escaped = line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
            ops.append(f"({escaped}) Tj T*")
        ops.append("ET")
        stream = DecodedStreamObject()
        stream.set_data("\n".join(ops).encode("latin-1"))
        page[NameObject("/Contents")] = writer._add_object(stream)
        page[NameObject("/Resources")] = DictionaryObject(
            {NameObject("/Font"): DictionaryObject({NameObject("/F1"): font})})
    if title:
        writer.add_metadata({"/Title": title})
    if password is not None:
        writer.encrypt(user_password=password, owner_password="owner", algorithm=algorithm)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


PAGE_1 = ["1 Introduction", "Sparse attention lowers the memory of long inputs.",
          "We study it on scientific papers.",
          "2 Method", "The model attends to local windows and a few global tokens."]
PAGE_2 = ["2.1 Training", "Training uses sequences of 32k tokens on eight GPUs.",
          "3 Results", "Memory falls eightfold against dense attention."]


def write(tmp_path: Path, name: str, data: bytes | str) -> Path:
    path = tmp_path / name
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


# --- extraction -------------------------------------------------------------------


def test_pdf_pages_title_and_headings(tmp_path: Path) -> None:
    path = write(tmp_path, "paper.pdf", make_pdf([PAGE_1, PAGE_2], title="Sparse Attention"))
    extracted = extract_file(path)
    doc = extracted.document
    assert extracted.kind == "pdf"
    assert doc.title == "Sparse Attention"
    assert doc.doc_id == content_hash(doc.content)[:16] and doc.source == str(path)
    assert [number for number, _ in extracted.pages] == [1, 2]
    second = extracted.pages[1][1]
    assert doc.content[second:].startswith("2.1 Training")
    assert extracted.page_at(0) == 1 and extracted.page_at(second) == 2
    # through --file: its pages and title kept in the text (tests/integration/test_direct_pdf.py)
    assert load_document_file(path).title == doc.title

    chunks = chunk_document(extracted, target_tokens=30, max_tokens=60).chunks
    where = {c.heading: c.page for c in chunks}
    assert where["1 Introduction"] == 1
    assert where["2 Method > 2.1 Training"] == 2
    assert where["3 Results"] == 2
    assert all(c.text in doc.content for c in chunks)


def test_pdf_title_falls_back_to_first_line(tmp_path: Path) -> None:
    pages = [["Attention Is Sparse", "A. Person", *PAGE_1]]
    for metadata in (None, "Microsoft Word - draft.docx", "untitled"):
        doc = extract_file(write(tmp_path, "p.pdf", make_pdf(pages, title=metadata))).document
        assert doc.title == "Attention Is Sparse"


def test_pdf_blank_page_keeps_numbering(tmp_path: Path) -> None:
    extracted = extract_file(write(tmp_path, "p.pdf", make_pdf([PAGE_1, [], PAGE_2])))
    assert [number for number, _ in extracted.pages] == [1, 3]


def test_encrypted_pdf(tmp_path: Path) -> None:
    locked = write(tmp_path, "locked.pdf", make_pdf([PAGE_1], password="s3cret"))
    with pytest.raises(DocumentError) as info:
        extract_file(locked)
    assert str(info.value) == f"{locked} is encrypted; decrypt it first"
    # An empty user password only restricts permissions: it opens.
    for algorithm in ("RC4-128", "AES-128"):
        opened = write(tmp_path, f"{algorithm}.pdf",
                       make_pdf([PAGE_1], password="", algorithm=algorithm))
        assert "Sparse attention" in extract_file(opened).document.content


@pytest.mark.parametrize("keep", [0.5, 0.9, 0.05])
def test_corrupt_pdf(tmp_path: Path, keep: float) -> None:
    data = make_pdf([PAGE_1, PAGE_2])
    path = write(tmp_path, "cut.pdf", data[: int(len(data) * keep)])
    with pytest.raises(DocumentError, match=re.escape(f"{path} is not a readable PDF (")) as info:
        extract_file(path)
    assert "\n" not in str(info.value)


def test_pdf_by_content_whatever_the_name(tmp_path: Path) -> None:
    path = write(tmp_path, "paper.txt", make_pdf([PAGE_1]))
    assert extract_file(path).kind == "pdf"
    fake = write(tmp_path, "notes.pdf", "plain text, not a PDF")
    with pytest.raises(DocumentError, match="is not a readable PDF"):
        extract_file(fake)


def test_scanned_pdf_has_no_text(tmp_path: Path) -> None:
    path = write(tmp_path, "scan.pdf", make_pdf([[], []]))
    with pytest.raises(DocumentError, match=r"no extractable text.*OCR"):
        extract_file(path)


@pytest.mark.parametrize("name", ["empty.pdf", "empty.md", "empty.txt"])
def test_empty_file(tmp_path: Path, name: str) -> None:
    path = write(tmp_path, name, b"")
    with pytest.raises(DocumentError, match=re.escape(f"{path} is empty")):
        extract_file(path)


def test_markdown_and_text_kinds(tmp_path: Path) -> None:
    assert extract_file(EXAMPLES / "en_sparse_attention.md").kind == "markdown"
    assert extract_file(write(tmp_path, "n.txt", "Title\n\nBody.\n")).kind == "text"
    assert extract_file(EXAMPLES / "en_sparse_attention.md").pages == ()


# --- chunking ---------------------------------------------------------------------


MARKDOWN = """# A Paper

Authors: A. Person

## 3 Method

### 3.1 Data

We use data.

```python
# a comment, not a heading

x = 1
```

### 3.2 Training

{long}

## 4 Results

Short results.
"""


def test_chunks_follow_headings_and_never_cross_them() -> None:
    text = MARKDOWN.format(long="Training is careful and slow. " * 200)
    chunks = chunk_text(text, "doc", target_tokens=100, max_tokens=128).chunks
    headings = [c.heading for c in chunks]
    assert headings[0] is None  # the title is the document's, not a section of every chunk
    assert headings[1] == "3 Method > 3.1 Data"  # the empty "3 Method" rides along
    assert chunks[1].text.startswith("## 3 Method\n\n### 3.1 Data")
    assert "# a comment, not a heading" in chunks[1].text
    training = [c for c in chunks if c.heading == "3 Method > 3.2 Training"]
    assert len(training) > 5
    assert headings[-1] == "4 Results" and chunks[-1].text == "## 4 Results\n\nShort results."
    assert all(c.page is None for c in chunks)


def test_chunk_ids_sizes_and_overlap_only_at_splits() -> None:
    text = MARKDOWN.format(long="Training is careful and slow. " * 200)
    result = chunk_text(text, "abc", target_tokens=100, max_tokens=128, overlap_tokens=20)
    chunks = result.chunks
    assert [c.chunk_id for c in chunks] == [f"abc:{n:05d}" for n in range(len(chunks))]
    assert [c.n for c in chunks] == list(range(len(chunks)))
    assert result.tokens == count_tokens(text)
    for chunk in chunks:
        assert chunk.tokens == pytest.approx(count_tokens(chunk.text), abs=2)
        assert count_tokens(chunk.text) <= 128
    training = [c for c in chunks if c.heading == "3 Method > 3.2 Training"]
    for before, after in itertools.pairwise(training):
        assert after.text.split(". ")[0] in before.text  # overlapping sentence
    # No overlap between whole paragraphs.
    assert "Short results." not in chunks[-2].text


def test_paragraphs_packed_up_to_target() -> None:
    paragraphs = [f"Paragraph {i} says something about retrieval." for i in range(100)]
    chunks = chunk_text("\n\n".join(paragraphs), "d", target_tokens=50, max_tokens=64).chunks
    assert 10 < len(chunks) < 30
    assert all(c.tokens <= 50 for c in chunks)
    for chunk in chunks:  # whole paragraphs only: no cut mid-paragraph
        assert chunk.text.startswith("Paragraph") and chunk.text.endswith("retrieval.")


def test_chinese_sentences_split_on_chinese_punctuation() -> None:
    sentence = "我们的方法在所有数据集上都取得了最好的结果。"
    text = "## 4 结果\n\n" + sentence * 80 + "\n\n真的吗？是的！"
    chunks = chunk_text(text, "zh", target_tokens=100, max_tokens=128).chunks
    assert len(chunks) > 3
    assert all(c.heading == "4 结果" for c in chunks)
    for chunk in chunks[:-1]:
        assert chunk.text.endswith("。")
        assert count_tokens(chunk.text) <= 128


def test_unpunctuated_text_is_cut_at_the_hard_max() -> None:
    text = "token " * 5000 + "\n\n" + "无标点中文" * 2000
    chunks = chunk_text(text, "x", target_tokens=300, max_tokens=400).chunks
    assert all(count_tokens(c.text) <= 400 for c in chunks)
    assert "".join(c.text for c in chunks).replace(" ", "") == text.replace(" ", "").replace(
        "\n", "")


def test_text_files_with_numbered_headings() -> None:
    text = "Title\n\n1 Introduction\n\nIntro text.\n\n1.1 Scope\n\nScope text.\n"
    chunks = chunk_text(text, "t", kind="text").chunks
    assert [c.heading for c in chunks] == [None, "1 Introduction", "1 Introduction > 1.1 Scope"]


@pytest.mark.parametrize(("line", "level"), [
    ("3 Method", 1), ("3.2 Training", 2), ("3.2.1 Data Mixes", 3), ("Abstract", 1),
    ("References", 1), ("IV. Results", 1), ("二、方法", 1), ("2 相关工作", 1), ("摘要", 1),
    ("3 the model uses less memory than dense attention does.", None),
    ("2020 was a good year", None), ("1 0.52 0.61 0.77", None), ("plain words", None),
])
def test_plain_heading_level(line: str, level: int | None) -> None:
    assert plain_heading_level(line) == level


@pytest.mark.skipif(not D2L.is_dir(), reason="the d2l corpus is not on this machine")
def test_d2l_corpus_bounds() -> None:
    # Speed is bench/recall_speed.py's to measure: a timed assertion fails on a busy machine.
    texts = [p.read_text(encoding="utf-8") for p in sorted(D2L.glob("*.md"))]
    results = [chunk_text(t, f"d{i}") for i, t in enumerate(texts)]
    for text, result in zip(texts, results, strict=True):
        assert result.tokens == count_tokens(text)
        for chunk in result.chunks:
            assert 0 < count_tokens(chunk.text) <= MAX_TOKENS
            assert chunk.text in text


# --- pipeline ---------------------------------------------------------------------
# The real embedded index, with the tests' hashing embedder (or the scripted server's
# embeddings, the same vectors, where the pipeline opens the knowledge base itself).


class CountingEmbedder(HashingEmbedder):
    """Counts the passages it embeds: a document stored again would be embedded again."""

    def __init__(self) -> None:
        super().__init__()
        self.passages = 0

    async def embed_passages(self, texts: Sequence[str]) -> Vectors:
        self.passages += len(texts)
        return await super().embed_passages(texts)


def stored_chunks(kb: KnowledgeBase) -> list[tuple[object, ...]]:
    """Every stored chunk of an embedded knowledge base, as its SQLite file holds it."""
    assert isinstance(kb, EmbeddedKnowledgeBase)
    with closing(sqlite3.connect(f"file:{kb.folder / DB_FILENAME}?mode=ro", uri=True)) as conn:
        return conn.execute("SELECT chunk_id, doc_id, n, text, tokens, heading, page, kind, "
                            "vector FROM chunks ORDER BY chunk_id").fetchall()


async def test_ingest_files_added_unchanged_and_errors(home: Path, tmp_path: Path) -> None:
    embedder = CountingEmbedder()
    kb = await open_knowledge_base("lab", create=True, embedder=embedder)
    pdf = write(tmp_path, "paper.pdf", make_pdf([PAGE_1, PAGE_2]))
    files = [EXAMPLES / "en_sparse_attention.md", write(tmp_path, "empty.md", ""), pdf,
             tmp_path / "missing.md", EXAMPLES / "zh_hybrid_retrieval.md"]
    seen: list[str] = []
    results = await ingest_files(kb, files, on_result=lambda r: seen.append(r.status))
    assert seen == [r.status for r in results] == [
        "added", "error", "added", "error", "added"]
    assert results[1].error == f"{files[1]} is empty; give a file with some text"
    assert results[3].error == f"no such file: {files[3]}; check the path"
    good = results[0]
    stored = {d.doc_id: d for d in await kb.documents()}
    assert sorted(stored) == sorted(r.doc_id for r in results if r.doc_id)
    assert (stored[good.doc_id or ""].chunks, stored[good.doc_id or ""].tokens,
            stored[good.doc_id or ""].title) == (good.chunks, good.tokens, good.title)
    assert good.as_json().keys() == {"doc_id", "title", "chunks", "tokens", "source", "status"}
    chunks = stored_chunks(kb)
    assert len(chunks) == sum(r.chunks or 0 for r in results)
    assert {c[6] for c in chunks if c[1] == results[2].doc_id} == {1, 2}  # the PDF's pages
    assert embedder.passages > 0

    before, embedded = (await kb.documents(), chunks), embedder.passages
    again = await ingest_files(kb, [files[0], pdf])
    assert [r.status for r in again] == ["unchanged", "unchanged"]
    assert (await kb.documents(), stored_chunks(kb)) == before
    assert embedder.passages == embedded  # nothing embedded again


async def test_a_rerun_reads_no_unchanged_file_again(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from scholarflow.ingest import pipeline

    kb = await open_knowledge_base("lab", create=True, embedder=HashingEmbedder())
    paper = write(tmp_path, "paper.md", EXAMPLES.joinpath("en_sparse_attention.md").read_text())
    pdf = write(tmp_path, "paper.pdf", make_pdf([PAGE_1, PAGE_2]))
    first = await ingest_files(kb, [paper, pdf])
    (stored,) = await kb.documents([first[1].doc_id or ""])
    assert stored.source == str(pdf.absolute()) and (stored.file_hash or "").startswith("sha256:")
    extracted: list[str] = []
    real = pipeline.prepare_file
    monkeypatch.setattr(pipeline, "prepare_file",
                        lambda path: extracted.append(str(path)) or real(path))
    again = await ingest_files(kb, [paper, pdf])
    assert [(r.status, r.doc_id, r.chunks) for r in again] == [
        ("unchanged", r.doc_id, r.chunks) for r in first]
    assert extracted == []  # only hashed
    paper.write_text(paper.read_text() + "\n\nOne more line.\n")
    changed = await ingest_files(kb, [paper, pdf])
    assert extracted == [str(paper)]
    assert changed[0].status == "added" and changed[0].replaced == (first[0].doc_id,)
    assert sorted(d.doc_id for d in await kb.documents()) == sorted(
        [changed[0].doc_id, first[1].doc_id])
    assert {c[1] for c in stored_chunks(kb)} == {changed[0].doc_id, first[1].doc_id}


async def test_collect_files_walks_directories_sorted(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / ".hidden").mkdir()
    for name in ("b/z.md", "b/a.pdf", "a.txt", "image.png", ".hidden/x.md", "c.MD"):
        write(tmp_path, name, "x")
    (tmp_path / "empty").mkdir()
    found = collect_files([tmp_path, tmp_path / "empty", "given.png"])
    names = [str(p.relative_to(tmp_path)) if isinstance(p, Path) and p.is_absolute() else p
             for p in found]
    assert names[:4] == ["a.txt", "c.MD", "b/a.pdf", "b/z.md"]
    assert getattr(names[4], "status", None) == "error"
    assert "holds no PDF, Markdown or text files" in (getattr(names[4], "error", "") or "")
    assert names[5] == Path("given.png")  # named directly: tried whatever its suffix


def _connection_open(home: Path, name: str) -> bool:
    """Whether this process holds the knowledge base's SQLite file open: SQLite keeps its
    write-ahead log beside it while a connection is open, and removes it on the last close."""
    return (home / "kb" / name / f"{DB_FILENAME}-wal").exists()


async def test_ingest_paths_creates_only_what_it_fills_and_closes_the_kb(
    fake_llm: FakeOpenAIServer, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    counts: list[int] = []
    (tmp_path / "empty").mkdir()
    results = await ingest_paths([EXAMPLES, tmp_path / "empty", tmp_path / "missing.md"],
                                 "mine", on_files=counts.append)
    assert counts == [5]  # the four papers and the missing file, once expanded
    # a directory with nothing to ingest is known first; a missing file when it is read
    assert [r.status for r in results] == ["error"] + ["added"] * 4 + ["error"]
    assert not _connection_open(home, "mine")  # closed when done
    kb = await open_knowledge_base("mine")
    assert sorted(d.doc_id for d in await kb.documents()) == sorted(
        r.doc_id for r in results if r.status == "added")
    assert len(stored_chunks(kb)) == sum(r.chunks or 0 for r in results)
    await close_all()

    # Nothing readable: no knowledge base is created at all.
    bad = write(tmp_path, "bad.pdf", b"%PDF-1.4 cut short")
    results = await ingest_paths([bad, tmp_path / "missing.md"], "onlybad")
    assert [r.status for r in results] == ["error", "error"]
    assert await list_knowledge_bases() == ["mine"]
    # An existing one is opened as it is, and closed again.
    results = await ingest_paths([EXAMPLES / "en_sparse_attention.md"], "mine")
    assert [r.status for r in results] == ["unchanged"]
    assert not _connection_open(home, "mine")


async def test_two_ingests_of_the_same_files_store_the_same_documents_and_chunks(
    fake_llm: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ingestion depends on the files alone: the same files ingested into two homes, one
    of them by `scholarflow ingest` in a process of its own with another hash seed, give
    the same document ids, texts and chunks (ids, texts, headings, pages, vectors)."""
    import asyncio
    import os
    import subprocess
    import sys

    pdf = write(tmp_path, "paper.pdf", make_pdf([PAGE_1, PAGE_2], title="Sparse Attention"))
    files = [EXAMPLES / "zh_hybrid_retrieval.md", EXAMPLES / "en_retrieval_qa.md", pdf]
    first = await ingest_paths(files, "lab")
    kb = await open_knowledge_base("lab")
    here = (await kb.documents(), stored_chunks(kb),
            [await kb.document_text(r.doc_id or "") for r in first])
    await close_all()

    other = tmp_path / "other"
    env = {**os.environ, "SCHOLARFLOW_HOME": str(other), "PYTHONHASHSEED": "12345"}
    done = await asyncio.to_thread(
        subprocess.run, [sys.executable, "-m", "scholarflow.cli", "ingest", *map(str, files),
                         "--kb", "lab"], env=env, capture_output=True, text=True, timeout=120,
        check=False)
    assert done.returncode == 0, done.stderr
    monkeypatch.setenv("SCHOLARFLOW_HOME", str(other))
    kb = await open_knowledge_base("lab")
    there = (await kb.documents(), stored_chunks(kb),
             [await kb.document_text(r.doc_id or "") for r in first])
    assert [r.status for r in first] == ["added"] * 3 and len(here[1]) > 3
    assert [d.doc_id for d in here[0]] == [d.doc_id for d in there[0]]
    assert [replace(d, added=None) for d in here[0]] == [replace(d, added=None)
                                                        for d in there[0]]
    assert here[1:] == there[1:]
