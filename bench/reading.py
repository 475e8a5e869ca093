"""`bench/reading.py`: how scholarflow reads old and new papers (issue "every paper a
person can read"), through the very path `ingest` and `read` use (`prepare_file`).

Over `../shared/corpus/pwl` (classic computer-science papers: scans, old TeX, unmapped
fonts) and `../shared/corpus/litqa2` (modern journal PDFs), it reports:

- outcomes (read / refused), pages found unreadable (not text, or scans), pages read by
  OCR and the CPU-seconds a page it cost;
- the garbage-page measure (readers/quality.py) on a tuning half and a checking half of
  the pwl files (every other file, sorted by name): the highest share of a page whose
  fonts map to no characters, the lowest of a real page, and the errors at the
  threshold in use; and the lowest real page of LitQA2;
- ligature-loss words: words of the tokenizer's vocabulary with fi/ff/fl/ffi/ffl written
  without the ligature ("dened", "de ned", "signi cant") where the broken form is no word,
  in the case a lost ligature leaves (acronyms and capitalised names are not counted);
- title, authors (surnames, in order) and year against tests/data/pwl_metadata.jsonl,
  read by hand from each PDF's first page (a refused file counts as wrong), overall and
  on the same tuning and checking halves;
- reference-list chunks, those of them long and without a year (an appendix hidden as
  references), and body chunks under an appendix, proof or supplement heading;
- LitQA2's dev key passages: intact in the text (every 6-word shingle, case and
  punctuation ignored) and within one chunk.

    .venv/bin/python bench/reading.py [--corpus ../shared/corpus] [--json out.json]
        [--no-ocr | --ocr-engine auto|tesseract|rapidocr] [--only pwl|litqa2]

(`--ocr-engine` sets SCHOLARFLOW_OCR; `bench/ocr.py` compares the engines page by page.)

A benchmark, not a test: the exit code is 0 whatever the numbers.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import sys
import time
import unicodedata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# The pwl files whose fonts map glyphs to no characters (the corpus README names three).
UNMAPPED = ("database-metatheory", "cheriton-and-skeens", "functional-reactive-animation")
_ANY_YEAR = re.compile(r"(?<!\d)(?:1[6-9]|20)\d\d(?!\d)")
_BACK = re.compile(r"(?i)\b(?:appendi(?:x|ces)|supplement\w*|proofs?)\b|^[A-H](?:\.\d)*\.?\s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, default=ROOT.parent / "shared" / "corpus")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--no-ocr", action="store_true")
    parser.add_argument("--ocr-engine", choices=("auto", "tesseract", "rapidocr"))
    parser.add_argument("--only", choices=("pwl", "litqa2"))
    args = parser.parse_args()
    if args.ocr_engine:
        os.environ["SCHOLARFLOW_OCR"] = args.ocr_engine
    report: dict[str, Any] = {}
    for name in ("pwl", "litqa2"):
        if args.only in (None, name):
            report[name] = corpus_report(args.corpus / name, name, ocr=not args.no_ocr)
    if args.only in (None, "litqa2"):
        report["litqa2"]["key_passages"] = key_passages(args.corpus / "litqa2",
                                                        report["litqa2"].pop("_read"))
    for part in report.values():
        part.pop("_read", None)
    text = json.dumps(report, indent=2, ensure_ascii=False)
    print(text)
    if args.json:
        args.json.write_text(text + "\n", encoding="utf-8")
    return 0


def corpus_report(folder: Path, name: str, *, ocr: bool) -> dict[str, Any]:
    from scholarflow.ingest.chunking import chunk_document
    from scholarflow.ingest.documents import DocumentError
    from scholarflow.ingest.extract import extract_file
    from scholarflow.ingest.ocr import ocr_progress

    files = sorted((folder / "pdfs").glob("*.pdf"))
    read: dict[str, Any] = {}
    out: dict[str, Any] = {"files": len(files), "ok": 0, "refused": [], "pages": 0,
                           "unreadable_pages": 0, "ocr_pages": 0, "ocr_cpu_seconds": 0.0,
                           "chunks": 0, "references_chunks": 0, "yearless_references": 0,
                           "back_matter_chunks": 0, "ligature_loss_words": 0}
    cpu_ocr: list[float] = []
    ocr_progress.set(None)
    started = time.process_time()
    for path in files:
        before = _children_cpu()
        t0 = time.process_time()
        try:
            extracted = extract_file(path, ocr=None if ocr else False)
        except DocumentError as exc:
            out["refused"].append(f"{path.name}: {' '.join(str(exc).split())[:160]}")
            continue
        spent = time.process_time() - t0 + _children_cpu() - before
        chunks = chunk_document(extracted).chunks
        read[path.name] = (extracted, chunks)
        out["ok"] += 1
        out["pages"] += extracted.page_count or 0
        out["unreadable_pages"] += len(extracted.unreadable_pages)
        if extracted.ocr_pages:
            out["ocr_pages"] += len(extracted.ocr_pages)
            cpu_ocr.append(spent)
        out["chunks"] += len(chunks)
        for chunk in chunks:
            if chunk.kind == "references":
                out["references_chunks"] += 1
                if len(chunk.text.split()) >= 60 and not _ANY_YEAR.search(chunk.text):
                    out["yearless_references"] += 1
            elif chunk.heading and _BACK.search(chunk.heading.split(" > ")[0]):
                out["back_matter_chunks"] += 1
        losses = ligature_losses(extracted.document.content)
        out["ligature_loss_words"] += len(losses)
        out.setdefault("ligature_losses", []).extend(f"{path.name[:40]}: {w}" for w in losses)
    out["cpu_seconds"] = round(time.process_time() - started, 1)
    out["ocr_cpu_seconds"] = round(sum(cpu_ocr), 1)
    out["ocr_cpu_seconds_a_page"] = (round(sum(cpu_ocr) / out["ocr_pages"], 2)
                                     if out["ocr_pages"] else None)
    out["garbage_measure"] = garbage_measure(folder, name)
    if name == "pwl":
        out["metadata"] = metadata_accuracy(read)
    out["_read"] = read
    return out


def _children_cpu() -> float:
    import resource

    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def garbage_measure(folder: Path, name: str) -> dict[str, Any]:
    """Each page's word share (engine text after cleanup, before the garbage filter)."""
    from scholarflow.ingest.readers import get_reader
    from scholarflow.ingest.readers.layout import page_texts
    from scholarflow.ingest.readers.quality import MIN_JUDGED, MIN_WORD_SHARE, word_share

    halves: dict[str, dict[str, list[float]]] = {"tuning": {"garbage": [], "real": []},
                                                 "checking": {"garbage": [], "real": []}}
    for index, path in enumerate(sorted((folder / "pdfs").glob("*.pdf"))):
        try:
            content = get_reader().read(path.read_bytes(), path.name)
        except Exception:  # a refused file has no pages to measure
            continue
        half = halves["tuning" if index % 2 == 0 or name != "pwl" else "checking"]
        label = "garbage" if any(key in path.name for key in UNMAPPED) else "real"
        for text in page_texts(content.pages):
            share, judged = word_share(text)
            if judged >= MIN_JUDGED:
                half[label].append(share)
    out: dict[str, Any] = {"threshold": MIN_WORD_SHARE}
    for half_name, half in halves.items():
        garbage, real = half["garbage"], half["real"]
        if not garbage and not real:
            continue
        out[half_name] = {
            "garbage_pages": len(garbage), "real_pages": len(real),
            "highest_garbage": round(max(garbage), 3) if garbage else None,
            "lowest_real": round(min(real), 3) if real else None,
            "garbage_kept": sum(s >= MIN_WORD_SHARE for s in garbage),
            "real_dropped": sum(s < MIN_WORD_SHARE for s in real)}
    return out


