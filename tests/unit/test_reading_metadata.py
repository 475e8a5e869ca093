"""Title, authors and year as a reader of page 1 writes them, whatever else page 1 holds."""

from __future__ import annotations

from scholarflow.ingest.readers import Line, PageText, PdfContent
from scholarflow.ingest.readers.paper import paper_facts

BODY = [Line("Body text of the first page in the usual size, line after line of it.",
             72, 300 + 12 * i, 540, 310 + 12 * i, 10) for i in range(20)]


def facts(lines: list[Line], metadata: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    return paper_facts(PdfContent((PageText(1, tuple(lines + BODY), 612, 792),), metadata or {}))


def test_a_citation_banner_and_a_journal_acronym_never_name_the_paper() -> None:
    found = facts([
        Line("Smith, J., & Lee, K. (2011). Sparse Attention for Long Inputs. Information", 50, 40,
             560, 56, 16),
        Line("Processing and Management. doi:10.1016/j.ipm.2010.09.001", 50, 58, 400, 74, 16),
        Line("Sparse Attention for Long Inputs", 100, 110, 500, 124, 13),
        Line("Jane Smith", 100, 140, 200, 150, 11),
        Line("University of Glasgow", 100, 152, 260, 162, 11),
        Line("Kim Lee", 300, 140, 360, 150, 11),
    ], {"title": "IJEL", "creationdate": "D:20030101120000"})
    assert found.title == "Sparse Attention for Long Inputs"
    assert found.authors == ("Jane Smith", "Kim Lee")  # side by side, affiliation passed
    assert found.year == 2011  # the page's, not the file's creation date


def test_an_email_line_and_an_arxiv_stamp_are_no_title_and_the_stamp_dates_it() -> None:
    found = facts([
        Line("{smith,lee}@cs.example.edu", 100, 40, 400, 60, 30),
        Line("arXiv:1207.1925v1 [math.AG] 8 Jul 2012", 100, 70, 400, 84, 12),
        Line("Tilings of the plane", 100, 100, 400, 114, 14),
        Line("Ana Lopez Bo Chen Carl D. Diaz", 100, 130, 400, 140, 11),
    ], {"creationdate": "D:20181026000000"})
    assert found.title == "Tilings of the plane"
    assert found.authors == ("Ana Lopez", "Bo Chen", "Carl D. Diaz")
    assert found.year == 2012


def test_names_one_a_line_with_affiliations_between_them() -> None:
    found = facts([
        Line("Impossibility of Consensus", 100, 40, 500, 58, 17),
        Line("MICHAEL J. FISCHER", 200, 80, 330, 90, 11),
        Line("Yale University, New Haven, Connecticut", 150, 92, 420, 102, 10),
        Line("AND", 250, 106, 280, 116, 11),
        Line("NANCY A. LYNCH", 200, 120, 330, 130, 11),
        Line("Massachusetts Institute of Technology", 150, 132, 420, 142, 10),
        Line("Published 1985", 150, 150, 420, 160, 9),
    ])
    assert found.authors == ("MICHAEL J. FISCHER", "NANCY A. LYNCH")
    assert found.year == 1985


def test_the_creation_date_dates_a_paper_whose_page_gives_none() -> None:
    found = facts([Line("A Title Without a Date", 100, 40, 500, 58, 17)],
                  {"creationdate": "D:20071110093000"})
    assert found.year == 2007
