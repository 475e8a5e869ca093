"""The per-document condensed summary, cached and shared across users and questions."""

from scholarflow.prompts.base import prompt

DOCUMENT_CONDENSED_SUMMARY_PROMPT = prompt(
    "DOCUMENT_CONDENSED_SUMMARY_PROMPT",
    """Condense the academic document below into a dense summary of about \
{max_words} words (in Chinese, characters), never longer, that another step will \
compare with other documents. Keep: the research question, the method, datasets \
and settings, the main results with their numbers, the stated limitations. No \
preamble. Write it in the document's own language.

<document title="{title}">
{content}
</document>""",
    "max_words",
    "title",
    "content",
)