_LIGATURE_WORDS: dict[str, tuple[str, bool]] | None = None
# A run of letters (any script: "Müller" is no "M" + "ller") not glued to an address,
# a closing bracket or a hyphen ("(ADP-ribosyl)ation", "ght@cos.ufrj.br", "rebase.neb.com").
_RUN = re.compile(r"(?<![\w)\]@./\u2010\u2011-])[^\W\d_]+(?![\w@/]|\.\w)")


def ligature_losses(text: str) -> list[str]:
    """Broken forms in `text` of vocabulary words with a ligature: "dened", "de ned".

    As a lost ligature leaves them: in lower case, but for a capital the word had before
    its ligature and a gap ("Signi cant"); an acronym ("LTR", "NES") or a capitalised
    run ("Ying", "Chau") is a name more often than a broken word."""
    broken = _ligature_words()
    runs = [(m.group(0), m.start(), m.end()) for m in _RUN.finditer(text)]
    found = [run for run, _, _ in runs if _broken(run, broken)]
    for (first, _, end), (second, start, _) in itertools.pairwise(runs):
        if text[end:start] == " " and second.islower() and _broken(f"{first} {second}", broken):
            found.append(f"{first} {second}".lower())
    return found


def _broken(form: str, broken: dict[str, tuple[str, bool]]) -> bool:
    got = broken.get(form.lower())
    if got is None or form.isupper():
        return False
    at_start = got[1]
    # A capital only before a gap ("Signi cant"): one capitalised run is a name ("Chau").
    return form.islower() or (not at_start and " " in form and form[0].isupper()
                              and form[1:].islower())


