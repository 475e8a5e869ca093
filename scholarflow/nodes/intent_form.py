"""The form of a message: a precise question about a finding, or a request for a task.

A question that asks for one fact of the research ("Which residue does the kinase
phosphorylate?", "在该研究中，治疗组的中位生存期是多少？") is answered from the
passages that state it, whatever research words it holds: in "compared to placebo",
"how was tumour volume assessed", "sufficient to induce", "differentiation of brown
adipocytes", "唐氏综合征" the words name what is asked about, not a task. A message asks for a
task when it names one (summary, review, survey, critique, 综述, 总结, 评审) or
judges the work ("Is the design sound?", "实验设计合理吗").

Three tests, the same for any paper, field and model:

- `is_question`: an interrogative (a wh-word, or an auxiliary opening a clause, in
  English; an interrogative word or particle in Chinese) that is not a request to
  the assistant ("Can you summarize ...", "帮我总结...") and not about the assistant
  or the user ("what can you do", "how do I upload").
- `content_terms`: the words that name things of the research: not the documents,
  a task, a judgement, a relation word or grammar. A precise question has a few.
- `names_a_task`: whether a cue word the rules found asks for a task in a precise
  question. A relation or process word ("compare", "differ", "assess", "evolution",
  "integrate", "发展", "缺陷") is what such a question is about; a judgement
  ("sufficient", "sound", "reliable") judges the work only where it ends its clause
  ("Is the sample size sufficient?"), not where it has a complement of its own
  ("sufficient to block phosphorylation", "a reliable marker of sepsis").
"""

from __future__ import annotations

import difflib
import re
import unicodedata

from scholarflow.language import HAN

__all__ = ["PRECISE_QUESTION_MIN_TERMS", "content_terms", "is_precise_question", "is_question",
           "misspelt_task", "names_a_task"]

# A question with fewer content terms than this ("What is this paper about?", "Is
# the method sound?") is about the work, not a finding, and the rules leave it as is.
PRECISE_QUESTION_MIN_TERMS = 2


def _words(words: str) -> str:
    return r"(?<![a-z0-9])(?:" + "|".join(words.split()) + r")(?![a-z0-9])"


# "Could you tell me", "请问": a frame around a question, not a request of its own.
_FRAME = re.compile(
    r"^(?:(?:hi|hello|hey|thanks|ok(?:ay)?)[,!.]?\s+)?(?:please\s+)?(?:"
    r"(?:can|could|would|will)\s+you\s+(?:please\s+)?(?:tell|show)\s+me|tell\s+me|"
    r"i\s+(?:want|would\s+like|'d\s+like)\s+to\s+know|i\s+wonder|do\s+you\s+know|"
    r"请问|请告诉我|告诉我|我想知道|想问一下|想问|问一下)\s*[,:，：]?\s*")
_CLAUSE_START = r"(?:^|[,;:.!?，；：。！？]\s*)"
_WH = _words("what which who whom whose where when why how")
_AUX = _words("is are was were do does did can could has have had will would should may might "
              "must")
_WH_OPENS = re.compile(_CLAUSE_START + r"(?:" + _words("what which who whom whose why how")
                       + "|" + _AUX + r"\s+\w)")
_REQUEST = re.compile(_CLAUSE_START + r"(?:please\s+)?(?:can|could|would|will)\s+you(?![a-z])"
                      r"|^(?:帮我|帮忙|麻烦|给我|能否|能不能|可不可以|可以|请你|请帮|请)")
_PERSONAL = re.compile(r"(?<!thank )" + _words("you your yours u i me my mine")
                       + "|你(?!好)|您(?!好)|我(?!们)")
_ZH_QUESTION = re.compile(r"什么|哪|多少|几(?!乎|何)|是否|是不是|有没有|吗(?!啡)|呢|如何|怎样|怎么"
                          r"|为什么|为何|谁|何[时处种]")

