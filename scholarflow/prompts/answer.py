"""Answer prompts, one per intent and stage. The user's question follows as its own message."""

from scholarflow.prompts.base import prompt

# Repeated after the question, in the question's own language: a small model that reads
# a long English prompt forgets the system prompt's language rule (a Chinese critique
# of an English paper comes back in English).
ANSWER_IN_CHINESE = prompt("ANSWER_IN_CHINESE", "（请用简体中文回答。）")
ANSWER_IN_ENGLISH = prompt("ANSWER_IN_ENGLISH", "(Answer in English.)")
# After a question that lists options (nodes/options.py), and only then: it costs every
# other prompt nothing, which a small window needs.
OPTIONS_REMINDER = prompt(
    "OPTIONS_REMINDER",
    "(On the first line, write the letter and text of the one option the passages support, "
    "as listed (\"X) ...\"); then explain in one or two sentences, citing the passage as "
    "[n]. When no passage supports any option, choose the option saying the information "
    "is insufficient, if there is one.)")
# Between the question and the reminder: each option with the sentence that names it
# (nodes/option_evidence.py), so a small model compares options instead of guessing.
OPTION_EVIDENCE = prompt(
    "OPTION_EVIDENCE", "Options the passages name:\n{options}", "options")

_RULES = """
Ground every statement in the material above; when it does not say, say so plainly \
instead of guessing. Write your answer in {language}, in Markdown."""

SINGLE_DOC_SUMMARY_PROMPT = prompt(
    "SINGLE_DOC_SUMMARY_PROMPT",
    """You summarise an academic document for a researcher.

{documents}

Give: the problem and motivation; the method; the main results with their numbers; \
the limitations; a one-sentence takeaway. Follow any focus the user asks for.""" + _RULES,
    "documents",
    "language",
)

MULTI_DOC_SUMMARY_PROMPT = prompt(
    "MULTI_DOC_SUMMARY_PROMPT",
    """You summarise a set of academic documents for a researcher. Below is a condensed \
summary of each.

{summaries}

Summarise each document in a few sentences (name it by its title), then say what they \
share, where they differ, and what they add up to. Follow any focus the user asks \
for.""" + _RULES,
    "summaries",
    "language",
)

MULTI_DOC_SUMMARY_SYNTHESIS_PROMPT = prompt(
    "MULTI_DOC_SUMMARY_SYNTHESIS_PROMPT",
    """You are writing part {group} of {groups} of a summary of many academic documents. \
Below are condensed summaries of the documents in this part.

{summaries}

Write an intermediate report: each document's main point and results in one or two \
sentences (name it by its title), then the themes that connect them. Another step \
merges the parts, so keep every title and number.""" + _RULES,
    "summaries",
    "group",
    "groups",
    "language",
)

MULTI_DOC_SUMMARY_FINAL_MERGE_PROMPT = prompt(
    "MULTI_DOC_SUMMARY_FINAL_MERGE_PROMPT",
    """Below are intermediate reports, each covering part of a set of academic documents.

{reports}

Merge them into one summary of the whole set: the documents grouped by theme, what \
each contributes, where they agree and disagree, and the overall picture. Keep titles \
and numbers; do not repeat yourself.""" + _RULES,
    "reports",
    "language",
)

REVIEW_GENERATION_PROMPT = prompt(
    "REVIEW_GENERATION_PROMPT",
    """You write a literature review from the material below.

{documents}

Structure: introduction and scope; themes, each synthesising the works that address \
it (compare methods, data and results, citing works by title); open problems and \
future directions; conclusion. Synthesise, do not list paper by paper.""" + _RULES,
    "documents",
    "language",
)

REVIEW_GENERATION_SYNTHESIS_PROMPT = prompt(
    "REVIEW_GENERATION_SYNTHESIS_PROMPT",
    """You are drafting part {group} of {groups} of a literature review. Below are \
condensed summaries of the works in this part.

{summaries}

Write an intermediate synthesis: the themes these works address, how their methods \
and results compare (cite works by title, keep numbers), and the gaps they leave. \
Another step merges the parts into the final review.""" + _RULES,
    "summaries",
    "group",
    "groups",
    "language",
)

REVIEW_GENERATION_FINAL_MERGE_PROMPT = prompt(
    "REVIEW_GENERATION_FINAL_MERGE_PROMPT",
    """Below are intermediate syntheses, each covering part of the literature.

{reports}

Merge them into one literature review: introduction and scope; themes synthesising \
works across all parts (cite by title); open problems and future directions; \
conclusion.""" + _RULES,
    "reports",
    "language",
)

PAPER_REVIEW_PROMPT = prompt(
    "PAPER_REVIEW_PROMPT",
    """You are an expert, fair referee. Review the paper below.

{documents}

Give: a summary of the claims; strengths; weaknesses (methodology, experiments, \
baselines, statistics, reproducibility, clarity), each with the passage it concerns; \
questions for the authors; a verdict with a confidence. Follow any focus the user \
asks for.""" + _RULES,
    "documents",
    "language",
)

