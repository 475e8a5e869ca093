"""Two layouts real papers have, drawn with made-up text (tests/unit/test_pdf_reading.py).

- `preprint()`: three pages of a preprint whose every line is numbered in the left margin,
  under a three-line running header that names the DOI and the posting date; its title is
  in the body's font size.
- `journal_first_page()`: a journal's first page: a Significance box in a narrow right
  column, drawn first, then a large two-line title, the authors, an abstract and the body
  in the wide left column, small print under the box, a footer with the DOI, and a
  "Downloaded from" stamp running up the left margin.

The order in which each page draws its lines, the sizes and the positions follow two
open-access papers (a bioRxiv preprint and a PNAS article); the words are the tests' own.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

from tests.support.pdfs import Run, text_pdf

__all__ = ["JOURNAL", "PREPRINT", "journal_first_page", "preprint"]


class PREPRINT:
    """What `preprint()` holds."""

    DOI = "10.5555/2024.03.04.512345"
    HEADER = (f"preprint doi: https://doi.org/{DOI}; this version posted March 6, 2024. The "
              "copyright holder", "for this preprint (which was not certified by peer review) "
              "is the author/funder, who has granted a licence to", "display the preprint in "
              "perpetuity. It is made available under a CC-BY 4.0 International license.")
    TITLE_LINES = ("Soil moisture shapes the root microbiome of drought-tolerant",
                   "sorghum in two seasons of field trials")
    # A paragraph of page 3, over three numbered lines.
    FINDING = ("In the second season, plots that received half the usual irrigation held 38% "
               "more Streptomyces reads in the rhizosphere than fully watered plots, and the "
               "difference persisted for six weeks after harvest.")
    NOTEWORTHY = ("It is noteworthy that the two seasons differed in rainfall by a third, yet "
                  "the ranking of the regimes held in both.")


class JOURNAL:
    """What `journal_first_page()` holds."""

    DOI = "10.5555/jeb.2023.101"
    TITLE_LINES = ("Urban bumblebee colonies trade foraging time for larger",
                   "loads in the heat of the day")
    SIGNIFICANCE = ("Bees that forage in cities meet more heat and less forage than bees in the "
                    "countryside. We followed marked workers of a common bumblebee over two "
                    "summers and found that urban colonies sent out fewer foragers at midday, "
                    "but each one brought back more pollen per trip, so the colonies grew as "
                    "fast as rural ones.")
    ABSTRACT = ("Cities are warmer than the land around them, and bumblebees stop foraging in "
                "the heat. We reared colonies from queens caught in one spring, placed them at "
                "urban and rural sites, and followed marked foragers over two summers. Urban "
                "colonies sent out fewer foragers at midday, each forager carried a larger "
                "load, and colony growth did not differ between the sites.")
    BODY = ("Bumblebees are among the most important pollinators of crops and wild plants in "
            "temperate regions, and many of their species have declined over the past decades "
            "(1, 2). Cities are often described as refuges for them, since gardens and parks "
            "offer flowers through most of the season (3).",
            "Urban colonies forage under hotter conditions than rural ones. Foragers of the "
            "common bumblebee stop flying when the air near the nest passes 32 degrees, which "
            "happens on far more afternoons in a city centre than in the fields around it "
            "(4, 5).",
            "Here we compare the foraging of urban and rural colonies of the same species, "
            "reared from queens caught in one spring and placed at ten urban and ten rural "
            "sites.")
    RESULT = ("Urban foragers carried 23% more pollen per trip than rural ones in both summers "
              "(Fig. 1A).")
    STAMP = ("Downloaded from https://www.example.org by Example University on June 25, 2025 "
             "from IP address 10.0.0.1.")


def _numbered(first: int, rows: Sequence[str], top: float) -> list[Run]:
    """Rows of a numbered manuscript: each line's number in the margin, blank rows too."""
    runs = []
    for i, row in enumerate(rows):
        y = top + 20.5 * i
        runs.append(Run(str(first + i), 40, y, 11))
        if row:
            runs.append(Run(row, 72, y, 11))
    return runs


