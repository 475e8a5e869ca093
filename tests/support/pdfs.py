"""PDFs written for the tests: text placed where a layout puts it, in the standard Helvetica.

`text_pdf` draws each `Run` at its position, size and angle (90: a vertical margin stamp),
so a test can build the layouts real papers have (two columns, a running header, line
numbers, a footer, a stamp in the margin) without copying anyone's paper. pypdf writes
the file; both PDF readers of scholarflow read it back.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass

from pypdf import PdfWriter
from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

__all__ = ["Run", "text_pdf"]

WIDTH, HEIGHT = 612.0, 792.0  # US Letter, in points


@dataclass(frozen=True)
class Run:
    """One line of text: its left edge `x` and its baseline's distance `top` from the top
    of the page (points), its font size, and its angle (0 or 90 degrees)."""

    text: str
    x: float
    top: float
    size: float = 10.0
    angle: int = 0


def _escaped(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def _operators(run: Run) -> str:
    y = HEIGHT - run.top
    matrix = "0 1 -1 0" if run.angle == 90 else "1 0 0 1"
    return f"BT /F1 {run.size:g} Tf {matrix} {run.x:g} {y:g} Tm ({_escaped(run.text)}) Tj ET"


def text_pdf(pages: Sequence[Sequence[Run]], *, metadata: dict[str, str] | None = None
             ) -> bytes:
    """A PDF of these pages (each a sequence of runs), with this document information."""
    writer = PdfWriter()
    font = writer._add_object(DictionaryObject({
        NameObject("/Type"): NameObject("/Font"), NameObject("/Subtype"): NameObject("/Type1"),
        NameObject("/BaseFont"): NameObject("/Helvetica"),
        NameObject("/Encoding"): NameObject("/WinAnsiEncoding"),
    }))
    for runs in pages:
        page = writer.add_blank_page(WIDTH, HEIGHT)
        stream = DecodedStreamObject()
        stream.set_data("\n".join(_operators(run) for run in runs).encode("cp1252"))
        page[NameObject("/Contents")] = writer._add_object(stream)
        page[NameObject("/Resources")] = DictionaryObject(
            {NameObject("/Font"): DictionaryObject({NameObject("/F1"): font})})
    if metadata:
        writer.add_metadata({f"/{key}": value for key, value in metadata.items()})
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()
