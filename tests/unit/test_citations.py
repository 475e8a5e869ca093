"""Citations: numbering, the streaming filter, sources; sub-question parsing."""

from __future__ import annotations

from scholarflow.nodes.citations import CitationFilter, number_chunks, sources_for
from scholarflow.nodes.recall import parse_sub_questions
from scholarflow.state import DocumentInfo, RecalledChunkState


def _chunk(chunk_id: str, score: float, doc: str = "d1") -> RecalledChunkState:
    return RecalledChunkState(step=1, doc_id=doc, chunk_id=chunk_id, score=score,
                              text=f"text {chunk_id}", title=f"Title {doc}", location="p. 2")


def _stream(filt: CitationFilter, pieces: list[str]) -> str:
    return "".join(filt.feed(p) for p in pieces) + filt.flush()


def test_number_chunks_dedupes_and_orders_by_score() -> None:
    chunks = [_chunk("a", 0.5), _chunk("b", 0.9), _chunk("a", 0.7)]
    numbered = number_chunks(chunks)
    assert [(c["chunk_id"], c["score"]) for c in numbered] == [("b", 0.9), ("a", 0.7)]


def test_filter_drops_citations_to_no_chunk_even_split_across_pieces() -> None:
    filt = CitationFilter([1, 2])
    out = _stream(filt, ["The rate is 3e-4 [", "1] and the batch 32 [", "7][2", "]. Also [1]."])
    assert out == "The rate is 3e-4 [1] and the batch 32 [2]. Also [1]."
    assert filt.cited == [1, 2]


def test_filter_leaves_other_brackets_alone() -> None:
    filt = CitationFilter([1])
    out = _stream(filt, ["a list [x, y] and [", "note] and [3"])
    assert out == "a list [x, y] and [note] and [3"
    assert _stream(CitationFilter([1]), ["a range [1-", "x] stays"]) == "a range [1-x] stays"
    assert filt.cited == []


def test_filter_reads_grouped_ranged_and_full_width_citations() -> None:
    text = "A [1, 99]. B [2-7]. C 【5】. D [1,2] and ［3］ 【2】. E [3]"
    expected = "A [1]. B [2][3]. C. D [1][2] and [3][2]. E [3]"
    filt = CitationFilter([1, 2, 3])
    assert _stream(filt, [text]) == expected
    assert filt.cited == [1, 2, 3]
    for cut in range(1, len(text)):  # the same wherever the stream splits it
        for pieces in ([text[:cut], text[cut:]], list(text)):
            assert _stream(CitationFilter([1, 2, 3]), pieces) == expected, pieces


def test_a_dropped_citation_takes_its_space_before_punctuation() -> None:
    cases = {
        "A made-up claim [9].": "A made-up claim.",
        "A claim [9] and more [1]; end [9]": "A claim and more [1]; end",
        "结论【9】。另一个【1】。": "结论。另一个[1]。",
        "para [1]\n\n[9] next": "para [1]\n\n next",  # never joins paragraphs
    }
    for text, expected in cases.items():
        assert _stream(CitationFilter([1]), [text]) == expected
        assert _stream(CitationFilter([1]), list(text)) == expected


def test_sources_follow_first_citation_order() -> None:
    numbered = number_chunks([_chunk("a", 0.9, "d1"), _chunk("b", 0.8, "d2")])
    sources = sources_for([2, 1], numbered)
    assert [(s["n"], s["doc_id"], s["chunk_id"]) for s in sources] == [(2, "d2", "b"),
                                                                       (1, "d1", "a")]
    assert sources[0]["location"] == "p. 2" and sources[0]["title"] == "Title d2"
    assert sources[0]["page"] is None  # a chunk state without page or heading fields


def test_parse_sub_questions_keeps_known_documents_only() -> None:
    docs = [DocumentInfo(doc_id="d1", title="A", tokens=1, content_hash="h")]
    text = ('Here: ```json {"sub_questions": [{"question": "lr?", "translation": "学习率？", '
            '"doc_id": "d1"}, {"question": "data?", "doc_id": "nope"}, {"question": " "}]} ```')
    assert parse_sub_questions(text, docs) == [
        {"question": "lr?", "translation": "学习率？", "doc_id": "d1"},
        {"question": "data?", "translation": None, "doc_id": None},
    ]
    assert parse_sub_questions("no json at all", docs) == []
    assert parse_sub_questions('{"sub_questions": "oops"}', docs) == []