def _rows(*paragraphs: str, width: int = 88) -> list[str]:
    """Paragraphs wrapped to lines, a blank line between them."""
    rows: list[str] = []
    for text in paragraphs:
        rows += [*textwrap.wrap(text, width), ""]
    return rows[:-1]


def preprint() -> bytes:
    header = [Run(text, 50, 8 + 8 * i, 8) for i, text in enumerate(PREPRINT.HEADER)]
    first = _numbered(1, ["", *PREPRINT.TITLE_LINES, "", "Ana Lopez 1, Bo Chen 2*, Carl Diaz 1",
                          "", "1. Department of Plant Biology, University of Examples, Example "
                          "City", "2. Institute of Soil Science, Example Town", "", "Abstract",
                          "", *_rows(
                              "Drought changes which bacteria live on plant roots. We sampled "
                              "the roots of a drought-tolerant sorghum line in field plots "
                              "under two irrigation regimes over two seasons, and sequenced "
                              "the bacterial communities of the rhizosphere and of the bulk "
                              "soil at four time points in each season.")], top=90)
    second = _numbered(301, _rows(
        "The communities of the rhizosphere and the bulk soil differed at every time point. "
        "Actinobacteria made up a larger share of the rhizosphere than of the bulk soil in "
        "both regimes, while Proteobacteria were more common in the bulk soil.",
        "Irrigation changed the rhizosphere more than the bulk soil: the communities of the "
        "two regimes were closer in the bulk soil at every time point of the first season, "
        "and at all but one of the second."), top=75)
    third = _numbered(331, _rows(
        PREPRINT.NOTEWORTHY, PREPRINT.FINDING,
        "Whether the enrichment helps the plant is not known; the yield of the two regimes "
        "did not differ."), top=75)
    return text_pdf([header + first, header + second, header + third],
                    metadata={"Producer": "tests/support/pdf_layouts.py"})


def _column(paragraphs: Sequence[str], x: float, top: float, width: int, size: float,
            pitch: float) -> tuple[list[Run], float]:
    """A column's paragraphs from `top` down: its runs, and where the next line would go."""
    runs, y = [], top
    for text in paragraphs:
        for row in textwrap.wrap(text, width):
            runs.append(Run(row, x, y, size))
            y += pitch
        y += pitch * 0.3
    return runs, y


def journal_first_page() -> bytes:
    box, _ = _column([JOURNAL.SIGNIFICANCE], 404, 180, 30, 11, 12)
    small_print, _ = _column([
        "Author contributions: A.L. and B.C. designed research; C.D. analyzed data.",
        "The authors declare no competing interest.",
        "Copyright (c) 2023 the Author(s). Published by the Society of Examples."],
        392, 580, 40, 7.9, 8)
    head = [Run("RESEARCH ARTICLE | ECOLOGY", 130, 40, 9),
            Run(JOURNAL.TITLE_LINES[0], 36, 75, 20), Run(JOURNAL.TITLE_LINES[1], 36, 97, 20),
            Run("Ana Lopez, Bo Chen and Carl Diaz", 36, 116, 10),
            Run("Edited by D. Editor; received May 2, 2023; accepted June 1, 2023", 36, 132,
                9.5)]
    abstract, y = _column([JOURNAL.ABSTRACT], 36, 150, 62, 11.5, 11.5)
    body, y = _column(JOURNAL.BODY, 36, y + 14, 58, 12.5, 11)
    results, _ = _column([JOURNAL.RESULT], 36, y + 28, 58, 12.5, 11)
    footer = Run(f"J. Ex. Biol. 2023 Vol. 12 No. 5 e2023101 https://doi.org/{JOURNAL.DOI} "
                 "1 of 7", 37, 756, 10)
    stamp = Run(JOURNAL.STAMP, 12, 733, 6, angle=90)
    return text_pdf([[Run("Significance", 404, 160, 13), *box, *small_print, *head, *abstract,
                      *body, Run("Results", 36, y + 10, 13), *results, footer, stamp]])
