"""`extract`: PDF text extraction on LitQA2's dev split, per engine.

For each engine: how many of the dev split's key passages survive extraction
intact (all of the passage's 6-word shingles, case and punctuation ignored, are
in the extracted text), and how many at least 80% and 50%; the seconds to
extract all the corpus's PDFs (wall and CPU); the files it refused.

Engines: scholarflow's own reading (`extract_pdf`: the configured reader plus
its layout cleanup), the same cleanup over each other reader, and the raw
engines (pypdfium2, PyMuPDF, pypdf: their plain text, no cleanup).

    .venv/bin/python -m bench.litqa extract [--corpus DIR]
        [--engines scholarflow,pdfium,pymupdf,pypdf] [--json out.json]

An engine whose package is not installed is skipped (PyMuPDF is an opt-in extra).
The questions' halves do not apply: extraction has nothing to tune per question.
"""

from __future__ import annotations

import argparse
import io
import json
import re
import sys
import time
import unicodedata
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any
from urllib.parse import quote

from bench.litqa.questions import corpus

SHINGLE = 6
_WORD = re.compile(r"\w+")

Extract = Callable[[bytes], str]


def words(text: str) -> list[str]:
    """Lower-case words, punctuation and case ignored (NFKC first: ligatures, widths)."""
    return _WORD.findall(unicodedata.normalize("NFKC", text).lower())


def shingles(tokens: Sequence[str], size: int = SHINGLE) -> set[tuple[str, ...]]:
    if len(tokens) < size:
        return {tuple(tokens)} if tokens else set()
    return {tuple(tokens[i:i + size]) for i in range(len(tokens) - size + 1)}


def coverage(passage: str, text_shingles: set[tuple[str, ...]]) -> float:
    """The share of the passage's 6-word shingles found in a text's shingles."""
    wanted = shingles(words(passage))
    return len(wanted & text_shingles) / len(wanted) if wanted else 0.0


def pdf_name(source: str) -> str:
    """The corpus file of a question's source DOI URL (file name = URL-quoted DOI + .pdf)."""
    doi = source.split("doi.org/", 1)[-1]
    return quote(doi, safe="") + ".pdf"


def dev_questions(corpus: Path) -> list[dict[str, Any]]:
    """The dev split's questions that have a key passage."""
    with (corpus / "questions-dev.jsonl").open(encoding="utf-8") as lines:
        questions = [json.loads(line) for line in lines if line.strip()]
    return [q for q in questions if q.get("key-passage")]


# --- engines --------------------------------------------------------------------


def _ours(reader: str | None) -> Extract:
    def extract(raw: bytes) -> str:
        from scholarflow.ingest.extract import extract_pdf

        return extract_pdf(raw, "bench.pdf", reader=reader).document.content
    return extract


def _raw_pdfium(raw: bytes) -> str:
    import pypdfium2

    document = pypdfium2.PdfDocument(raw)
    try:
        texts = []
        for page in document:
            textpage = page.get_textpage()
            texts.append(textpage.get_text_range())
            textpage.close()
            page.close()
        return "\n".join(texts)
    finally:
        document.close()


def _raw_pymupdf(raw: bytes) -> str:
    import pymupdf

    with pymupdf.open(stream=raw, filetype="pdf") as document:
        return "\n".join(page.get_text() for page in document)


def _raw_pypdf(raw: bytes) -> str:
    from pypdf import PdfReader

    return "\n".join(page.extract_text() for page in PdfReader(io.BytesIO(raw)).pages)


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "absent"


def engines() -> dict[str, tuple[str, Extract]]:
    """name -> (label, extract); labels carry the package versions measured."""
    fonttools = "+fontTools" if _version("fonttools") != "absent" else ""
    return {
        "scholarflow": (f"scholarflow (pdfium {_version('pypdfium2')} + cleanup)",
                        _ours("pdfium")),
        "scholarflow-pymupdf": (f"scholarflow (pymupdf {_version('pymupdf')} + cleanup)",
                                _ours("pymupdf")),
        "scholarflow-pypdf": (f"scholarflow (pypdf {_version('pypdf')} + cleanup)",
                              _ours("pypdf")),
        "pdfium": (f"pypdfium2 {_version('pypdfium2')} raw", _raw_pdfium),
        "pymupdf": (f"PyMuPDF {_version('pymupdf')} raw (AGPL)", _raw_pymupdf),
        "pypdf": (f"pypdf {_version('pypdf')}{fonttools} raw", _raw_pypdf),
    }


# --- the table ------------------------------------------------------------------


def measure(corpus: Path, name: str, label: str, extract: Extract) -> dict[str, Any]:
    files = sorted((corpus / "pdfs").glob("*.pdf"))
    texts: dict[str, str] = {}
    refused: list[str] = []
    wall, cpu = time.perf_counter(), time.process_time()
    for file in files:
        try:
            texts[file.name] = extract(file.read_bytes())
        except Exception as exc:  # an engine's refusal is a result here, not a failure
            refused.append(f"{file.name}: {' '.join(str(exc).split())[:120]}")
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    found: dict[str, set[tuple[str, ...]]] = {}
    scores = []
    for question in dev_questions(corpus):
        key = pdf_name(question["sources"][0])
        if key not in found:
            found[key] = shingles(words(texts.get(key, "")))
        scores.append(coverage(question["key-passage"], found[key]))
    return {
        "engine": name, "label": label, "passages": len(scores),
        "intact": sum(s >= 1.0 for s in scores), "at_least_80": sum(s >= 0.8 for s in scores),
        "at_least_50": sum(s >= 0.5 for s in scores), "files": len(files),
        "seconds": round(wall, 1), "cpu_seconds": round(cpu, 1), "refused": refused,
        "scores": [round(s, 3) for s in scores],
    }


def extract_table(corpus: Path, names: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """One row per engine (default: all whose package is installed)."""
    available = engines()
    rows = []
    for name in names or list(available):
        label, extract = available[name]
        module = {"pdfium": "pypdfium2", "pymupdf": "pymupdf", "pypdf": "pypdf"}.get(
            name.removeprefix("scholarflow-"))
        if module and _version(module) == "absent":
            continue
        rows.append(measure(corpus, name, label, extract))
        row = rows[-1]
        print(f"{label}: {row['intact']}/{row['passages']} intact, {row['seconds']} s",
              file=sys.stderr, flush=True)  # a slow engine takes minutes: show each as done
    return rows


def render(rows: Sequence[dict[str, Any]]) -> str:
    lines = ["| engine | intact | >=80% | >=50% | seconds (wall / CPU) | refused |",
             "|---|---|---|---|---|---|"]
    for row in rows:
        n = row["passages"]
        lines.append(
            f"| {row['label']} | {row['intact']}/{n} | {row['at_least_80']}/{n} | "
            f"{row['at_least_50']}/{n} | {row['seconds']} / {row['cpu_seconds']} "
            f"({row['files']} PDFs) | {len(row['refused'])} |")
    for row in rows:
        for refused in row["refused"]:
            lines.append(f"refused by {row['engine']}: {refused}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.litqa extract",
                                     description=__doc__.split("\n", 1)[0])
    parser.add_argument("--corpus", type=Path, default=None,
                        help="the LitQA2 folder (default: LITQA_CORPUS, else the shared one)")
    parser.add_argument("--engines", default="",
                        help=f"comma-separated, of: {', '.join(engines())}; default all")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.engines.split(",") if n.strip()] or None
    unknown = set(names or ()) - set(engines())
    if unknown:
        parser.error(f"unknown engine(s): {', '.join(sorted(unknown))}")
    rows = extract_table(args.corpus or corpus(), names)
    print(render(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
