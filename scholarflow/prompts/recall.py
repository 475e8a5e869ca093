"""The material of an answer built from recalled chunks, with citation rules."""

from scholarflow.prompts.base import prompt

CITED_MATERIAL_PROMPT = prompt(
    "CITED_MATERIAL_PROMPT",
    """The material is a set of numbered passages recalled from the documents:

{chunks}

Cite the passage behind every claim with its number in square brackets, like [2] \
or [1][3], right after the claim. Cite only the numbers shown above.""",
    "chunks",
)

QUERY_TRANSLATION_PROMPT = prompt(
    "QUERY_TRANSLATION_PROMPT",
    """Translate the user's search query over scientific papers into {language}. Keep \
names, acronyms, numbers and formulas as they are. Reply with the translated query only, \
on one line.""",
    "language",
)

KEY_CHUNK_QUERIES = (
    "research question, problem and motivation",
    "proposed method and model architecture",
    "datasets, experimental setup and hyperparameters",
    "main results, numbers and comparison with baselines",
    "limitations and future work",
    "研究问题与动机",
    "方法与模型",
    "实验结果与结论",
)