LITERATURE_QA_PROMPT = prompt(
    "LITERATURE_QA_PROMPT",
    """You answer a precise question from academic documents.

{documents}

Answer directly first (the number, name or fact), then the supporting passage or \
section it comes from, naming the document by its title.""" + _RULES,
    "documents",
    "language",
)

# A precise question no recalled passage speaks to (nodes/evidence.py `support`): said
# without asking the model, which would guess.
UNSUPPORTED_ANSWER_EN = prompt(
    "UNSUPPORTED_ANSWER_EN",
    "Insufficient information: no passage of the documents answers this question.")
UNSUPPORTED_ANSWER_ZH = prompt(
    "UNSUPPORTED_ANSWER_ZH", "信息不足：文档中没有能回答这个问题的段落。")

# A multiple-choice answer: the option a reading named (nodes/option_reading.py).
PICKED_EVIDENCE_EN = prompt("PICKED_EVIDENCE_EN", 'Passage [{n}] says: "{sentence}" [{n}]',
                            "n", "sentence")
PICKED_EVIDENCE_ZH = prompt("PICKED_EVIDENCE_ZH", "段落 [{n}] 写道：“{sentence}” [{n}]",
                            "n", "sentence")
# No reading named an option (nodes/option_reading.py).
READ_NONE_EN = prompt(
    "READ_NONE_EN",
    "Insufficient information: the passages do not settle this question. Asked without "
    "the options, the model answered \"{said}\", which names none of them.", "said")
READ_NONE_ZH = prompt(
    "READ_NONE_ZH",
    "信息不足：这些段落不能确定答案。不看选项时，模型回答“{said}”，与任何选项都不对应。", "said")
# The question's stem alone after the passages (nodes/option_free.py): a short answer in
# the passages' words, matched to the options afterwards, so neither a letter nor the
# options' order sways it.
FREE_ANSWER_EN = prompt(
    "FREE_ANSWER_EN",
    "{stem}\n\n(Reply with only the answer itself, in a few words copied from the passages. "
    "If the passages do not say, reply: not stated.)", "stem")
FREE_ANSWER_ZH = prompt(
    "FREE_ANSWER_ZH",
    "{stem}\n\n（只回答答案本身，用从段落中照抄的几个词。如果段落没有说明，回答：未提及。）",
    "stem")
# The stem once more after readings that said only "not stated" (nodes/option_pressed.py):
# told the passages answer it, with no way out offered.
PRESSED_ANSWER_EN = prompt(
    "PRESSED_ANSWER_EN",
    "{stem}\n\n(The passages answer this. Reply with only the answer itself, in a few "
    "words copied from the passages.)", "stem")
PRESSED_ANSWER_ZH = prompt(
    "PRESSED_ANSWER_ZH",
    "{stem}\n\n（段落中有答案。只回答答案本身，用从段落中照抄的几个词。）", "stem")
# The model's own answer beside the options, without letters (nodes/option_naming.py): which
# option states it, copied, so the pick is matched by words like the answer itself.
NAME_OPTION_EN = prompt(
    "NAME_OPTION_EN",
    "Question: {stem}\nAn answer from the passages: \"{said}\"\n\nWhich of these options "
    "states the same thing as that answer?\n{options}\n\nReply with that option copied "
    "exactly. If none of them states it, reply: none.", "stem", "said", "options")
NAME_OPTION_ZH = prompt(
    "NAME_OPTION_ZH",
    "问题：{stem}\n根据段落得到的答案：“{said}”\n\n下面哪个选项与这个答案说的是同一件事？\n{options}\n\n"
    "照抄那个选项。如果没有一个选项与答案相同，回答：无。", "stem", "said", "options")
PICKED_FREE_EN = prompt(
    "PICKED_FREE_EN",
    "(Asked without the options, the model answered \"{free}\" from the passages: this "
    "option.)", "free")
PICKED_FREE_ZH = prompt(
    "PICKED_FREE_ZH", "（不看选项时，模型根据这些段落回答“{free}”：即这个选项。）", "free")
# The answer named no option by its words; the model, shown it beside the options, named
# this one (nodes/option_naming.py): the reader is told who matched it.
PICKED_NAMED_EN = prompt(
    "PICKED_NAMED_EN",
    "(Asked without the options, the model answered \"{free}\" from the passages; shown "
    "that answer beside the options, it said this option states it.)", "free")
PICKED_NAMED_ZH = prompt(
    "PICKED_NAMED_ZH",
    "（不看选项时，模型根据这些段落回答“{free}”；把这个回答和选项放在一起时，模型认为这个选项说的就是它。）",
    "free")
# The option a pressed reading named (nodes/option_pressed.py): the reader is told the
# model first found no answer.
PICKED_PRESSED_EN = prompt(
    "PICKED_PRESSED_EN",
    "(Asked without the options, the model first said the passages do not say; told "
    "that they answer it, it answered \"{free}\": this option, which the sentence above "
    "names.)", "free")
PICKED_PRESSED_ZH = prompt(
    "PICKED_PRESSED_ZH",
    "（不看选项时，模型起初说段落没有说明；告诉它段落中有答案后，它回答“{free}”：即这个选项，上面引用的句子提到了它。）",
    "free")
