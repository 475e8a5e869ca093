"""Ligatures (fi, ff, fl, ffi, ffl) that an engine gives as control codes or drops."""

from __future__ import annotations

import pytest

from scholarflow.ingest.extract import extract_pdf
from scholarflow.ingest.readers import Line, PageText, PdfContent
from scholarflow.ingest.readers.layout import clean_line
from scholarflow.ingest.readers.ligatures import (
    private_ligatures,
    restore_codes,
    restore_dropped,
    restore_private,
)
from tests.support.reading_pdfs import make_text_pdf

CODED = b"the signi\x0ccant e\x0bect of the \x0dow in the o\x0ece is de\x0cned as follows"


@pytest.mark.parametrize("engine", ["pdfium", "pypdf"])
def test_tex_ligature_codes_are_read_as_ligatures(engine: str) -> None:
    raw = make_text_pdf([[CODED, b"and \x0crst the \x0dexible ones"]])
    content = extract_pdf(raw, "old-tex.pdf", reader=engine).document.content
    assert content == ("the significant effect of the flow in the office is defined as "
                       "follows and first the flexible ones")


def test_codes_of_either_tex_encoding_spell_the_word_they_make() -> None:
    assert restore_codes("de\x1cned e\x1bect") == "defined effect"  # T1's codes
    assert clean_line("signi\x0ccant \x0b o\x0b") == "significant off"  # alone: dropped
    assert clean_line("let \x0ei = 1") == "let i = 1"  # a math font's delta, not "ffi"


def test_dropped_ligatures_are_put_back_where_a_text_has_none() -> None:
    pages = ["The e ect is signi cant: we de ned the e ciency of each coe cient rst.",
             "A su cient condition is that the con guration is speci ed in nite times."]
    assert restore_dropped(pages) == [
        "The effect is significant: we defined the efficiency of each coefficient rst.",
        "A sufficient condition is that the configuration is specified infinite times."]


def test_a_text_with_its_ligatures_is_left_as_it_is() -> None:
    pages = ["The first effect is significant: we define an infix operator in x and a d.",
             "A sufficient configuration is specified, efficient and final; in x we trust."]
    assert restore_dropped(pages) == pages


# A journal font's fl and fi glyphs at private-use code points (bytes 0x01 and 0x02).
PRIVATE = {1: 0xE104, 2: 0xE103}


def test_ligatures_at_private_code_points_are_read_as_the_ones_that_make_words() -> None:
    raw = make_text_pdf([[b"the \x01uorescent signal was \x01exible and \x02ltered",
                          b"then veri\x02ed by \x01uorescence \x02rst"]], private=PRIVATE)
    content = extract_pdf(raw, "journal.pdf").document.content
    assert content == ("the fluorescent signal was flexible and filtered then verified by "
                       "fluorescence first")


def test_a_private_code_point_that_makes_no_word_is_left_as_it_is() -> None:
    # A symbol font's glyph between words or in a name: no ligature makes them words.
    lines = [Line("position\ue0d5like unit\ue0d5they"), Line("a \uf0b7 bullet")]
    content = PdfContent((PageText(1, tuple(lines)),))
    assert restore_private(content) == content
    assert private_ligatures(["the \ue104ag and the \ue104ag"]) == {}  # "flag" or "stag"
