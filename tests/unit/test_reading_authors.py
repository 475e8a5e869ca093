"""Authors under a title: rows of names, markers, affiliations beside or under the names."""

from __future__ import annotations

from scholarflow.ingest.readers import Line
from scholarflow.ingest.readers.authors import first_page_authors


def _line(text: str, top: float, x0: float = 100, size: float = 10) -> Line:
    return Line(text, x0, top, x0 + 6 * len(text), top + size, size)


def test_names_side_by_side_on_one_row_and_a_name_under_their_affiliations() -> None:
    below = [_line("Simon Marlow", 140, 100), _line("Tim Harris", 140.2, 280),
             _line("Roshan P. James", 140.1, 440), _line("Microsoft Research", 156, 100, 8),
             _line("simonmar@microsoft.com", 170, 100, 8), _line("Simon Peyton Jones", 197),
             _line("Microsoft Research", 213, 100, 8), _line("Abstract", 280)]
    assert first_page_authors(below) == (
        "Simon Marlow", "Tim Harris", "Roshan P. James", "Simon Peyton Jones")


def test_markers_emails_and_an_affiliation_after_a_name_are_no_part_of_it() -> None:
    below = [_line("Joey J. Lee, Teachers College Columbia University, NY", 90),
             _line("Poul-Henning Kamp <phk@FreeBSD.org>", 104),
             _line("Jinliang Fan, Owen Hofmann∗", 118), _line(", Jon Howell", 120, 400),
             _line("Cédric Fournet1 and Georges Gonthier2?", 132), _line("Abstract", 200)]
    assert first_page_authors(below) == ("Joey J. Lee", "Poul-Henning Kamp", "Jinliang Fan",
                                         "Owen Hofmann", "Jon Howell", "Cédric Fournet",
                                         "Georges Gonthier")


def test_lettered_affiliations_take_their_letters_off_the_names() -> None:
    below = [_line("Irene Lopatovskaa", 160), _line(", Ioannis Arapakisb,∗", 160, 300),
             _line("aPratt SILS, New York", 180, 100, 5), _line("bUniversity of Glasgow", 190,
                                                                 100, 5)]
    assert first_page_authors(below) == ("Irene Lopatovska", "Ioannis Arapakis")
    # Unlettered affiliations: a name's last letter is its own.
    assert first_page_authors([_line("Nuno Preguiça, Ana Silva", 10)]) == (
        "Nuno Preguiça", "Ana Silva")


def test_three_names_set_apart_by_space_alone_but_two_may_be_one_name() -> None:
    assert first_page_authors([_line("Ingo Maier Tiark Rompf Martin Odersky", 120)]) == (
        "Ingo Maier", "Tiark Rompf", "Martin Odersky")
    assert first_page_authors([_line("Ana Candida Cruz Natali", 120)]) == (
        "Ana Candida Cruz Natali",)
