"""Documents given directly: loading files, ids, titles, and the example papers."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from scholarflow.errors import InputError
from scholarflow.ingest.documents import (
    Document,
    DocumentError,
    content_hash,
    document_from_text,
    documents_from_mapping,
)
from scholarflow.ingest.extract import load_document_file
from scholarflow.tokens import count_tokens

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "papers"

PAPER = "# A Study of Things\n\nAuthors: A. Person\n\n## Abstract\n\nWe study things.\n"


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def error_of(path: Path | str) -> str:
    with pytest.raises(DocumentError) as info:
        load_document_file(path)
    message = str(info.value)
    assert "\n" not in message  # one line a person can act on
    return message


# --- loading files ------------------------------------------------------------


def test_markdown_file(tmp_path: Path) -> None:
    path = write(tmp_path, "paper.md", PAPER.encode())
    doc = load_document_file(path)
    assert isinstance(doc, Document)
    assert doc.title == "A Study of Things"
    assert doc.content == PAPER
    assert doc.content_hash == hashlib.sha256(PAPER.encode()).hexdigest()
    assert doc.doc_id == doc.content_hash[:16]
    assert doc.source == str(path)


def test_text_file_and_other_suffixes(tmp_path: Path) -> None:
    for name in ("notes.txt", "notes.markdown", "notes.rst", "NOTES"):
        doc = load_document_file(write(tmp_path, name, b"Plain title line\nbody text\n"))
        assert doc.title == "Plain title line"


def test_accepts_str_path(tmp_path: Path) -> None:
    path = write(tmp_path, "p.md", PAPER.encode())
    assert load_document_file(str(path)) == load_document_file(path)


def test_utf8_with_bom(tmp_path: Path) -> None:
    doc = load_document_file(write(tmp_path, "bom.md", b"\xef\xbb\xbf" + PAPER.encode()))
    assert doc.content == PAPER
    assert doc.title == "A Study of Things"


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be"])
def test_utf16_with_bom(tmp_path: Path, encoding: str) -> None:
    text = "# 混合检索方法\n\n中文正文。\n"
    data = text.encode(encoding)
    if encoding != "utf-16":  # the -le/-be codecs write no BOM; add the right one
        data = ("\ufeff".encode(encoding)) + data
    doc = load_document_file(write(tmp_path, "zh.md", data))
    assert doc.content == text
    assert doc.title == "混合检索方法"


def test_newlines_normalised(tmp_path: Path) -> None:
    doc = load_document_file(write(tmp_path, "crlf.txt", b"Title\r\nline two\rline three\r\n"))
    assert doc.content == "Title\nline two\nline three\n"
    # the same text given directly gets the same identity
    assert document_from_text("Title\nline two\nline three\n").doc_id == doc.doc_id


def test_binary_file(tmp_path: Path) -> None:
    path = write(tmp_path, "image.md", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(100))
    assert error_of(path) == f"{path} looks binary; give a PDF, Markdown or text file"


def test_mostly_control_bytes_is_binary(tmp_path: Path) -> None:
    path = write(tmp_path, "weird.txt", bytes(range(1, 32)) * 50)
    assert "looks binary" in error_of(path)


def test_pdf_by_suffix_and_by_content(tmp_path: Path) -> None:
    from tests.unit.test_ingest import make_pdf

    data = make_pdf([["A Study of PDFs", "We study things."], ["Page two text."]])
    doc = load_document_file(write(tmp_path, "paper.pdf", data))
    assert doc.title == "A Study of PDFs"
    assert "We study things." in doc.content and "Page two text." in doc.content
    assert doc.doc_id == content_hash(doc.content)[:16]
    assert load_document_file(write(tmp_path, "disguised.txt", data)).doc_id == doc.doc_id

    broken = write(tmp_path, "broken.pdf", b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n")
    assert error_of(broken).startswith(f"{broken} is not a readable PDF (")
    disguised = write(tmp_path, "broken.txt", b"%PDF-1.4\nstream\x00\x01")
    assert error_of(disguised).startswith(f"{disguised} is not a readable PDF (")


def test_encrypted_pdf(tmp_path: Path) -> None:
    from tests.unit.test_ingest import make_pdf

    path = write(tmp_path, "locked.pdf", make_pdf([["secret"]], password="pw"))
    assert error_of(path) == f"{path} is encrypted; decrypt it first"


def test_missing_pdf_says_missing(tmp_path: Path) -> None:
    path = tmp_path / "nope.pdf"
    assert error_of(path) == f"no such file: {path}; check the path"


@pytest.mark.parametrize("data", [b"", b"   \n\t\r\n  "])
def test_empty_file(tmp_path: Path, data: bytes) -> None:
    path = write(tmp_path, "empty.md", data)
    assert error_of(path) == f"{path} is empty; give a file with some text"


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "missing.md"
    assert error_of(path) == f"no such file: {path}; check the path"
    assert error_of(tmp_path / "missing.md" / "below.md").startswith("no such file:")


def test_directory(tmp_path: Path) -> None:
    assert error_of(tmp_path) == (
        f"{tmp_path} is a directory; give a PDF, Markdown or text file")


def test_unreadable_file(tmp_path: Path) -> None:
    path = write(tmp_path, "secret.md", PAPER.encode())
    path.chmod(0)
    try:
        if os.access(path, os.R_OK):
            pytest.skip("running with privileges that read any file (root)")
        assert error_of(path) == f"cannot read {path}: permission denied; check its permissions"
    finally:
        path.chmod(0o600)


def test_permission_denied_message(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The same branch as above, reachable even as root.
    path = write(tmp_path, "secret.md", PAPER.encode())

    def deny(self: Path) -> bytes:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "read_bytes", deny)
    assert error_of(path) == f"cannot read {path}: permission denied; check its permissions"


def test_not_utf8(tmp_path: Path) -> None:
    path = write(tmp_path, "gbk.txt", "中英双语检索".encode("gbk"))
    message = error_of(path)
    assert str(path) in message
    assert "not UTF-8" in message


def test_error_is_an_input_error_and_a_value_error(tmp_path: Path) -> None:
    with pytest.raises(InputError):
        load_document_file(tmp_path / "missing.md")
    with pytest.raises(ValueError):
        load_document_file(tmp_path / "missing.md")


def test_large_file(tmp_path: Path) -> None:
    body = "A line of a very long paper about attention and retrieval.\n" * 200_000
    doc = load_document_file(write(tmp_path, "big.md", ("# Big\n" + body).encode()))
    assert doc.title == "Big"
    assert len(doc.content) > 10_000_000


# --- ids and hashes -------------------------------------------------------------


def test_content_hash_is_sha256_of_utf8() -> None:
    assert content_hash("") == hashlib.sha256(b"").hexdigest()
    assert content_hash("文献") == hashlib.sha256("文献".encode()).hexdigest()


def test_doc_id_stable_and_content_based(tmp_path: Path) -> None:
    a = load_document_file(write(tmp_path, "a.md", PAPER.encode()))
    b = load_document_file(write(tmp_path, "b.md", PAPER.encode()))
    assert a.doc_id == b.doc_id == document_from_text(PAPER).doc_id
    assert len(a.doc_id) == 16
    assert document_from_text(PAPER + "more").doc_id != a.doc_id


def test_explicit_doc_id_title_source() -> None:
    doc = document_from_text(PAPER, doc_id="mine", title="  Given  ", source="x/y.md")
    assert (doc.doc_id, doc.title, doc.source) == ("mine", "Given", "x/y.md")
    assert doc.content_hash == content_hash(PAPER)


def test_document_from_text_rejects_empty_and_bad_ids() -> None:
    with pytest.raises(DocumentError, match="empty"):
        document_from_text("  \n ")
    with pytest.raises(DocumentError, match="non-empty"):
        document_from_text("text", doc_id=" ")


def test_document_is_frozen() -> None:
    doc = document_from_text(PAPER)
    with pytest.raises(AttributeError):
        doc.title = "other"  # type: ignore[misc]


# --- titles -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "title"),
    [
        ("# Title #\n\nbody", "Title"),
        ("\n\n## Second level first\nbody", "Second level first"),
        ("Authors line\n\n# Real Title\n", "Real Title"),
        ("Setext Title\n============\n\nbody", "Setext Title"),
        ("---\ntitle: 'Front Matter Title'\nauthor: x\n---\n# Heading\n", "Front Matter Title"),
        ("---\nauthor: x\n---\n\n# After Front Matter\n", "After Front Matter"),
        ("   first non-empty line   \nsecond", "first non-empty line"),
        ("#hashtag is not a heading\nbody", "#hashtag is not a heading"),
        ("摘要\n\n# 大语言模型多文档摘要\n", "大语言模型多文档摘要"),
    ],
)
def test_title_extraction(text: str, title: str) -> None:
    assert document_from_text(text).title == title


def test_heading_far_down_is_not_the_title() -> None:
    text = "Plain first line\n" + "words\n" * 100 + "## References\n"
    assert document_from_text(text).title == "Plain first line"


def test_long_title_clipped() -> None:
    title = document_from_text("x" * 500).title
    assert len(title) == 120
    assert title.endswith("…")


def test_title_falls_back_to_file_stem(tmp_path: Path) -> None:
    doc = load_document_file(write(tmp_path, "my_paper.md", b"#\n\n======\n"))
    assert doc.title == "my_paper"


# --- mapping ----------------------------------------------------------------------


def test_documents_from_mapping_keeps_ids_and_order() -> None:
    docs = documents_from_mapping({"z": "# Zed\nbody", "a": "Alpha line\n", "m": PAPER})
    assert [d.doc_id for d in docs] == ["z", "a", "m"]
    assert [d.title for d in docs] == ["Zed", "Alpha line", "A Study of Things"]
    assert docs[2].content_hash == content_hash(PAPER)
    assert all(d.source is None for d in docs)


def test_documents_from_mapping_names_the_bad_entry() -> None:
    with pytest.raises(DocumentError, match="document b is empty"):
        documents_from_mapping({"a": "fine", "b": ""})
    with pytest.raises(DocumentError, match="content must be text"):
        documents_from_mapping({"a": 3})  # type: ignore[dict-item]


# --- the example papers -------------------------------------------------------------

EXAMPLE_FILES = sorted(EXAMPLES.glob("*.md"))


def test_there_are_four_example_papers() -> None:
    assert len(EXAMPLE_FILES) == 4


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=lambda p: p.name)
def test_example_paper_loads(path: Path) -> None:
    doc = load_document_file(path)
    assert doc.title and doc.title != path.stem
    assert doc.content.startswith("# ")
    assert 500 <= count_tokens(doc.content) <= 4000
    assert "|---|" in doc.content  # at least one table of numbers
