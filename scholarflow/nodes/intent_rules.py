"""Keyword rules for intent recognition, Chinese and English, without an LLM.

They serve twice: as the fast path (an unambiguous verdict skips the LLM) and as
the fallback when no LLM answers, so `classify_by_rules` always returns a guess.

Every rule that matches adds its weight to its intent, once per rule. Weights say
what a cue tells about the request:

* 3   names the task or its object ("文献综述", "weaknesses", "你是谁");
* 2.5 a generic task verb ("总结", "summarize"): the object outweighs it, so
      "summarize the weaknesses" is a review and "总结…研究现状" a literature review;
* 2   telling but shared ("overview", "趋势", a research detail such as "dataset");
* 1   weak: a question form, a reference to the paper, a greeting, a bare "compare".

Ties go to the more specific intent: PAPER_REVIEW > REVIEW_GENERATION >
LITERATURE_SUMMARY > LITERATURE_QA > SIMPLE_INTERACTION.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from scholarflow.intents import Intent

__all__ = ["AMBIGUITY_MARGIN", "MIN_DECISIVE_SCORE", "RuleVerdict", "classify_by_rules",
           "intent_scores"]

# The margin rule: the rules are sure when the winner has a real cue (score >=
# MIN_DECISIVE_SCORE) and leads the runner-up by at least AMBIGUITY_MARGIN. So a
# task verb against a task object ("summarize the weaknesses", 2.5 vs 3) goes to
# the LLM, while a greeting before a request ("你好，帮我总结一下") does not.
AMBIGUITY_MARGIN = 1.5
MIN_DECISIVE_SCORE = 2.0
_SCORE_CAP = 6.0  # many cues of one kind must not drown one strong cue of another
_CHAT_ONLY_BONUS = 1.5  # chit-chat with nothing else in the message is the message

_TIE_ORDER = (
    Intent.PAPER_REVIEW,
    Intent.REVIEW_GENERATION,
    Intent.LITERATURE_SUMMARY,
    Intent.LITERATURE_QA,
    Intent.SIMPLE_INTERACTION,
)


@dataclass(frozen=True, slots=True)
class RuleVerdict:
    intent: Intent
    confidence: float  # 0..1
    unambiguous: bool  # True when the rules are sure enough to skip the LLM
    reason: str  # short, e.g. "matched '总结' (LITERATURE_SUMMARY)"


def _en(words: str) -> str:
    # \b fails between a CJK character and a Latin one ("帮我summarize一下"),
    # so English words are bounded by "no ASCII letter or digit" instead.
    return rf"(?<![a-z0-9])(?:{words})(?![a-z0-9])"


def _cue(zh: str = "", en: str = "") -> str:
    """One pattern from Chinese alternatives and English words (bounded by _en)."""
    return "|".join(part for part in (zh, _en(en) if en else "") if part)


_DOC = r"(?:paper|article|manuscript|submission|work|study|document|report|pdf|draft|preprint)"
# Several documents at once: comparing or joining them is a literature review's job.
_PLURAL = "(?:" + _cue(
    r"这些|那些|这几|那几|[两二三四五六七八九十几多各每]篇|多个|多篇|所有",
    r"(?:these|those|both|all|several|multiple|two|three|four|five|the|attached|uploaded)\s+"
    r"(?:\w+\s+){0,2}(?:papers|studies|articles|works|documents|sources|approaches|methods"
    r"|models|pdfs|references)|each\s+other|across",
) + ")"
# 比较 is also the adverb "rather" (比较好, 比较难): only the verb counts.
_COMPARE = "(?:" + _cue(
    r"对比|比较(?!好|难|容易|简单|复杂|高|低|大|小|多|少)|异同|共同点|相同点|不同点|分歧|共识|争议|一致"
    r"|矛盾|冲突|关联|联系|关系|相互|之间",
    r"compar\w*|contrast\w*|similarit\w*|common\s+themes|in\s+common|differ\w*|(?:dis)?agree\w*"
    r"|consensus|debates?|consistent|contradict\w*|relate\w*|relationships?|connections?",
) + ")"
_JOIN = "(?:" + _cue(
    r"串起来|串联|结合起来|放在一起|放一起|整合|融合|汇总",
    r"together|combin\w*|integrat\w*|synthe[sz]\w*|connect\w*|merg\w*",
) + ")"

S, L, R, P, Q = (
    Intent.SIMPLE_INTERACTION,
    Intent.LITERATURE_SUMMARY,
    Intent.REVIEW_GENERATION,
    Intent.PAPER_REVIEW,
    Intent.LITERATURE_QA,
)

# (pattern, intent, weight, flags); flags: n = negatable ("不要总结"), m = mask the
# match from later rules, s = soft chit-chat (decides only when nothing asks for
# work), q = question form. Order matters only for masking: compounds first.
_RULE_TABLE: tuple[tuple[str, Intent, float, str], ...] = (
    # --- compounds whose parts would mislead later rules
    (_cue(en=r"(?:literature|lit\.?|systematic|scoping|narrative|integrative|mini|"
             r"state[- ]of[- ]the[- ]art|comprehensive)(?:\s+literature)?\s+(?:reviews?|surveys?)"
             r"|reviews?\s+(?:article|paper|chapter|section)s?"
             r"|review\s+of\s+(?:the\s+)?(?:literature|field|research)"), R, 3, "nm"),
    (_cue(r"评价指标|评估指标|评价方法|评估方法|评价标准|评测",
          r"evaluation\s+(?:metrics?|protocol|setup|set|data|criteria)"
          r"|how\s+(?:was|were|is|are)\s+(?:\w+\s+){0,3}(?:evaluated|assessed|measured)"), Q, 3, "m"),
    (_cue(r"介绍一下你自己|你自己|(?:你|您)?(?:刚才|刚刚|之前|上次|前面)(?:说|讲|回答|问|聊)(?:了|的|过)?"
          r"(?:什么|啥|些什么)?|上一个问题|再说一遍|重复一遍",
          r"yourself|introduce\s+you|remember|earlier|previous\s+(?:answer|question|message|reply)"
          r"|(?:you|i)\s+(?:just\s+)?(?:said|asked|told)|repeat\s+(?:that|it|yourself)"), S, 3, "m"),
    # --- REVIEW_GENERATION
    (_cue(r"文献综述|综述|评述|述评|文献回顾|综合分析|研究现状|研究进展|研究前沿|研究热点|发展(?:脉络|历程|趋势"
          r"|方向)|研究路线|技术路线|相关工作|写.{0,6}(?:研究)?背景|背景(?:部分|章节)|演变|演进|变迁|展望"
          r"|未来(?:的)?(?:研究)?方向|研究空白|(?:这个|该|整个|这一)(?:领域|方向)",
          r"surveys?|related[\s-]+works?|research\s+(?:landscape|trends?|gaps?|directions?"
          r"|frontier)|state\s+of\s+(?:the\s+)?(?:research|art|field)|sota|open\s+(?:problems"
          r"|questions|challenges)|future\s+(?:research\s+)?directions|meta-?analysis"
          r"|background\s+(?:section|chapter)|(?:this|the|that|our|whole|entire)\s+(?:field"
          r"|research\s+area)|landscape|evolv\w*|evolution|history\s+of|taxonomy"
          r"|annotated\s+bibliography|changed?\s+over|over\s+(?:time|the\s+years)"), R, 3, "n"),
    (_COMPARE + r".{0,40}?" + _PLURAL + "|" + _PLURAL + r".{0,40}?" + _COMPARE, R, 3, "n"),
    (_JOIN + r".{0,40}?" + _PLURAL + "|" + _PLURAL + r".{0,40}?" + _JOIN, R, 3, "n"),
    (_cue(r"综合|整合|汇总|趋势|挑战|发展|分类",
          r"synthe[sz]\w*|trends?|challenges|progress|categori[sz]e"), R, 2, "n"),
    (_cue(r"(?:基于|结合|根据|综合|参考)(?:以上|这些|这几|上述|所有)",
          r"(?:based\s+on|according\s+to|using|from|drawing\s+on)\s+(?:these|those|all"
          r"|the\s+(?:attached|uploaded))"), R, 1.5, ""),
    (_COMPARE, R, 1, "n"),
    # --- PAPER_REVIEW
    (_cue(r"评审|审稿|审阅|审查|缺陷|缺点|弱点|不足|优缺点|优点|长处|短处|优劣|局限|毛病|漏洞|短板|硬伤|瑕疵"
          r"|批判|点评|评判|挑刺|找茬|商榷|夸大|拒稿|被拒|说服力|可信度|信服|(?:修改|改进)(?:建议|意见|空间)"
          r"|(?:可以|需要|值得|如何|怎么)改进|改进(?:之处|的地方)|创新(?:点|性)(?:怎么样|如何|够|高|强|大|评价"
          r"|吗)|新颖性|原创性|值得(?:发表|引用|一读|读|看|借鉴)|能(?:不能|否)(?:发表|投|中|被接收)"
          r"|投(?:顶会|期刊|稿)|中稿|接收|评分|打(?:几|多少)?分|(?:存在|有)(?:什么|哪些)?(?:问题|错误)"
          r"|有没有.{0,6}(?:问题|错误)|问题在哪|(?:明显|严重|潜在)的?(?:问题|错误)|评价|评估"
          r"|(?:对|合理|合适|恰当|正确|公平|客观|可信|充分|严谨|靠谱|站得住脚?|成立|科学)(?:吗|么|不|与否"
          r"|性如何|性怎么样)|(?:做|写|设计|用)得(?:好|不好|不够|对|怎么样|如何|好不好|合适)"
          r"|(?:好|不好|不足)的地方",
          r"weakness(?:es)?|weak\s+points?|strengths?|limitations?|flaws?|flawed|shortcomings?"
          r"|drawbacks?|downsides?|pros\s+and\s+cons|critique\w*|critici[sz]\w*|critical(?:ly)?"
          r"|referee\w*|reviewer\w*|peer[- ]?review\w*|how\s+novel|novelty|originality|soundness"
          r"|rigou?r|any\s+good|tear\s+.{0,20}apart|poke\s+holes|red\s+flags?|concerns?"
          r"|overclaim\w*|overstat\w*|exaggerat\w*|(?:get|be|been)\s+accepted|acceptance"
          r"|accept\s+or\s+reject|reject\w*|room\s+for\s+improvement|(?:be|been)\s+improved"
          r"|needs?\s+improvement|(?:could|should|can|would)\s+(?:the\s+authors|they|i|we|it|this)"
          r"\s+improve|improve\s+(?:the|this|my)\s+" + _DOC + r"|what\s+would\s+you\s+change"
          r"|(?:rate|score|grade)\s+(?:this|the|it|my)|ratings?|give\s+it\s+a\s+(?:score|grade)"
          r"|(?:problems?|issues?|errors?|mistakes?)\s+(?:with|in)\s+(?:the|this|their|my)"
          r"|evaluate\s+(?:the|this|my|whether)|assess\w*|appraise|evaluation\s+of\s+(?:the|this|my)"
          r"|supported\s+by|backed\s+(?:up\s+)?by|hold\s+up|major\s+(?:and\s+minor\s+)?comments"
          r"|feedback\s+on|well[- ]written|poorly|unfair|unsupported|unjustified|unfounded"
          r"|logical\s+(?:gaps?|flaws?|errors?)|gaps?\s+in\s+(?:the|their|its)\s+(?:logic|argument"
          r"|reasoning)|(?:is|are|was|were)\s+(?:the|their|this|these|its)\s+(?:\w+\s+){0,3}(?:fair"
          r"|appropriate|correct|justified|sound|valid|convincing|reasonable|sufficient|adequate"
          r"|rigorous|biased|right|well\s+motivated)"), P, 3, "n"),
    (_cue(en=r"review(?:ing)?\s+(?:this|the|my|that|our|their)\s+" + _DOC), P, 3, "n"),
    (_cue(r"论证|(?:论文|文章|工作|贡献|方法|结果|结论|研究|设计|实验)(?:的)?.{0,4}(?:重要|显著|新颖|有意义"
          r"|有价值|好不好|怎么样|如何|行不行|靠谱|够不够|强不强|大不大)",
          r"review(?:ing)?|reviews|sound|rigorous|convincing|credible|trustworthy|valid(?:ity)?"
          r"|reliable|justified|solid|adequate|sufficient|quality|significance|worth\w*|fair(?:ly)?"
          r"|(?:paper|work|contribution|method|approach|idea|results?)(?:'s)?\s+(?:\w+\s+){0,2}"
          r"(?:significant|important|novel|original|good|useful|meaningful|impressive)"), P, 2, "n"),
    # --- LITERATURE_SUMMARY
    (_cue(r"总结|概括|概[括扩述要]|摘要|归纳|梳理|提炼|简述|解读|导读|速览",
          r"summar\w*|summer\w*|tl;?\s?dr|recap\w*|synopsis|condense|boil\s+(?:it\s+)?down|gist"
          r"|in\s+a\s+nutshell|eli5|sum\s+(?:\w+\s+)?up|outline|rundown|run\s+(?:me\s+)?through"
          r"|walk\s+me\s+through|digest|distill\w*"), L, 2.5, "n"),
    (_cue(r"讲(?:了|的)?(?:些|是)?(?:什么|啥)|(?:说|写|做|干)(?:了|的)?(?:些|是)?(?:什么|啥)|是关于(?:什么|啥)"
          r"|主要.{0,2}(?:讲|说|内容|写|研究|做|解决|提出|关注|探讨|贡献)|(?:研究|核心|主要|基本)内容"
          r"|在(?:做|讲|说|研究)(?:什么|啥)|大意|梗概|要点|重点|亮点|核心(?:观点|思想|内容)|主旨|大纲|提纲"
          r"|解决了?(?:什么|哪些|啥)问题|创新点(?:是|有)|文章结构|(?:关键|主要|核心)(?:结论|发现)"
          r"|[一两三四五几\d]+\s*(?:句话|个字|字|段)|简要介绍|简单介绍|介绍一下|了解一下|(?:说说|讲讲|聊聊)"
          r"(?:这|该|本)|快速(?:了解|过|看|读|浏览)|过一遍|整体|总体|总的来说",
          r"what\b[^.?!,;]{0,40}?\babout\s*(?:[?.!,;]|$)|mainly\s+about"
          r"|what(?:'s|\s+does|\s+did)\s+(?:it|this|the\s+\w+|this\s+\w+)\s+say"
          r"|what\s+(?:does|did)\s+(?:this|the|that)\s+" + _DOC + r"\s+(?:say|cover|discuss|propose)"
          r"|(?:key|main|major|core)\s+(?:points|ideas?|takeaways?|findings|contributions|message"
          r"|argument|claims?|results|conclusions)|takeaways?|highlights?|overview|overall"
          r"|abstract|brief(?:ly)?\s+\w+|explain\s+(?:this|the)\s+" + _DOC + r"|describe\s+(?:this"
          r"|the)\s+" + _DOC + r"|description\s+of\s+(?:the|this|each)|break\s+(?:down\s+(?:this"
          r"|the)|(?:this|the)\s+\w+\s+down)|bullet\s*(?:points)?|high[- ]level"
          r"|like\s+i'?m\s+(?:five|5)|in\s+(?:short|brief|plain\s+\w+|simple\s+terms)"
          r"|in\s+\d+\s+(?:words|sentences|lines|paragraphs|bullets)|short\s+version"
          r"|what\s+(?:did|do)\s+(?:the\s+authors|they)\s+do|what\s+problem\s+(?:does|did)"),
     L, 3, "n"),
    (_cue(r"(?:背景|目的|动机|方法|结论|结果|贡献|发现)(?:、|和|与|及|,)\s*(?:背景|目的|动机|方法|结论|结果"
          r"|贡献|发现)",
          r"(?:background|motivation|objectives?|goals?|methods?|methodology|results|findings"
          r"|conclusions?|contributions?),?\s+(?:and\s+)?(?:background|motivation|objectives?"
          r"|goals?|methods?|methodology|results|findings|conclusions?|contributions?)"), L, 2, "n"),
    # --- SIMPLE_INTERACTION: the assistant itself, the conversation, everyday life
    (_cue(r"你是谁|你是(?:什么|哪个|机器人|人|ai)|你叫什么|你的名字|你能(?:做|干)(?:什么|啥|嘛)"
          r"|你会(?:做|干)?(?:什么|啥)|你(?:有|都有)(?:哪些|什么)功能|(?:可以|能)帮(?:我|你)?(?:做|干)"
          r"(?:什么|啥)|你好吗|你(?:会|能)(?:说|讲)|(?:你|您)(?:可以|能|会)(?:联网|上网|搜索)|什么格式"
          r"|哪些格式|哪家公司|谁(?:开发|创造|训练|做)的你|你(?:是)?(?:做什么|干什么)的|(?:怎么|如何)(?:使用"
          r"|用)(?:你|这个(?:助手|工具|系统|平台|机器人))|是(?:chat)?gpt吗|你.{0,6}(?:大模型|模型|版本"
          r"|gpt|llm)|这个(?:助手|机器人|ai)|你觉得我|我(?:应该|该不该)|聊(?:聊)?天|陪我"
          r"|(?:用|以)(?:中文|英文|英语)(?:回答|回复|交流)|以后(?:都)?用",
          r"who\s+are\s+you|what\s+are\s+you|what(?:'s|\s+is)\s+your\s+(?:name|purpose|job)"
          r"|what\s+can\s+you\s+do|how\s+are\s+you|how(?:'s|\s+is)\s+(?:it\s+going|your\s+day)"
          r"|what'?s\s+up|are\s+you\s+(?:chat)?gpt\w*|are\s+you\s+(?:a\s+)?(?:bot|robot|human"
          r"|an\s+ai|real)|are\s+you\s+able|(?:which|what)\s+(?:model|llm)\s+are\s+you"
          r"|(?:do|can)\s+you\s+(?:speak|understand|browse|access)|languages?\s+do\s+you"
          r"|who\s+(?:made|built|created|trained)\s+(?:you|this)|file\s+(?:formats?|types?)"
          r"|(?:things|kinds)\s+can\s+you|help\s+me\s+with\s*\??$|how\s+(?:do|can|should)\s+i"
          r"\s+use\s+(?:you|this\s+(?:tool|assistant|app|system|bot))|(?:can|could)\s+you\s+help"
          r"(?:\s+me)?\s*[?.!]*$|should\s+i|(?:answer|reply|respond|talk)\s+in\s+(?:chinese"
          r"|english)|from\s+now\s+on|this\s+(?:assistant|bot|chatbot|ai)|(?:chat|talk)\s+(?:for"
          r"|with\s+me|a\s+bit)"), S, 3, ""),
    (_cue(r"天气|笑话|讲个故事|写(?:一)?首诗|电影|音乐|歌曲|新闻|几点|星期几|几号|日期|今天|明天|昨天|周末"
          r"|首都|总统|国家|股票|菜谱|做饭|美食|餐厅|旅游|旅行|咖啡|吃什么|喝什么|去哪|好玩|游戏|心情|无聊"
          r"|开心|难过|伤心|累了|有点累|休息|睡觉|饿了|邮件|请假|写(?:一)?(?:封|首|个)?(?:信|诗|故事|文案)"
          r"|推荐(?:一)?(?:本|部|首|个)|等于几|\d+\s*[-+*/×÷]\s*\d+\s*(?:=|等于)?\s*(?:几|多少|\?)",
          r"weather|jokes?|poem|movies?|films?|music|songs?|news|what\s+time|what\s+day"
          r"|date\s+today|today|tomorrow|yesterday|weekend|capital\s+of|president|country"
          r"|stocks?|recipes?|cook\w*|coffee|tea|dinner|lunch|breakfast|restaurants?|travel"
          r"|football|soccer|basketball|games?|something\s+(?:interesting|fun|funny)|bored|sad"
          r"|happy|tired|e-?mail|letter|best\s+way\s+to|learn\s+(?:to|python|english|programming)"
          r"|recommend\s+(?:a|some)\s+(?:good\s+)?(?:books?|movies?|songs?|places?)"
          r"|\d+\s*(?:times|plus|minus|divided\s+by|multiplied\s+by)\s*\d+"), S, 2, ""),
    (_cue(r"你好|您好|嗨|哈[喽啰咯罗]|(?:老师|大家|同学|各位|师兄|师姐|朋友)好|早上好|下午好|晚上好|早安|晚安"
          r"|在吗|在不在|谢|感谢|辛苦|再见|拜拜|好的|好吧|明白了?|知道了|懂了|收到|了解了|哈哈|呵呵|嘿|有意思"
          r"|厉害|太棒|真棒|不错|就到这里|不好意思|抱歉|对不起|打扰|^[嗯哦噢啊额呃唔]+|^早[呀啊安]?$",
          r"hi|hello|hey|hiya|yo|greetings|good\s+(?:morning|afternoon|evening|night)|thanks?"
          r"|thank\s+(?:you|u)|thx|ty|cheers|bye|goodbye|see\s+you|talk\s+to\s+you|ok(?:ay)?"
          r"|got\s+it|understood|makes\s+sense|cool|nice|great|awesome|lol|haha\w*|funny|sorry"
          r"|my\s+bad|good\s+job|well\s+done|h+m+|u+m+|oh|wow|appreciate\w*"), S, 1, "s"),
    # --- LITERATURE_QA: research details; then doc references and question form
    (_cue(r"数据集|数据库|学习率|批大小|超参|参数|优化器|准确率|精度|召回率|指标|分数|得分|基线|消融|实验|样本"
          r"|训练|测试|验证集|损失函数|函数|公式|方程|定理|证明|算法|架构|编码器|解码器|注意力|机制|显卡"
          r"|表\s*\d|图\s*\d|第.{1,3}(?:节|章|部分|段)|附录|机构|单位|发表|引用|参考文献|代码|开源|缺失值|变量"
          r"|符号|复杂度|维度|取值|预训练|微调|对照组|对比方法|受试|研究对象|人群|问卷|统计|显著|通讯作者|层数"
          r"|几层|(?:指的是|表示|代表)(?:什么|啥)|什么意思|含义|定义|是指",
          r"datasets?|data\s+set|databases?|learning\s+rate|batch\s+size|hyper-?parameters?"
          r"|optimi[sz]er|epochs?|dropout|accuracy|precision|recall|f1|bleu|rouge|auc|metrics?"
          r"|baselines?|ablations?|experiments?|benchmarks?|architecture|layers?|encoder|decoder"
          r"|loss|reward|function|equation|eq\.|formula|theorem|lemma|proof|algorithm"
          r"|table\s*\d+|fig(?:ure)?\.?\s*\d+|section\s*\d+|appendix|participants|sample\s+size"
          r"|cohort|gpus?|hardware|trained|training|code|github|affiliation|published"
          r"|citations?|cite[sd]?|confidence\s+intervals?|p-?values?|parameters|mechanism|data"
          r"|tokeni[sz]er|pre-?trained|fine-?tun\w*|labell?ed|complexity|control\s+group"
          r"|define[sd]?|definition|mean\s+by|refers?\s+to|dimensions?|axis|scores?"), Q, 2, ""),
    (_cue(r"模型|方法|结果|数据|性能|效果|表现|作者|文中|本文|这篇|该文|论文[里中]|文章[里中]|他们",
          r"model|method|approach|results?|performance|authors?|they|their|(?:the|this)\s+"
          + _DOC + r"|in\s+the\s+(?:paper|article|study)"), Q, 1, ""),
    (_cue(r"什么|啥|多少|几[个张层次种年天轮块]|哪|怎么|怎样|如何|为什么|为何|是否|有没有|吗|呢|具体|解释|\?",
          r"what|which|how|why|when|where|who|whose|explain|does|did|is\s+there"), Q, 1, "q"),
)

_RULES = tuple(
    (re.compile(pattern), intent, weight, "n" in flags, "m" in flags, "s" in flags, "q" in flags)
    for pattern, intent, weight, flags in _RULE_TABLE
)

# A refusal right before a task cue: "不要总结", "don't summarize", "not a summary".
# "别" only counts where it starts a clause, because it also ends 分别, 区别, 类别.
_NEGATION = re.compile(
    r"(?:不要|(?:^|[你请也就先可千万,，\s])别|不用|无需|不需要|不必|并非|而不是|不是要|不是让|"
    r"(?<![a-z])(?:don'?t|do\s+not|no\s+need\s+to|not|never|without|instead\s+of|rather\s+than))"
    r"[\s,，]*(?:\S{0,4}|(?:[a-z]+\s+){0,2})$"
)
_NEGATION_WINDOW = 16
# Addressed to the assistant: with no paper in sight, that is conversation.
_YOU = re.compile(r"你|您|" + _en(r"you|your|u"))
_CONTENT_CHARS = re.compile(r"[0-9a-z\u3400-\u9fff]")
_DOC_REFERENCE = re.compile(
    r"论文|文章|文献|文档|本文|文中|作者|这篇|该文|报告|" + _en(r"papers?|articles?|authors?|pdf|study")
)


def _normalize(query: str) -> str:
    # NFKC folds full-width forms ("？", "ＧＰＴ") into ASCII so one pattern fits both.
    return " ".join(unicodedata.normalize("NFKC", query).lower().split())


def _negated(text: str, start: int) -> bool:
    return _NEGATION.search(text[max(0, start - _NEGATION_WINDOW) : start]) is not None


def _score(
    text: str,
) -> tuple[dict[Intent, float], dict[Intent, tuple[float, str]], float, bool]:
    """Scores per intent, their strongest cue (weight, text), chit-chat score, question?"""
    scores = dict.fromkeys(Intent, 0.0)
    cues: dict[Intent, tuple[float, str]] = {}
    soft = 0.0
    question = False
    work = text
    for pattern, intent, weight, negatable, mask, is_soft, is_question in _RULES:
        hit: re.Match[str] | None = None
        for match in pattern.finditer(work):
            if negatable and _negated(work, match.start()):
                continue
            hit = match
            if mask:  # blank it out, keeping offsets, so "literature review" ≠ "review"
                work = work[: match.start()] + " " * len(match.group(0)) + work[match.end() :]
            break
        if hit is None:
            continue
        question = question or is_question
        if is_soft:
            soft += weight
        else:
            scores[intent] = min(_SCORE_CAP, scores[intent] + weight)
        if weight > cues.get(intent, (0.0, ""))[0]:
            cues[intent] = (weight, hit.group(0).strip())
    if not soft and _YOU.search(text) and not _DOC_REFERENCE.search(text):
        soft = 1.0
        cues.setdefault(S, (1.0, "you"))
    return scores, cues, soft, question


def intent_scores(query: str) -> dict[Intent, float]:
    """The raw rule score of every intent, chit-chat included (for logs and tuning)."""
    scores, _, soft, _ = _score(_normalize(query))
    scores[S] += soft
    return scores


def classify_by_rules(query: str, *, has_documents: bool) -> RuleVerdict:
    """The rules' best guess for `query`; never fails, never does I/O."""
    text = _normalize(query)
    scores, cues, soft, question = _score(text)
    # Anything beyond "it is a question" that asks for work on documents.
    work_asked = any(scores[i] > 0 for i in (L, R, P)) or scores[Q] > (1.0 if question else 0.0)
    scores[S] += soft + (_CHAT_ONLY_BONUS if soft and not work_asked else 0.0)

    ranked = sorted(_TIE_ORDER, key=lambda i: -scores[i])  # stable: ties keep _TIE_ORDER
    best, runner = ranked[0], ranked[1]
    top, second = scores[best], scores[runner]
    if top < MIN_DECISIVE_SCORE and not work_asked:
        return _fallback(text, has_documents, question=question)

    margin = top - second
    # Weak cues piling up ("方法" + "?") never make the rules sure: one must be real.
    strongest = cues.get(best, (0.0, ""))[0]
    unambiguous = (
        top >= MIN_DECISIVE_SCORE and strongest >= MIN_DECISIVE_SCORE and margin >= AMBIGUITY_MARGIN
    )
    confidence = min(0.95, 0.5 + 0.15 * margin + 0.05 * min(top, 3.0))
    reason = f"matched {cues.get(best, (0, ''))[1]!r} ({best.value})"
    if second > 0 and runner in cues:
        reason += f" over {cues[runner][1]!r} ({runner.value})"
    return RuleVerdict(best, round(confidence, 2), unambiguous, reason)


def _fallback(text: str, has_documents: bool, *, question: bool) -> RuleVerdict:
    """No decisive cue: guess from what the message is and what came with it."""
    if not _CONTENT_CHARS.search(text):
        return RuleVerdict(S, 0.5, False, "no words; chat")
    if has_documents:
        # With documents attached, an unrecognised message is most often about them.
        why = "a question" if question else "no keyword"
        return RuleVerdict(Q, 0.4, False, f"{why}, documents attached")
    if _DOC_REFERENCE.search(text):
        return RuleVerdict(Q, 0.35, False, "mentions a paper, none attached")
    return RuleVerdict(S, 0.45, False, "no task keyword, no documents")