# Words that say nothing of the research: grammar, the documents, the work in general.
_STOP_WORDS = """a an the of in on at to for from by with without within into onto upon about as
    and or but nor if then than that this these those there here it its it's they them their
    he she his her we our us you your i me my what which who whom whose where when why how is
    are was were be been being am do does did done doing have has had having can could will
    would shall should may might must not no yes so such very much many more most less least
    some any all each every both either neither other another one ones same also just only even
    still yet already again ever never really actually basically exactly specifically please
    tell say said show shown give given get got make made use used using uses find found
    report reported reports describe described mention mentioned observe observed see seen
    know known think mean like well way ways thing things kind type part parts lot bit main
    major key best worst highest lowest greatest largest smallest biggest first second between among
    after before during while whether over under up down out off via per vs versus following
    above below etc e.g. i.e. paper papers article articles study studies work works document
    documents manuscript pdf draft preprint thesis chapter section sections text author
    authors researcher researchers research result results finding findings conclusion
    conclusions claim claims evidence method methods methodology approach approaches
    experiment experiments experimental analysis analyses design contribution contributions
    idea ideas argument arguments point points topic field literature proposed framework
    question questions answer summary review overall here publication venue journal
    conference thoughts thought opinion opinions take view views impression impressions
    feedback comment comments detail details elaborate continue next else expand further"""
_STOP = frozenset(_STOP_WORDS.split())
_ZH_STOP = re.compile(
    r"论文|文章|文献|文档|研究|作者|本文|文中|这篇|该文|这项|这些|这几|那些|方法|结果|结论|实验|工作|"
    r"内容|部分|数据|发现|报道|报告|提出|使用|采用|进行|观察到?|情况|问题|方面|主要|讲|说|"
    r"什么|哪[个些种里]?|多少|几|是否|是不是|有没有|如何|怎样|怎么|为什么|为何|谁|何|"
    r"[的了是在中和与及或对被把从有为这那个些一上下里时后前也都就还又而其之所以于由将会能可要到给让使用"
    r"等吗呢啊吧请问么该此并且但]")
# Relation and process words: a task beside the documents ("compare these papers"), a
# topic inside a question about a finding ("compared to placebo", "发展"); and "the
# field", a research area or where a field trial ran.
_RELATION = re.compile(
    r"(?:assess\w*|evaluat\w*|compar\w*|contrast\w*|differ\w*|similar\w*|relat\w*|connection\w*"
    r"|(?:dis)?agree\w*|consensus|consistent\w*|contradict\w*|conflict\w*|align\w*|debates?"
    r"|integrat\w*|combin\w*|connect\w*|merg\w*|synthe[sz]\w*|together|across|analy[sz]\w*"
    r"|discuss\w*|identify|examine|progress|challenges|categori[sz]e|evolution|evolv\w*"
    r"|trends?|over\s+time|changed?\s+over|history\s+of|landscape|taxonomy|significan\w*"
    r"|quality|reviews?|surveys?|concerns?|reject\w*|accept\w*|ratings?|critical(?:ly)?"
    r"|poorly|(?:un)?fair(?:ly)?|overall|abstract|notes|highlights?|outline|digest"
    r"|meta-?analysis|recent\s+advances|supported\s+by|backed\s+by|exaggerat\w*|overstat\w*"
    r"|worth\w*|in\s+common|(?:the|this|that|our|whole|entire)\s+field|"
    r"比较|对比|相比|异同|共同|共性|相同点|不同点|分歧|共识|争议|一致|矛盾|冲突|关联|联系|关系|相互"
    r"|之间|区别|差异|综合|整合|融合|汇总|结合|分析|讨论|探讨|识别|发展|挑战|分类|演变|演进|变迁"
    r"|趋势|评价|评估|评分|缺陷|不足|显著|质量)")
# The names of tasks and of what a review weighs: never a research term of a question.
_TASK_NAME = re.compile(
    r"summar\w*|overview|recap|gist|takeaways?|critiqu\w*|critici[sz]\w*|weakness(?:es)?"
    r"|strengths?|limitations?|flaws?|drawbacks?|shortcomings?|novelty|originality|pros|cons")
# Judgements of the work; followed by a complement of their own they state a fact.
_JUDGEMENT = re.compile(
    r"(?:sufficient|adequate|insufficient|reliable|credible|meaningful|justified|rigorous"
    r"|convincing|trustworthy|valid|sound|appropriate|reasonable|correct|biased|right)$")
_NOT_ABOUT_THE_WORK = (r"(?!(?:support|justify|back|publication|a\s+top|top|acceptance|"
                       r"(?:the|their|its|this|these)\s+(?:claims?|conclusions?|paper|results|"
                       r"study|work|methods?|methodology|approach|authors?|manuscript|article|"
                       r"findings|experiments?|evaluation|analysis|design|model|data))(?![a-z]))")
_COMPLEMENT = re.compile(r"\s*(?:to|for|as|in|of|at)\s+" + _NOT_ABOUT_THE_WORK)
_ATTRIBUTIVE = re.compile(r"\s+(?!(?:to|for|as|in|of|at|enough|overall|or|and|given|here)"
                          r"(?![a-z]))[a-z]")
