"""`bench/ocr.py`: the OCR engines side by side (SCHOLARFLOW_OCR=tesseract | rapidocr, and
`auto` with both: RapidOCR from the first page Tesseract finds Chinese in), on the pages
the product gives them (grey, at `ocr.DPI`), per engine and set:

- `en`: pages of LitQA2 PDFs whose text layer is good (the second page of each file, by
  name, with at least 300 words), rendered and read by OCR: recall and precision of the
  text layer's words (lowercase runs of letters and digits, counted with repeats);
- `zh`: pages drawn from d2l's Chinese sections (`*_zh.md`, markup dropped) in WenQuanYi
  Micro Hei at 10.5 points (Debian: fonts-wqy-microhei): recall and precision of the Han
  characters drawn, recall of the Latin words among them, and spaces put between two
  Han characters (the text drawn has none); `zh-short`: the same of pages of six short
  lines at 14 points (the start of a paragraph each), as a title page;
- `pwl`: the first pages of the pwl papers only OCR reads (the typewriter scan and the
  three whose fonts map to no characters), no ground truth: the share of the OCR'd
  letters that spell words (`readers/quality.py` `word_share`, as for garbage pages);

and for each, pages, CPU-s a page (this process and the programs it ran: Tesseract
runs as one, RapidOCR in-process) and wall seconds a page. RapidOCR's models are
loaded before the clock starts (their load is reported apart).

    .venv/bin/python bench/ocr.py [--corpus ../shared/corpus] [--engines tesseract,rapidocr,auto]
        [--pages 8] [--zh-pages 4] [--pwl-pages 3] [--threads 1] [--show]

`--threads`: RapidOCR's ONNX Runtime threads (the product uses 1). `--show` prints
each page's first OCR'd lines. A benchmark, not a test: the exit code is 0.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

FONT = Path("/usr/share/fonts/truetype/wqy/wqy-microhei.ttc")
PWL_FILES = ("hundred-impossibility", "database-metatheory", "cheriton-and-skeens",
             "functional-reactive-animation")
_HAN = re.compile(r"[\u4e00-\u9fff]")
_HAN_GAP = re.compile(r"(?<=[\u4e00-\u9fff]) +(?=[\u4e00-\u9fff])")

# A page: its name, its grey pixels, width and height, and what is true of it.
Page = tuple[str, bytes, int, int, str]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, default=ROOT.parent / "shared" / "corpus")
    parser.add_argument("--engines", default="tesseract,rapidocr,auto")
    parser.add_argument("--pages", type=int, default=8)
    parser.add_argument("--zh-pages", type=int, default=4)
    parser.add_argument("--pwl-pages", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--show", action="store_true")
    args = parser.parse_args()
    sets = {"en": list(english_pages(args.corpus / "litqa2", args.pages)),
            "zh": list(chinese_pages(args.corpus / "d2l", args.zh_pages)),
            "zh-short": list(chinese_pages(args.corpus / "d2l", args.zh_pages, sparse=True)),
            "pwl": list(pwl_pages(args.corpus / "pwl", args.pwl_pages))}
    print("| engine | set | pages | CPU-s a page | wall s a page | measure | value |")
    print("|---|---|---|---|---|---|---|")
    for name in args.engines.split(","):
        for set_name, pages in sets.items():
            if pages:  # an engine for each set, as the product makes one for each document
                engine = make_engine(name, args.threads)
                for row in measure(engine, set_name, pages, args.show):
                    print("| " + " | ".join(row) + " |", flush=True)
    return 0


def make_engine(name: str, threads: int) -> object:
    from scholarflow.ingest import ocr

    if name == "auto":
        return ocr.ChineseToRapidOcr(make_engine("tesseract", threads),  # type: ignore[arg-type]
                                     make_engine("rapidocr", threads))  # type: ignore[arg-type]
    if name == "tesseract":
        program = ocr.tesseract_program()
        if program is None:
            sys.exit("Tesseract is not installed (apt install tesseract-ocr tesseract-ocr-chi-sim)")
        ocr.tesseract_languages(program)  # its language list, once, off the clock
        return ocr.Tesseract(program)
    started = time.process_time()
    ocr.rapidocr_model(threads)  # cached: loaded once
    print(f"RapidOCR models ready in {time.process_time() - started:.1f} CPU-s "
          f"({threads} thread(s))", file=sys.stderr)
    return ocr.RapidOcr(threads)


def measure(engine: object, set_name: str, pages: list[Page],
            show: bool) -> Iterator[list[str]]:
    from scholarflow.ingest.ocr import cpu_seconds
    from scholarflow.ingest.readers.quality import word_share

    texts: list[tuple[str, str]] = []
    cpu, wall = cpu_seconds(), time.monotonic()
    for name, pixels, width, height, truth in pages:
        page_cpu = cpu_seconds()
        page = engine.read(pixels, width, height, 1, 600)  # type: ignore[attr-defined]
        text = "\n".join(line.text for line in page.lines)
        texts.append((text, truth))
        if show:
            print(f"--- {name}: {len(page.lines)} lines, {cpu_seconds() - page_cpu:.1f} CPU-s\n"
                  f"{text[:400]}\n", file=sys.stderr)
    cpu, wall = (cpu_seconds() - cpu) / len(pages), (time.monotonic() - wall) / len(pages)
    head = [engine.name, set_name, str(len(pages)), f"{cpu:.2f}", f"{wall:.2f}"]  # type: ignore[attr-defined]
    if set_name == "pwl":
        shares = [word_share(text)[0] for text, _ in texts]
        yield [*head, "word letters / letters, mean (min)",
               f"{sum(shares) / len(shares):.3f} ({min(shares):.3f})"]
        return
    if set_name.startswith("zh"):
        recall, precision = overlap(texts, lambda t: _HAN.findall(t))
        yield [*head, "Han characters: recall / precision", f"{recall:.3f} / {precision:.3f}"]
        yield [*head, "Latin words among them: recall", f"{overlap(texts, words)[0]:.3f}"]
        gaps = sum(len(_HAN_GAP.findall(text)) for text, _ in texts)
        han = sum(len(_HAN.findall(text)) for text, _ in texts)
        yield [*head, "spaces between Han characters, per 100", f"{100 * gaps / max(han, 1):.1f}"]
        return
    recall, precision = overlap(texts, words)
    yield [*head, "words of the text layer: recall / precision",
           f"{recall:.3f} / {precision:.3f}"]


def words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", unicodedata.normalize("NFKC", text).lower())


def overlap(texts: list[tuple[str, str]],
            units: Callable[[str], list[str]]) -> tuple[float, float]:
    """Recall and precision of `units` (counted with repeats), over all the pages."""
    found = true = both = 0
    for text, truth in texts:
        got, want = Counter(units(text)), Counter(units(truth))
        both += sum((got & want).values())
        found += sum(got.values())
        true += sum(want.values())
    return both / max(true, 1), both / max(found, 1)


def english_pages(folder: Path, count: int) -> Iterator[Page]:
    import pypdfium2

    from scholarflow.ingest.ocr import render_page

    taken = 0
    for path in sorted((folder / "pdfs").glob("*.pdf")):
        if taken >= count:
            return
        raw = path.read_bytes()
        document = pypdfium2.PdfDocument(raw)
        try:
            if len(document) < 2:
                continue
            textpage = document[1].get_textpage()
            truth = textpage.get_text_bounded()
            textpage.close()
        finally:
            document.close()
        if len(words(truth)) < 300:
            continue
        pixels, width, height = render_page(raw, 1)
        taken += 1
        yield f"{path.name} p2", pixels, width, height, truth


def chinese_pages(folder: Path, count: int, *, sparse: bool = False) -> Iterator[Page]:
    """Pages of d2l's Chinese prose drawn as a paper's body: 10.5 pt, 1.5 lines apart;
    `sparse`: as a title page, six short lines of 14 pt, far apart."""
    if not FONT.exists():
        print(f"zh: skipped, {FONT} is missing (apt install fonts-wqy-microhei)",
              file=sys.stderr)
        return
    from PIL import Image, ImageDraw, ImageFont

    from scholarflow.ingest.ocr import DPI

    width, height, margin = int(8.5 * DPI), int(11 * DPI), DPI
    size = round((14 if sparse else 10.5) * DPI / 72)
    spacing = int(size * (5 if sparse else 1.5))
    font = ImageFont.truetype(str(FONT), size)
    paragraphs = [p for path in sorted(folder.glob("*_zh.md"))
                  for p in _prose(path.read_text(encoding="utf-8"))]
    if sparse:  # a paragraph's first words, up to its first comma
        paragraphs = [re.split(r"[，。：；]", p, maxsplit=1)[0][:20] for p in paragraphs[::7]]
    lines: list[str] = []
    for paragraph in paragraphs:
        line = ""
        for char in paragraph:
            if font.getlength(line + char) > width - 2 * margin:
                lines.append(line)
                line = ""
            line += char
        lines.append(line)
    per_page = 6 if sparse else (height - 2 * margin) // spacing
    for number in range(count):
        chunk = lines[number * per_page:(number + 1) * per_page]
        if not chunk:
            return
        image = Image.new("L", (width, height), 255)
        draw = ImageDraw.Draw(image)
        for row, line in enumerate(chunk):
            draw.text((margin, margin + row * spacing), line, font=font, fill=0)
        yield f"zh page {number + 1}", image.tobytes(), width, height, "\n".join(chunk)


def _prose(markdown: str) -> Iterator[str]:
    """The paragraphs of a d2l section without its code, math, figures and markup."""
    in_code = False
    for block in markdown.split("\n\n"):
        if block.lstrip().startswith("```"):
            in_code = not block.rstrip().endswith("```") or block.count("```") == 1
            continue
        if in_code:
            in_code = "```" not in block
            continue
        text = " ".join(block.split())
        if not _HAN.search(text) or text.startswith(("#", "!", "Source:", "|", ":")):
            continue
        text = re.sub(r"\$[^$]*\$|:[a-z]+:`[^`]*`|\[[^\]]*\]\([^)]*\)", "", text)
        yield re.sub(r"[*`]", "", text).strip()


def pwl_pages(folder: Path, per_file: int) -> Iterator[Page]:
    from scholarflow.ingest.ocr import render_page

    for key in PWL_FILES:
        for path in sorted((folder / "pdfs").glob(f"*{key}*.pdf")):
            raw = path.read_bytes()
            for index in range(per_file):
                pixels, width, height = render_page(raw, index)
                yield f"{path.name} p{index + 1}", pixels, width, height, ""


if __name__ == "__main__":
    sys.exit(main())
