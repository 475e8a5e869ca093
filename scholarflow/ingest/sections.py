"""A document's structure for chunking: headings (Markdown `#`, numbered, named), paragraphs,
figure and table captions, and which section is a reference list.

Split from chunking.py, which packs these blocks into chunks.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from scholarflow.language import HAN_CHAR

__all__ = [
    "CAPTION",
    "CAPTION_LEVEL",
    "HEADING_SEPARATOR",
    "Block",
    "Path",
    "blocks",
    "heading_text",
    "is_reference_heading",
    "is_reference_list",
    "plain_heading_level",
]

HEADING_SEPARATOR = " > "
# "Figure 3." "Fig. 3 |" "Figure S2:" "Table 1." "Extended Data Fig. 2" "Supplementary Table 3"
CAPTION = re.compile(
    r"^(?:(?:extended data|supplementary)\s+)?(?:fig(?:ure)?s?\.?|table)\s*"
    r"(?:S?\d{1,2}|[IVX]{1,4})[A-Za-z]?\s*(?:[.:|]|$|\s[-–—]\s)", re.IGNORECASE)
# A caption's chunk is headed by its section's path plus its label, at this level.
CAPTION_LEVEL = 99
_REFERENCE_HEADINGS = frozenset({
    "references", "bibliography", "references and notes", "literature cited", "works cited",
    "reference", "参考文献",
})
# "8. ", "VII. ", "A. ", "2.1 ": a heading's number, letter or numeral.
_NUMBERING = re.compile(r"^(?:\d{1,2}(?:\.\d{1,2}){0,3}\.?|[IVX]{1,5}\.?|[A-Z]\.)\s+")
# A reference list's chunk this long names a year: one that does not is an appendix, a
# proof or a supplement set after the list, whose own heading was not recognised.
_YEARLESS_WORDS = 60
_ANY_YEAR = re.compile(r"(?<!\d)(?:1[6-9]|20)\d\d(?!\d)")
# What may follow a reference list and is content again: appendices, proofs, supplements,
# and lettered sections ("A Proof of Lemma 2", "B.1 Setup"). A heading only after the list:
# elsewhere "A Study of ..." is as often a sentence's start.
_BACK_MATTER = re.compile(
    r"(?:appendi(?:x|ces)|supplementary\s+\w+|supplement|(?:omitted\s+|deferred\s+)?proofs?"
    r"(?:\s+of\b)?)(?:\s+[A-Z0-9](?:\.\d{1,2})?)?\b(?:\s*[.:\-–—]?\s*\S.{0,70})?"
    r"|[A-H](?:\.\d{1,2}){0,2}\.?\s+[A-Z]\S*(?:\s+\S+){0,9}", re.IGNORECASE)
# An entry's year ("2019;", "(2020)", "2021a.") and its authors ("Smith, J.", "et al.").
_CITED_YEAR = re.compile(r"\((?:19|20)\d\d[a-z]?\)|\b(?:19|20)\d\d[a-z]?[;.,):]")
_CITED_NAME = re.compile(
    r"\b[A-Z][A-Za-z'’-]+,?\s(?:[A-Z]\.\s?){1,3}|\b[A-Z][a-z'’-]+\s[A-Z]{1,3}(?=[,.])"
    r"|\bet al\.")
# A numbered entry's start: "58. Lackman, J. J.," or "12 Smith JA," (Nature's, Vancouver).
_NUMBERED_ENTRY = re.compile(r"(?:^|\s)\[?\d{1,3}[.\]]?\s[A-Z][A-Za-z'’-]+,?\s[A-Z]{1,3}\b")
_ATX = re.compile(r" {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
# "3 Method", "3.2 Training", "IV. Results", "二、方法": numbered headings of PDFs and text.
_PLAIN_HEADING = re.compile(
    r"(?:(\d{1,2}(?:\.\d{1,2}){0,3})\.?[ \t]+|[IVX]{1,5}\.[ \t]+"
    r"|[一二三四五六七八九十]{1,3}[、.．][ \t]*)(\S.{0,78})$"
)
_NAMED_HEADINGS = frozenset({
    "results", "methods", "materials and methods", "material and methods", "discussion",
    "results and discussion", "methods summary", "online methods", "star methods",
    "experimental procedures", "experimental section", "significance", "summary", "main",
    "data availability", "code availability", "funding", "author contributions",
    "competing interests", "declaration of interests", "supplementary material",
    "supplementary information", "references and notes", "literature cited",
    "acknowledgment", "acknowledgement", "conflict of interest", "conflicts of interest",
    "abstract", "introduction", "related work", "background", "conclusion", "conclusions",
    "references", "bibliography", "acknowledgments", "acknowledgements", "appendix",
    "摘要", "引言", "相关工作", "结论", "参考文献", "致谢", "附录",
})


def plain_heading_level(line: str) -> int | None:
    """The level of a numbered or well-known section heading line, else None."""
    if not line or len(line) > 80:
        return None
    if line.lower().rstrip(":：") in _NAMED_HEADINGS:
        return 1
    found = _PLAIN_HEADING.match(line)
    if found is None:
        return None
    title = found.group(2)
    first = title[0]
    if not (first.isupper() or HAN_CHAR.match(first)):  # Chinese has no upper case
        return None
    # A sentence, a list item or a table row, not a heading.
    if title[-1] in ".,;:，。；：" or len(title.split()) > 10:
        return None
    if sum(c.isdigit() for c in title) * 3 > len(title):
        return None
    number = found.group(1)
    return number.count(".") + 1 if number else 1





Path = tuple[tuple[int, str], ...]  # (level, title) from the outermost heading in


class Block(NamedTuple):  # a tuple: much cheaper to make than a frozen dataclass
    start: int
    end: int
    path: Path  # the headings this block is under (a heading: the path it opens)
    heading_level: int = 0
    caption: str = ""  # a figure or table caption: its label ("Figure 3", "Table 2")


def blocks(text: str, *, markdown: bool, plain: bool) -> list[Block]:
    """Headings and paragraphs (blank-line separated; a fenced code block is one)."""
    blocks: list[Block] = []
    path: Path = ()
    para_start = para_end = -1
    fence = ""
    pos = 0

    back_matter = False  # past a reference list's heading

    def close_paragraph() -> None:
        nonlocal para_start, path, back_matter
        if para_start < 0:
            return
        line = text[para_start:para_end]
        level = plain_heading_level(line.strip()) if plain and "\n" not in line else None
        if level is None and plain and back_matter and "\n" not in line and _back_matter(
                line.strip()):
            level = 1
        if level is not None:
            path = _push(path, level, line.strip())
            blocks.append(Block(para_start, para_end, path, level))
            back_matter = back_matter or is_reference_heading(line.strip())
        elif plain and (found := CAPTION.match(line)):
            label = " ".join(found.group(0).split()).rstrip(".:|–—- ")
            blocks.append(Block(para_start, para_end, path, caption=label))
        else:
            blocks.append(Block(para_start, para_end, path))
        para_start = -1

    for line in text.split("\n"):
        start, end = pos, pos + len(line)
        pos = end + 1
        if fence:
            para_end = end  # blank lines inside code belong to it
            if line.lstrip().startswith(fence):
                fence = ""
                close_paragraph()
            continue
        if not line.strip():
            close_paragraph()
            continue
        head = line[:7].lstrip()
        if markdown and head.startswith("#") and (found := _ATX.match(line)):
            close_paragraph()
            title = found.group(2).strip()
            if title:
                level = len(found.group(1))
                path = _push(path, level, title)
                blocks.append(Block(start, end, path, level))
                continue
        if head.startswith(("```", "~~~")) and (opened := _FENCE.match(line)):
            close_paragraph()
            fence = opened.group(1)
        if para_start < 0:
            para_start = start
        para_end = end
    close_paragraph()
    return _drop_title(text, blocks)


def _back_matter(line: str) -> bool:
    """An appendix, proof or supplement heading (read so only after a reference list)."""
    return (len(line) <= 80 and line[-1:] not in ".,;:" and line[:1].isupper()
            and _BACK_MATTER.fullmatch(line) is not None)


def _push(path: Path, level: int, title: str) -> Path:
    return (*(entry for entry in path if entry[0] < level), (level, " ".join(title.split())))


def _drop_title(text: str, blocks: list[Block]) -> list[Block]:
    """A lone `#` heading at the top is the document's title, not a section of every chunk."""
    headings = [b for b in blocks if b.heading_level]
    if not headings or headings[0].heading_level != 1:
        return blocks
    if not text[headings[0].start:headings[0].end].lstrip().startswith("#"):
        return blocks  # "1 Introduction" is a section, whatever comes after it
    if sum(1 for b in headings if b.heading_level == 1) != 1:
        return blocks
    title = headings[0].path[0]
    # Blocks under one heading share its path object: each distinct path is rebuilt once.
    paths: dict[int, Path] = {}
    out = []
    for b in blocks:
        path = paths.get(id(b.path))
        if path is None:
            path = paths[id(b.path)] = tuple(e for e in b.path if e is not title)
        out.append(Block(b.start, b.end, path, b.heading_level))
    return out


