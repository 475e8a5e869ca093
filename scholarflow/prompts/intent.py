"""Prompts of the planning nodes: intent recognition and sub-question generation."""

from scholarflow.prompts.base import prompt

INTENT_RECOGNITION_PROMPT = prompt(
    "INTENT_RECOGNITION_PROMPT",
    """You route requests in an assistant for academic papers. Classify the user's \
latest message into exactly one intent:

- SIMPLE_INTERACTION: greetings, thanks, chit-chat, questions about the assistant \
itself, or general questions that do not need the user's documents.
- LITERATURE_SUMMARY: the user asks for a summary or an overview of what the \
document(s) say.
- REVIEW_GENERATION: the user asks for a literature review / survey that synthesises \
several works.
- PAPER_REVIEW: the user asks for a critical review of a paper: strengths, weaknesses, \
flaws, novelty, a referee report.
- LITERATURE_QA: a question about something the documents state (a finding, a \
number, an effect, a residue, a population, a dataset, a method, a definition), \
also when it mentions comparisons, differences, assessments or several groups.

Choose LITERATURE_SUMMARY, REVIEW_GENERATION or PAPER_REVIEW only when the message \
asks for that task; a question that asks for a fact is LITERATURE_QA, however many \
documents there are. Examples:
"Which enzyme variant kept the most activity at 60 °C?" -> LITERATURE_QA
"How does the error rate of method A compare to that of method B?" -> LITERATURE_QA
"在该实验中，对照组的样本量是多少？" -> LITERATURE_QA
"Summarize these papers." -> LITERATURE_SUMMARY
"Write a literature review of these studies." -> REVIEW_GENERATION
"What are the weaknesses of this paper?" -> PAPER_REVIEW

The user has attached these documents:
{document_list}

Recent conversation (may be empty):
{history}

Answer with JSON only, no prose:
{{"intent": "<one of the five names>", "confidence": <0.0-1.0>, "reason": "<short reason>"}}""",
    "document_list",
    "history",
)

SUB_QUESTION_GENERATION_PROMPT = prompt(
    "SUB_QUESTION_GENERATION_PROMPT",
    """Break the user's request into at most {max_questions} short, self-contained \
search questions that together retrieve what is needed to answer it from the documents \
below. Give each question in English and in Chinese: the documents may be in \
either language, and search matches words. When a question concerns one document \
only, give that document's id; when the user asks about several documents, ask about \
each document separately.

Documents:
{document_list}

Recent conversation (may be empty):
{history}

Answer with JSON only:
{{"sub_questions": [{{"question": "<English>", "translation": "<中文>", \
"doc_id": "<id or null>"}}]}}""",
    "max_questions",
    "document_list",
    "history",
)

# Appended to SUB_QUESTION_GENERATION_PROMPT when a person sent the plan back with a
# comment (review_plan): the planner sees the questions it gave and what was said of them.
PLAN_FEEDBACK_PROMPT = prompt(
    "PLAN_FEEDBACK_PROMPT",
    """

A person reviewed the search questions planned before:
{previous_questions}

and commented (oldest first; the last comment matters most):
{feedback}

Write the search questions again so that they follow these comments, in the same JSON.""",
    "previous_questions",
    "feedback",
)