def _ligature_words() -> dict[str, tuple[str, bool]]:
    """Broken form -> (word, whether its ligature starts it), over the vocabulary."""
    global _LIGATURE_WORDS
    from scholarflow.ingest.readers.quality import is_word

    if _LIGATURE_WORDS is None:
        from scholarflow.tokens import encoding

        enc = encoding()
        broken: dict[str, tuple[str, bool]] = {}
        for token in range(enc.n_vocab):
            try:
                word = enc.decode_single_token_bytes(token).decode("utf-8")
            except (KeyError, UnicodeDecodeError):
                continue
            word = word.strip()
            if len(word) < 5 or not word.isalpha() or not word.islower():
                continue
            for ligature in ("ffi", "ffl", "fi", "ff", "fl"):
                if ligature in word:
                    for gap in ("", " "):
                        form = word.replace(ligature, gap, 1)
                        if gap and len(word) < 6:
                            continue  # "in x" is as often a variable as a broken "infix"
                        if len(form.strip()) >= 3 and not is_word(form.replace(" ", "")):
                            broken.setdefault(form.strip(), (word, word.startswith(ligature)))
                    break
        _LIGATURE_WORDS = broken
    return _LIGATURE_WORDS


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", unicodedata.normalize("NFKD", text).encode(
        "ascii", "ignore").decode().lower())


def _surname(name: str) -> str:
    words = re.sub(r"\(.*?\)", "", name).split()
    return _norm(words[-1]) if words else ""


def metadata_accuracy(read: dict[str, Any]) -> dict[str, Any]:
    rows = [json.loads(line) for line in (ROOT / "tests" / "data" / "pwl_metadata.jsonl")
            .read_text(encoding="utf-8").splitlines() if line.strip()]
    right = {"title": 0, "authors": 0, "year": 0}
    # The garbage measure's halves: every other file, sorted by name.
    order = {name: index for index, name in enumerate(sorted(row["file"] for row in rows))}
    halves = {half: {"papers": 0, "title": 0, "authors": 0, "year": 0}
              for half in ("tuning", "checking")}
    wrong: list[str] = []
    for row in rows:
        half = halves["tuning" if order[row["file"]] % 2 == 0 else "checking"]
        half["papers"] += 1
        got = read.get(row["file"])
        if got is None:
            wrong.append(f"{row['file']}: refused")
            continue
        extracted = got[0]
        title = extracted.document.title
        ok_title = _norm(title) == _norm(row["title"]) or (
            title.endswith("…") and _norm(row["title"]).startswith(_norm(title[:-1])))
        ok_authors = [_surname(a) for a in extracted.authors] == [
            _surname(a) for a in row["authors"]]
        ok_year = extracted.year == row["year"] or extracted.year in row.get("also_years", [])
        right["title"] += ok_title
        right["authors"] += ok_authors
        right["year"] += ok_year
        for key, ok in (("title", ok_title), ("authors", ok_authors), ("year", ok_year)):
            half[key] += ok
        if not (ok_title and ok_authors and ok_year):
            wrong.append(f"{row['file'][:50]}: "
                         + ("" if ok_title else f"title {title[:60]!r} ")
                         + ("" if ok_authors else f"authors {list(extracted.authors)[:3]} ")
                         + ("" if ok_year else f"year {extracted.year}"))
    total = len(rows)
    return {"papers": total, **{k: round(v / total, 3) for k, v in right.items()},
            **{name: {k: round(v / half["papers"], 3) if k != "papers" else v
                      for k, v in half.items()} for name, half in halves.items()},
            "not_all_right": wrong}


def key_passages(folder: Path, read: dict[str, Any]) -> dict[str, Any]:
    """LitQA2 dev key passages: intact in the paper's text, and within one chunk."""
    from urllib.parse import quote

    questions = [json.loads(line) for line in (folder / "questions-dev.jsonl")
                 .read_text(encoding="utf-8").splitlines() if line.strip()]
    with_key = intact_text = intact_chunk = 0
    for question in questions:
        passage = question.get("key-passage")
        if not passage:
            continue
        with_key += 1
        for source in question.get("sources", []):
            doi = source.split("doi.org/", 1)[-1]
            got = read.get(quote(doi, safe="") + ".pdf")
            if got is None:
                continue
            extracted, chunks = got
            shingles = _shingles(passage)
            if shingles <= _shingles(extracted.document.content):
                intact_text += 1
            if any(shingles <= _shingles(chunk.text) for chunk in chunks):
                intact_chunk += 1
            break
    return {"with_key_passage": with_key, "intact_in_text": intact_text,
            "intact_in_one_chunk": intact_chunk}


def _shingles(text: str, size: int = 6) -> set[tuple[str, ...]]:
    words = _words(text)
    return {tuple(words[i:i + size]) for i in range(max(1, len(words) - size + 1))}


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", unicodedata.normalize("NFKC", text).lower())


if __name__ == "__main__":
    sys.exit(main())