def heading_text(path: Path) -> str | None:
    return HEADING_SEPARATOR.join(title for _, title in path) or None




def is_reference_heading(title: str) -> bool:
    """"References", "8. REFERENCES", "VII. References", "References and Notes"."""
    return _NUMBERING.sub("", title).lower().rstrip(":： ") in _REFERENCE_HEADINGS


def is_reference_list(path: Path, text: str) -> bool:
    """Whether a chunk is part of a reference list: under its heading, or dense with entries.

    The density test catches lists whose heading was lost or that run on under
    "Acknowledgments": a year every 30 words and an author ("Smith, J.", "Smith
    JA", "et al.") every eight, or a numbered entry ("58. Smith, J.") every 60
    with a year every 45, is a list of works, not prose citing them.
    """
    words = len(text.split())
    if any(is_reference_heading(title) for level, title in path if level != CAPTION_LEVEL):
        # An appendix run on under the heading (its own heading unrecognised) cites no year.
        return words < _YEARLESS_WORDS or _ANY_YEAR.search(text) is not None
    if words < 20:  # a line or two: too little to tell
        return False
    years = len(_CITED_YEAR.findall(text))
    names = len(_CITED_NAME.findall(text))
    if years * 30 >= words and names * 8 >= words:
        return True
    # Long titles (Nature's style) dilute years and names: numbered entries tell it then.
    return years * 45 >= words and len(_NUMBERED_ENTRY.findall(text)) * 60 >= words
