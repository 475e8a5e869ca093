"""The documents and scripted replies of bench/fanout.py (seeded, ~300 tokens a document).

A sibling module of bench/fanout.py (split to keep modules under 400 lines).
"""

from __future__ import annotations

import random

_EN_WORDS = [
    "transformer", "attention", "sparse", "retrieval", "dense", "encoder", "decoder",
    "corpus", "benchmark", "baseline", "ablation", "gradient", "optimizer", "warmup",
    "schedule", "token", "embedding", "layer", "normalization", "dropout", "contrastive",
    "loss", "negative", "sampling", "recall", "precision", "latency", "throughput",
    "memory", "kernel", "dataset", "annotation", "evaluation", "metric", "accuracy",
    "robustness", "generalization", "domain", "shift", "pretraining", "finetuning",
    "adapter", "quantization", "distillation", "teacher", "student", "curriculum",
    "reranker", "index", "passage", "query", "document", "graph", "node", "edge", "message",
    "propagation", "hybrid", "lexical", "semantic", "multilingual", "Chinese", "English",
    "cross", "lingual", "alignment", "scaling", "law",
]
_ZH_PHRASES = (
    "本文提出一种混合检索方法", "实验在三个公开数据集上进行", "结果表明召回率显著提升",
    "我们分析了稀疏注意力的计算复杂度", "该方法在长文档上表现稳定", "消融实验验证了各模块的作用",
    "学习率设置为千分之一", "模型在中文语料上进行了预训练", "局限性在于推理延迟较高",
    "未来工作将扩展到多模态场景", "对比基线包括BM25和稠密检索", "我们公开了代码和数据",
)


def make_documents(n: int, seed: int = 4) -> dict[str, str]:
    """N distinct short papers (~300 tokens each); every fourth one is Chinese."""
    rng = random.Random(seed)
    docs: dict[str, str] = {}
    for i in range(n):
        if i % 4 == 3:
            body = "".join(
                rng.choice(_ZH_PHRASES) + "，" + rng.choice(_ZH_PHRASES) + "。" for _ in range(11)
            )
            text = f"# 论文 {i}：关于检索与摘要的研究\n\n{body}\n学习率为 {rng.randint(1, 9)}e-4。"
        else:
            sentences = []
            for _ in range(14):
                words = rng.sample(_EN_WORDS, 14)
                sentences.append(" ".join(words).capitalize() + ".")
            text = (f"# Paper {i}: a study of {rng.choice(_EN_WORDS)} {rng.choice(_EN_WORDS)}\n\n"
                    + " ".join(sentences)
                    + f"\nWe used a learning rate of {rng.randint(1, 9)}e-4 and batch size "
                      f"{rng.choice([16, 32, 64])}.")
        docs[f"doc-{i:04d}"] = text
    return docs


def words_reply(n_words: int, seed: int) -> str:
    rng = random.Random(seed)
    return " ".join(rng.choice(_EN_WORDS) for _ in range(n_words)) + "."
