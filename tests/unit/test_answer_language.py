"""The answer prompt repeats the question's language after the question; the thread does not.

A small model that reads a long English system prompt over an English paper drifts
into English for a Chinese question (seen with Qwen2.5-1.5B in bench/real_model.py);
the rule is therefore restated in the last user turn, in the question's language.
"""

from __future__ import annotations

import pytest

from scholarflow.prompts import ANSWER_IN_CHINESE, ANSWER_IN_ENGLISH, PromptTemplate
from tests.conftest import paper, run_graph
from tests.support import FakeOpenAIServer

QA_RULE = "You answer a precise question"


def _last_user(request: dict[str, object]) -> str:
    messages = request["messages"]
    assert isinstance(messages, list)
    return str(messages[-1]["content"])


@pytest.mark.parametrize(("question", "document", "reminder"), [
    ("这篇论文训练时用的学习率是多少？", "en_sparse_attention.md", ANSWER_IN_CHINESE),
    ("What does this paper propose?", "zh_multidoc_summary.md", ANSWER_IN_ENGLISH),
])
async def test_the_answer_prompt_restates_the_question_language(
    fake_llm: FakeOpenAIServer, question: str, document: str, reminder: PromptTemplate
) -> None:
    fake_llm.configure(rules=[{"match": QA_RULE, "reply": "ANSWER"},
                              {"match": "summar", "reply": "ANSWER"}])
    out, _ = await run_graph({"query": question, "content": paper(document),
                              "mode_type": "LITERATURE_QA"})
    assert out["answer"] == "ANSWER", out.get("error")
    answer_request = [r for r in fake_llm.stats().requests if QA_RULE in str(r["messages"])][-1]
    assert _last_user(answer_request) == f"{question}\n\n{reminder.format()}"
    # The thread keeps the question as asked.
    asked = [m.content for m in out["messages"] if m.type == "human"]
    assert asked == [question]


async def test_chat_restates_the_question_language(fake_llm: FakeOpenAIServer) -> None:
    fake_llm.configure(rules=[{"match": ".", "reply": "你好！"}])
    out, _ = await run_graph({"query": "你好，今天过得怎么样？", "mode_type": "SIMPLE_INTERACTION"})
    assert out["answer"] == "你好！", out.get("error")
    last = fake_llm.stats().requests[-1]
    assert _last_user(last).endswith(ANSWER_IN_CHINESE.format())
    assert [m.content for m in out["messages"] if m.type == "human"] == ["你好，今天过得怎么样？"]
