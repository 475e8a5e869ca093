"""Hostile files: what a new user or an attacker can hand to `ask --file` and `ingest`.

Special files (a FIFO, /dev/zero, a socket) must never be opened: they would
block or never end. Names with escape sequences or newlines must not reach the
terminal raw. Every bad file is one `error:` line naming the fix, exit 2;
in a folder, an unreadable file is a `warning:` and the others still go in.

Every case runs once, all at once (`outcomes`), each in its own copy of the
seeded home; the tests then check one outcome each.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.integration.hostile.harness import (
    EXAMPLES,
    EXIT_BAD_REQUEST,
    PAPER,
    Call,
    Result,
    Seeded,
    assert_clean_error,
    assert_clean_success,
    assert_intact,
    assert_no_new_session,
    assert_no_secret,
    assert_terminal_safe,
    copy_seeded,
    fingerprint,
    llm_env,
    run_many,
)
from tests.support import FakeOpenAIServer

QUESTION = "What learning rate did they use?"
ESC_NAME = b"evil\x1b]0;pwned\x07\x1b[31m.md"
NEWLINE_NAME = b"two\nlines.md"
BAD_UTF8_NAME = b"bad\xffname.md"


def _bytes_path(folder: Path, name: bytes) -> bytes:
    return os.fsencode(folder) + b"/" + name


@pytest.fixture(scope="module")
def hostile_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every hostile file, made once."""
    root = tmp_path_factory.mktemp("hostile-files")
    (root / "empty-dir").mkdir()
    os.mkfifo(root / "fifo.md")
    (root / "loop1.md").symlink_to("loop2.md")
    (root / "loop2.md").symlink_to("loop1.md")
    (root / "dangling.md").symlink_to("nowhere.md")
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(root / "sock.md"))  # the socket file stays after close
    (root / "empty.md").write_bytes(b"")
    (root / "garbage.md").write_bytes(bytes(range(256)) * 64)
    (root / "nul.txt").write_bytes(b"Some text\x00with NUL bytes\x00 in it. " * 50)
    (root / "corrupt.pdf").write_bytes(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< /Type")
    with (root / "huge.txt").open("wb") as huge:  # sparse: refused by size, never read
        huge.truncate(21_000_000)
    (root / "latin1.md").write_bytes("# Résumé\n\nCafé, naïve, déjà vu.\n".encode("latin-1"))
    (root / "utf16.md").write_bytes(PAPER.read_text(encoding="utf-8").encode("utf-16"))
    Path(os.fsdecode(_bytes_path(root, BAD_UTF8_NAME))).write_bytes(PAPER.read_bytes())
    esc = Path(os.fsdecode(_bytes_path(root, ESC_NAME)))
    esc.write_text("Plain notes without a heading.\n\nThe learning rate was 3e-4.\n")

    mixed = root / "mixed"  # a folder with every kind of trouble and two good files
    mixed.mkdir()
    (mixed / "good.md").write_bytes(PAPER.read_bytes())
    (mixed / "qa.md").write_bytes((EXAMPLES / "en_retrieval_qa.md").read_bytes())
    os.mkfifo(mixed / "fifo.md")
    (mixed / "loop.md").symlink_to("loop.md")
    (mixed / "dangling.md").symlink_to("gone.md")
    Path(os.fsdecode(_bytes_path(mixed, BAD_UTF8_NAME))).write_bytes(PAPER.read_bytes())
    Path(os.fsdecode(_bytes_path(mixed, ESC_NAME))).write_bytes(
        (EXAMPLES / "zh_hybrid_retrieval.md").read_bytes())

    only_bad = root / "only-bad"  # nothing in it can be read
    only_bad.mkdir()
    os.mkfifo(only_bad / "fifo.md")
    (only_bad / "loop.md").symlink_to("loop.md")

    papers = root / "papers"  # a folder of good files, for --file FOLDER
    papers.mkdir()
    (papers / "a.md").write_bytes(PAPER.read_bytes())
    (papers / "b.md").write_bytes((EXAMPLES / "en_retrieval_qa.md").read_bytes())
    os.mkfifo(papers / "pipe.md")
    return root


Args = Callable[[Path], Sequence[str | bytes]]


@dataclass(frozen=True)
class Case:
    id: str
    args: Args
    exit_code: int = EXIT_BAD_REQUEST
    names: tuple[str, ...] = ()  # in the error line: what is wrong and what to do
    new_session: bool = False  # a run took place (a success, or a failure inside it)
    extra: tuple[str, ...] = field(default=())  # on stderr besides (warnings)


def ask_file(*names: str | bytes, question: str = QUESTION) -> Args:
    def args(root: Path) -> list[str | bytes]:
        paths = [_bytes_path(root, n) if isinstance(n, bytes) else
                 (n if n.startswith("/") else str(root / n)) for n in names]
        return ["ask", question, "--no-thinking", "--file", *paths]
    return args


def ingest(*names: str | bytes, kb: str = "newkb") -> Args:
    def args(root: Path) -> list[str | bytes]:
        paths = [_bytes_path(root, n) if isinstance(n, bytes) else str(root / n) for n in names]
        return ["ingest", *paths, "--kb", kb]
    return args


BAD = [
    Case("missing", ask_file("no-such.md"), names=("no such file", "check the path")),
    Case("directory-without-papers", ask_file("empty-dir"), names=("holds no", "give files")),
    # Every file skipped (a FIFO, a symlink loop): no question goes on without its documents.
    Case("directory-of-unreadable-files", ask_file("only-bad"),
         names=("holds no PDF, Markdown or text file that can be read", "fix or rename",
                "give other files"), extra=("warning: skipped", "symlink loop")),
    Case("fifo", ask_file("fifo.md"), names=("FIFO", "not a regular file", "give a PDF")),
    Case("dev-zero", ask_file("/dev/zero"), names=("device", "not a regular file")),
    Case("socket", ask_file("sock.md"), names=("socket", "not a regular file")),
    Case("symlink-loop", ask_file("loop1.md"), names=("symlink loop", "fix the link")),
    Case("dangling-symlink", ask_file("dangling.md"),
         names=("does not exist", "fix or remove the link")),
    Case("name-too-long", ask_file("x" * 300 + ".md"), names=("too long", "rename")),
    Case("non-utf8-name", ask_file(BAD_UTF8_NAME), names=("not valid UTF-8", "rename")),
    Case("esc-osc-name-missing", ask_file(b"missing-" + ESC_NAME),
         names=("no such file", "\\x1b]0;pwned\\x07", "check the path")),
    Case("newline-name-missing", ask_file(b"missing-" + NEWLINE_NAME),
         names=("no such file", "two\\nlines.md")),
    Case("empty-file", ask_file("empty.md"), names=("is empty", "some text")),
    Case("binary-garbage", ask_file("garbage.md"), names=("looks binary", "give a PDF")),
    Case("nul-bytes", ask_file("nul.txt"), names=("looks binary",)),
    Case("corrupt-pdf", ask_file("corrupt.pdf"), names=("not a readable PDF", "re-export")),
    Case("over-the-size-cap", ask_file("huge.txt"),
         names=("20 MB limit", "scholarflow ingest")),
    Case("latin-1", ask_file("latin1.md"), names=("not UTF-8", "save it as UTF-8")),
    Case("one-bad-among-good", ask_file("papers/a.md", "fifo.md"),
         names=("not a regular file",)),
    Case("ingest-fifo", ingest("fifo.md"), names=("not a regular file",)),
    Case("ingest-symlink-loop", ingest("loop1.md"), names=("symlink loop",)),
    Case("ingest-only-unreadable-folder", ingest("only-bad"),
         names=("nothing was ingested", "rename")),
]

GOOD = [
    Case("utf16-with-bom", ask_file("utf16.md"), exit_code=0, new_session=True),
    Case("several-paths-and-a-folder", ask_file("papers/a.md", "utf16.md", "papers",
                                                question="Summarize these papers"),
         exit_code=0, new_session=True, extra=("warning: skipped", "pipe.md")),
    Case("esc-name-that-exists", ask_file(ESC_NAME), exit_code=0, new_session=True),
    Case("ingest-mixed-folder", ingest("mixed"), exit_code=0,
         extra=("warning: skipped", "FIFO", "symlink loop", "not valid UTF-8", "missing file")),
]


@dataclass(frozen=True)
class Outcome:
    seeded: Seeded
    result: Result


@pytest.fixture(scope="module")
def outcomes(seeded_template: Seeded, llm_server: FakeOpenAIServer, hostile_dir: Path,
             tmp_path_factory: pytest.TempPathFactory) -> dict[str, Outcome]:
    llm_server.reset()
    cases = [*BAD, *GOOD]
    homes = {c.id: copy_seeded(seeded_template, tmp_path_factory.mktemp(c.id) / "home")
             for c in cases}
    calls = [Call(c.args(hostile_dir), llm_env(llm_server.base_url, homes[c.id].home))
             for c in cases]
    calls.append(Call(["ask", QUESTION, "--no-thinking", "--file", str(hostile_dir / "papers"),
                       "--file", str(hostile_dir / "utf16.md"), "--json"],
                      llm_env(llm_server.base_url, copy_seeded(
                          seeded_template, tmp_path_factory.mktemp("repeat") / "home").home)))
    results = run_many(calls)
    found = {c.id: Outcome(homes[c.id], r) for c, r in zip(cases, results[:-1], strict=True)}
    found["repeated-file-flag"] = Outcome(homes[cases[0].id], results[-1])
    return found


@pytest.mark.parametrize("case", BAD, ids=[c.id for c in BAD])
def test_a_bad_file_is_one_line_naming_the_fix(case: Case, outcomes: dict[str, Outcome]) -> None:
    seeded, result = outcomes[case.id].seeded, outcomes[case.id].result
    assert_clean_error(result, exit_code=case.exit_code, names=case.names)
    for text in case.extra:
        assert text in result.stderr, result.describe()
    assert_no_secret(seeded.home, result.stdout, result.stderr)
    assert_intact(seeded)
    assert_no_new_session(seeded)  # rejected before the run: nothing left behind
    assert not (seeded.home / "kb" / "newkb").exists()  # nor a knowledge base of nothing


@pytest.mark.parametrize("case", GOOD, ids=[c.id for c in GOOD])
def test_a_good_file_goes_in(case: Case, outcomes: dict[str, Outcome]) -> None:
    seeded, result = outcomes[case.id].seeded, outcomes[case.id].result
    assert_clean_success(result)
    for text in case.extra:
        assert text in result.stderr, result.describe()
    assert_no_secret(seeded.home, result.stdout, result.stderr)
    assert_intact(seeded)
    if case.new_session:
        assert len(fingerprint(seeded.home)["sessions"]) == 2, result.describe()


def test_ingest_skips_what_it_cannot_read_and_takes_the_rest(
        outcomes: dict[str, Outcome]) -> None:
    seeded, result = outcomes["ingest-mixed-folder"].seeded, outcomes["ingest-mixed-folder"].result
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert sorted(d["status"] for d in lines) == ["added"] * 3, result.describe()
    # The ESC in the name is in the JSON, escaped: the terminal never sees it raw.
    assert "\x1b" not in result.stdout and "\\u001b]0;pwned" in result.stdout
    assert any(d["source"].endswith(os.fsdecode(ESC_NAME)) for d in lines)
    assert_terminal_safe(result.stdout.encode())
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 4, result.describe()  # FIFO, loop, dangling link, bad name
    assert "bad\\xffname.md" in result.stderr  # the undecodable byte shown, not raw
    stored = fingerprint(seeded.home)["kb:newkb"]
    assert len(stored[0]) == 3


def test_file_flag_takes_several_paths_and_repeats(outcomes: dict[str, Outcome]) -> None:
    result = outcomes["repeated-file-flag"].result
    assert_clean_success(result)
    final = [json.loads(line) for line in result.stdout.splitlines()][-1]
    assert final["type"] == "final_answer", result.describe()
    several = outcomes["several-paths-and-a-folder"].result
    assert "warning: skipped" in several.stderr and "pipe.md" in several.stderr


# --- in process: the helpers under the cases above ------------------------------------

@pytest.mark.parametrize(("raw", "shown"), [
    ("evil\x1b]0;pwned\x07\x1b[31m.md", "evil\\x1b]0;pwned\\x07\\x1b[31m.md"),
    ("two\nlines.md", "two\\nlines.md"),
    ("csi\x9b31m.md", "csi\\x9b31m.md"),  # C1: one byte that a terminal reads as ESC [
    ("trojan\u202egnp.md", "trojan\\u202egnp.md"),  # a bidi override reorders the name
    ("bad\udcffname.md", "bad\\xffname.md"),  # a non-UTF-8 byte, shown as the byte
    ("中文 名字.md", "中文 名字.md"),  # printable text stays as it is
])
def test_names_are_printed_escaped(raw: str, shown: str) -> None:
    from scholarflow.printable import safe_json, safe_text

    assert safe_text(raw) == shown
    line = safe_json({"source": raw})
    assert json.loads(line) == {"source": raw}  # still the exact name, once decoded
    assert_terminal_safe(line.encode("utf-8", "surrogatepass"))
    assert not any("\x80" <= c <= "\x9f" or c == "\u202e" for c in line)


async def test_scratch_index_is_emptied_before_it_outgrows_its_bound(
        fake_llm: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> None:
    from scholarflow.nodes import recall_scope as recall
    from scholarflow.retrieval.access import open_kb

    first, second = PAPER.read_text(encoding="utf-8"), (EXAMPLES / "en_retrieval_qa.md").read_text(
        encoding="utf-8")
    scratch = await open_kb(recall.DIRECT_KB, create=True)
    await recall.index_direct_documents(scratch, {"first": first})
    from scholarflow.nodes.recall_scope import _folder_bytes

    used = _folder_bytes(getattr(scratch, "folder"))  # noqa: B009 - the embedded index's
    monkeypatch.setattr(recall, "SCRATCH_MAX_BYTES", used + 1000)
    await recall.index_direct_documents(scratch, {"first": first})  # there: nothing to add
    assert [d.doc_id for d in await scratch.documents()] == ["first"]
    await recall.index_direct_documents(scratch, {"second": second})  # would outgrow it
    kept = await (await open_kb(recall.DIRECT_KB)).documents()
    assert [d.doc_id for d in kept] == ["second"]


@pytest.mark.parametrize(("code", "names"), [
    (13, ("permission denied", "check its permissions")),  # EACCES: root reads anything,
    (1, ("permission denied", "check its permissions")),  # so simulated here (EPERM too)
    (40, ("symlink loop", "fix the link")),  # ELOOP
    (36, ("too long", "rename")),  # ENAMETOOLONG
    (5, ("Input/output error", "check the file")),  # EIO: a failing disk
])
def test_what_stat_says_becomes_the_fix(code: int, names: tuple[str, ...], tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from scholarflow.ingest.documents import DocumentError, read_document_bytes

    def refuse(path: object, *args: object, **kwargs: object) -> os.stat_result:
        raise OSError(code, os.strerror(code), str(path))

    monkeypatch.setattr(os, "stat", refuse)
    with pytest.raises(DocumentError) as info:
        read_document_bytes(tmp_path / "paper.md")
    for name in names:
        assert name in str(info.value)
    assert "\n" not in str(info.value)