# A cue word used as a noun of the question's own topic: after an article, a wh-word or
# a preposition, with up to two modifiers between ("which summary statistic", "were the
# bond strengths measured", "what limitations of the assay").
_NOUN_USE = re.compile(r"(?<![a-z])(?:the|a|an|which|what|its|their|of|in|for|with|by|on|any"
                       r"|whose)\s+(?:[\w-]+\s+){0,2}$")
_TOKEN = re.compile(r"[a-z0-9\u0370-\u03ff][a-z0-9\u0370-\u03ff+/.\-]*")


def is_question(text: str) -> bool:
    """`text` (normalised: lower case, NFKC, single spaces) asks a question of the documents."""
    body = _FRAME.sub("", text.strip())
    if not body or _REQUEST.search(body) or _PERSONAL.search(body):
        return False
    if _WH_OPENS.search(body):
        return True
    if re.search(f"[{HAN}]", body) and _ZH_QUESTION.search(body):
        return True
    return body.endswith("?") and bool(re.search(_WH + "|" + _CLAUSE_START + _AUX, body))


def content_terms(text: str) -> list[str]:
    """The words of `text` that name things of the research (Chinese: two characters a term)."""
    body = _FRAME.sub("", text)
    terms = [t.strip(".-/") for t in _TOKEN.findall(body)]
    terms = [t for t in terms if (len(t) > 1 or t.isdigit()) and t not in _STOP
             and not _RELATION.fullmatch(t) and not _JUDGEMENT.search(t)
             and not _TASK_NAME.fullmatch(t)]
    # Chinese has no spaces: what is left of each run of characters counts a term
    # per two characters ("乙醇浓度": two).
    han = _ZH_STOP.sub(" ", _RELATION.sub(" ", body))
    runs = "".join(re.findall(f"[{HAN}]", han))
    return terms + [runs[i : i + 2] for i in range(0, len(runs) - 1, 2)]


def is_precise_question(text: str, min_terms: int = PRECISE_QUESTION_MIN_TERMS) -> bool:
    """A question about a finding: interrogative, with at least `min_terms` research terms.
    Read as the rules read it: NFKC, lower case, whitespace folded (idempotent)."""
    text = " ".join(unicodedata.normalize("NFKC", text).lower().split())
    return is_question(text) and len(content_terms(text)) >= min_terms


def names_a_task(cue: str, before: str, after: str) -> bool:
    """Whether the rules' cue `cue`, between `before` and `after` in the message, asks for
    a task within a precise question (outside one, every cue the rules find does)."""
    cue = cue.strip()
    if _RELATION.fullmatch(cue.removeprefix("how ")):
        return False  # "compared to placebo", "how significant was the reduction"
    judgement = bool(_JUDGEMENT.search(cue))
    if " " in cue:  # a phrase: a named task, or a judgement of the work
        return not (judgement and not cue.startswith("how ") and _COMPLEMENT.match(after))
    if judgement or _NOUN_USE.search(before):
        # "sufficient to block ...", "a reliable marker", "the strengths of the bonds".
        return not (_COMPLEMENT.match(after) or _ATTRIBUTIVE.match(after))
    return True


# The names of the tasks, for a message the rules cannot read because a task word is
# misspelt ("sumarize", "reivew"): the LLM reads it, and a guard must not overrule it.
_TASK_WORDS = ("summarize", "summarise", "summary", "review", "survey", "critique", "criticize",
               "overview", "literature", "weaknesses", "strengths", "limitations", "evaluate",
               "compare", "comparison", "synthesize", "synthesis", "recap", "assess")
_TYPO_SIMILARITY = 0.8


def misspelt_task(text: str) -> str | None:
    """A word of `text` that is a task's name misspelt, if there is one."""
    tokens: set[str] = set(_TOKEN.findall(text))
    for token in sorted(tokens):
        if len(token) >= 5 and token not in _STOP and not _RELATION.fullmatch(token):
            close = difflib.get_close_matches(token, _TASK_WORDS, n=1, cutoff=_TYPO_SIMILARITY)
            if close and not _inflected(token, close[0]):
                return token
    return None


def _inflected(token: str, word: str) -> bool:
    """`token` is a form of `word` ("limitation", "overviews"), not a misspelling."""
    return (token.rstrip("s") == word.rstrip("s") or token.startswith(word)
            or word.startswith(token))
