"""A deterministic embedder for tests: no model, no network, microseconds a text.

Same vectors as the scripted server's `/v1/embeddings` (signed hashes of
character 2- and 3-grams), so a test can check `OpenAIEmbedder` against it.
Texts that share character n-grams get a high cosine; there is no meaning
and nothing cross-lingual about it.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Sequence

import numpy as np

from scholarflow.retrieval.embeddings import Vectors

HASHING_DIM = 64


class HashingEmbedder:
    def __init__(self, dim: int = HASHING_DIM) -> None:
        self._dim = dim
        self.name = f"hashing/{dim}"

    @property
    def dim(self) -> int:
        return self._dim

    async def embed_passages(self, texts: Sequence[str]) -> Vectors:
        await asyncio.sleep(0)  # a real embedder yields; so does this one
        if not texts:
            return np.zeros((0, self._dim), np.float32)
        return np.stack([self.vector(t) for t in texts])

    async def embed_query(self, text: str) -> Vectors:
        await asyncio.sleep(0)
        return self.vector(text)

    def vector(self, text: str) -> Vectors:
        vec = np.zeros(self._dim, np.float64)
        padded = f" {' '.join(text.lower().split())} "
        for n in (2, 3):
            for i in range(len(padded) - n + 1):
                digest = hashlib.blake2b(padded[i:i + n].encode(), digest_size=8).digest()
                h = int.from_bytes(digest, "little")
                vec[h % self._dim] += 1.0 if (h >> 32) & 1 else -1.0
        norm = float(np.linalg.norm(vec))
        if norm == 0.0:
            vec[0], norm = 1.0, 1.0  # a unit vector even for empty text, as the server does
        return (vec / norm).astype(np.float32)
