"""The cue table of the intent rules: which words point at which intent, how strongly.

Each row lists alternatives for one intent; its weight says what a match tells:
3 names the task or its object ("文献综述", "weaknesses", "你是谁"); 2.5 is a
generic task verb ("总结", "summarize") that the object outweighs, so "summarize
the weaknesses" is a review; 2 is telling but shared ("overview", "dataset"); 1 is
weak (a question form, "this paper", a greeting, a bare "compare"). How the rows
are scored is `intent_rules`' business.
"""

from __future__ import annotations

import re

from scholarflow.intents import Intent
from scholarflow.language import HAN_CHAR

__all__ = ["RULE_TABLE", "Row", "alts", "en"]

S, L, R, P, Q = (Intent.SIMPLE_INTERACTION, Intent.LITERATURE_SUMMARY,
                 Intent.REVIEW_GENERATION, Intent.PAPER_REVIEW, Intent.LITERATURE_QA)


def en(words: str) -> str:
    # \b fails between a CJK character and a Latin one ("帮我summarize一下"),
    # so English words are bounded by "no ASCII letter or digit" instead.
    return rf"(?<![a-z0-9])(?:{words})(?![a-z0-9])"


_DOC = r"(?:paper|article|manuscript|submission|work|study|document|report|pdf|draft|preprint)"
Row = tuple[str, Intent, float, str]


def alts(words: str) -> str:
    """A group of whitespace-separated alternatives; `{DOC}` stands for a document noun.

    An alternative with Latin letters and no CJK is English and gets word bounds.
    """
    tokens = words.replace("{DOC}", _DOC).split()
    english = [t for t in tokens if re.search("[a-z]", t) and not HAN_CHAR.search(t)]
    parts = [t for t in tokens if t not in english] + ([en("|".join(english))] if english else [])
    return "(?:" + "|".join(parts) + ")"


def _rule(intent: Intent, weight: float, flags: str, words: str) -> Row:
    return (alts(words), intent, weight, flags)


# Several documents at once: comparing or joining them is a literature review's job.
_PLURAL = alts(r"""这些 那些 这几 那几 [两二三四五六七八九十几多各每][篇份] 多个 多篇 所有
    (?:论文|文章|文献)\s*[a-z0-9]?\s*(?:和|与|跟)\s*[a-z0-9]?\s*(?:论文|文章|文献)
    (?:these|those|both|all|several|multiple|two|three|four|five|the|attached|uploaded)\s+(?:\w+\s+){0,2}(?:papers|studies|articles|works|documents|sources|approaches|methods|models|pdfs|references)
    (?:paper|article|study)\s+[a-z0-9]\s+(?:and|vs\.?|versus)\s+(?:paper|article|study)?\s*[a-z0-9]
    each\s+other one\s+another across""")
# 比较 is also the adverb "rather" (比较好, 比较难): only the verb counts.
_COMPARE = alts(r"""比较(?!好|难|容易|简单|复杂|高|低|大|小|多|少) 对比 异同 共同 共性 相同点
    不同点 分歧 共识 争议 一致 矛盾 冲突 关联 联系 关系 相互 之间 怎么比 比一比 比一下
    compar\w* contrast\w* similarit\w* common\s+themes in\s+common differ\w* (?:dis)?agree\w*
    consensus debates? consistent contradict\w* relate\w* relationships? connections? align\w*
    conflict\w*""")
_JOIN = alts(r"""串起来 串联 串成 结合起来 放在一起 放一起 整合 融合 汇总 together combin\w*
    integrat\w* synthe[sz]\w* connect\w* merg\w*""")
_ANALYSE = alts(r"""分析 讨论 探讨 梳理 识别 analy[sz]\w* discuss\w* identify examine""")


def _near(a: str, b: str, gap: int) -> str:
    return rf"{a}.{{0,{gap}}}?{b}|{b}.{{0,{gap}}}?{a}"


# flags: n = negatable ("不要总结"), m = mask the match from later rules, s = soft
# chit-chat (decides only when nothing asks for work), q = question form.
# Order matters only for masking: compounds come before their parts.
RULE_TABLE: tuple[Row, ...] = (
    # --- compounds whose parts would mislead later rules
    _rule(R, 3, "nm", r"""review\s+of\s+(?:the\s+)?(?:literature|field|research)
        (?:literature|lit\.?|systematic|scoping|narrative|integrative|mini|comprehensive|state[-\s]of[-\s]the[-\s]art)(?:\s+literature)?\s+(?:reviews?|surveys?)
        reviews?\s+(?:article|paper|chapter|section)s?"""),
    _rule(Q, 2, "m", r"""评价指标 评估指标 评价方法 评估方法 评价标准 评测
        how\s+(?:was|were|is|are)\s+(?:\w+\s+){0,3}(?:evaluated|assessed|measured)
        evaluation\s+(?:metrics?|protocol|setup|set|data|criteria)"""),
    _rule(S, 3, "m", r"""介绍一下你自己 上一个问题 再说一遍 重复一遍 你自己
        (?:你|您)?(?:刚才|刚刚|之前|上次|前面)(?:说|讲|回答|问|聊)(?:了|的|过)?(?:什么|啥|些什么)?
        previous\s+(?:answer|question|message|reply) (?:you|i)\s+(?:just\s+)?(?:said|asked|told)
        repeat\s+(?:that|it|yourself) introduce\s+you yourself remember
        earlier(?=\s*(?:[?.!,;:]|$))"""),
    # --- REVIEW_GENERATION
    _rule(R, 3, "n", r"""(?:这个|该|整个|这一)(?:领域|方向) 发展(?:脉络|历程|趋势|方向) 按.{0,6}分类
        未来(?:的)?(?:研究)?方向 写.{0,6}(?:研究)?背景 背景(?:部分|章节) 文献综述 文献回顾 综合分析
        研究现状 研究进展 研究前沿 研究热点 研究路线 技术路线 相关工作 研究空白 研究脉络 分类整理
        各类方法 综述 评述 述评 演变 演进 变迁 展望 趋势 归类
        (?:this|the|that|our|whole|entire)\s+(?:field|research\s+area) state[-\s]of[-\s]the[-\s]art
        research\s+(?:landscape|trends?|gaps?|directions?|frontier) background\s+(?:section|chapter)
        state\s+of\s+(?:the\s+)?(?:research|art|field) open\s+(?:problems|questions|challenges) sota
        future\s+(?:research\s+)?directions over\s+(?:time|the\s+years) annotated\s+bibliography
        schools?\s+of\s+thought related[\s-]+works? recent\s+advances changed?\s+over meta-?analysis
        history\s+of landscape evolution surveys? evolv\w* taxonomy trends?"""),
    (_near(_COMPARE, _PLURAL, 40), R, 3, "n"),
    (_near(_JOIN, _PLURAL, 40), R, 3, "n"),
    _rule(R, 2, "n", r"""综合 整合 汇总 挑战 发展 分类
        synthe[sz]\w* categori[sz]e challenges progress"""),
    # Analysing several papers at once is synthesis, not a question about one.
    (_near(_ANALYSE, _PLURAL, 30), R, 2, "n"),
    _rule(R, 1.5, "", r"""(?:基于|结合|根据|综合|参考)(?:以上|这些|这几|上述|所有)
        (?:based\s+on|according\s+to|using|from|drawing\s+on)\s+the\s+(?:attached|uploaded)
        (?:based\s+on|according\s+to|using|from|drawing\s+on)\s+(?:these|those|all)"""),
    (_COMPARE, R, 1, "n"),
    # --- PAPER_REVIEW
    _rule(P, 3, "n", r"""是否(?:合理|合适|恰当|正确|公平|客观|可信|充分|严谨|靠谱|成立|科学|站得住)
        (?:对|合理|合适|恰当|正确|公平|客观|可信|充分|严谨|靠谱|站得住脚?|成立|科学)(?:吗|么|不|与否)
        (?:做|写|设计|用)得(?:好|不好|不够|对|怎么样|如何|好不好|合适|不[\u4e00-\u9fff]) 问题在哪
        (?:合理|合适|恰当|正确|公平|客观|可信|充分|严谨|科学)性(?:如何|怎么样) 评(?:一下|评|个分|判)
        (?:挑|找|指出|列出|检查).{0,12}(?:错误|问题|毛病|bug|漏洞|不足|错) 有没有.{0,6}(?:问题|错误)
        能(?:不能|否)?(?:发表|发(?!现|布|生|挥|展)|投|中|被接收) (?:明显|严重|潜在)的?(?:问题|错误)
        (?:支撑|支持)(?:它|其|作者)?的?(?:结论|观点|论点|主张) 值得(?:发表|引用|一读|读|看|借鉴)
        创新(?:点|性)(?:怎么样|如何|够|高|强|大|评价|吗) (?:存在|有)(?:什么|哪些)?(?:问题|错误) 评审
        (?:可以|需要|值得|如何|怎么)改进 (?:修改|改进)(?:建议|意见|空间) (?:好|不好|不足)的地方 审稿
        创新(?:点|性)?有多大 改进(?:之处|的地方) 投(?:顶会|期刊|稿) 水(?:不水|吗|文) 学术价值 审一下
        打(?:几|多少)?分 优缺点 说服力 可信度 新颖性 原创性 不对劲 审阅 审查 缺陷 缺点 弱点 不足
        优点 长处 短处 优劣 局限 毛病 漏洞 短板 硬伤 瑕疵 批判 点评 评判 挑刺 找茬 商榷 夸大 拒稿
        被拒 信服 灌水 有错 中稿 接收 评分 评价 评估
        how\s+(?:original|novel|significant|important|convincing|solid|rigorous|sound) shortcomings?
        (?:is|are|was|were)\s+(?:the|their|this|these|its)\s+(?:\w+\s+){0,3}(?:fair|appropriate|correct|justified|sound|valid|convincing|reasonable|sufficient|adequate|rigorous|biased|right|well\s+motivated)
        (?:find|spot|point\s+out|list)\s+(?:\w+\s+){0,2}(?:errors?|mistakes?|problems?|issues?|flaws?)
        (?:problems?|issues?|errors?|mistakes?)\s+(?:with|in)\s+(?:the|this|their|my) weak\s+points?
        (?:could|should|can|would)\s+(?:the\s+authors|they|i|we|it|this)\s+improve pros\s+and\s+cons
        support\w*\s+(?:the\s+|their\s+|its\s+)?(?:[\w']+\s+){0,2}claims? (?:get|be|been)\s+accepted
        gaps?\s+in\s+(?:the|their|its)\s+(?:logic|argument|reasoning) what\s+would\s+you\s+change
        (?:good|bad|strong|weak|solid|decent|great|poor)\s+{DOC} major\s+(?:and\s+minor\s+)?comments
        seems?\s+(?:\w+\s+)?(?:weak|flawed|wrong|off|shaky) (?:for|of|worthy\s+of)\s+publication
        (?:rate|score|grade)\s+(?:this|the|it|my) evaluate\s+(?:the|this|my|whether) weakness(?:es)?
        logical\s+(?:gaps?|flaws?|errors?) improve\s+(?:the|this|my)\s+{DOC} (?:be|been)\s+improved
        evaluation\s+of\s+(?:the|this|my) give\s+it\s+a\s+(?:score|grade) feedback\s+(?:on|for|to)
        room\s+for\s+improvement backed\s+(?:up\s+)?by accept\s+or\s+reject needs?\s+improvement
        peer[-\s]?review\w* tear\s+.{0,20}apart well[-\s]written critical(?:ly)? critici[sz]\w*
        supported\s+by limitations? constructive wrong\s+with poke\s+holes red\s+flags? overclaim\w*
        exaggerat\w* critique\w* publishable reviewer\w* originality overstat\w* unsupported novelty
        unjustified strengths? drawbacks? downsides? referee\w* any\s+good acceptance soundness
        concerns? reject\w* assess\w* hold\s+up unfounded critics? ratings? appraise rigou?r flaws?
        flawed poorly unfair"""),
    _rule(P, 3, "n", r"""review(?:ing)?\s+(?:this|the|my|that|our|their)\s+{DOC}"""),
    # The assistant's opinion of the paper is a judgement of it.
    _rule(P, 2, "n", r"""
        (?:你|您)(?:觉得|认为|怎么看|看来)(?:这篇|这个|该|本|他们|作者|论文|文章|方法|结果|实验|结论|工作)
        do\s+you\s+think\s+(?:this|the|their)
        (?:what\s+do\s+you\s+think|your\s+(?:opinion|view|take|thoughts|impression))\s+(?:of|on|about)\s+(?:this|the|their|my)"""),
    _rule(P, 2, "n", r"""论证
        (?:论文|文章|工作|贡献|方法|结果|结论|研究|设计|实验)(?:的)?.{0,4}(?:重要|显著|新颖|有意义|有价值|好不好|怎么样|如何|行不行|靠谱|够不够|强不强|大不大)
        review(?:ing)? valid(?:ity)? significance trustworthy fair(?:ly)? convincing sufficient
        (?:paper|work|contribution|method|approach|idea|results?)(?:'s)?\s+(?:\w+\s+){0,2}(?:significant|important|novel|original|good|useful|meaningful|impressive)
        meaningful justified rigorous credible reliable adequate worth\w* reviews quality sound
        solid"""),
    # --- LITERATURE_SUMMARY
    _rule(L, 2.5, "n", r"""简单(?:说|讲|介绍|聊) 概[括扩述要况] 总结 小结 概括 摘要 归纳 梳理 提炼
        简述 解读 导读 速览
        (?:central|main|core)\s+(?:thesis|idea|claim|argument|message) boil\s+(?:\w+\s+){0,2}down
        run\s+(?:me\s+)?through sum\s+(?:\w+\s+)?up walk\s+me\s+through in\s+a\s+nutshell distill\w*
        cliff\s*notes big\s+picture summar\w* summer\w* tl;?\s?dr recap\w* synopsis condense outline
        rundown digest gist eli5"""),
    _rule(L, 3, "n", r"""主要.{0,2}(?:讲|说|内容|写|研究|做|解决|提出|关注|探讨|贡献|工作) 来龙去脉
        (?:说|写|做|干)(?:了|的)(?:些|是)?(?:什么|啥) [一两三四五几\d]+\s*(?:句话|个字|字|段) 过一遍
        讲(?:了|的)?(?:些|是)?(?:什么|啥) (?:关键|主要|核心)(?:结论|发现) 快速(?:了解|过|看|读|浏览)
        在(?:做|讲|说|研究)(?:什么|啥) (?:说说|讲讲|聊聊)(?:这|该|本) (?:研究|核心|主要|基本)内容
        解决了?(?:什么|哪些|啥)问题 大概(?:内容|意思|讲|说) 核心(?:观点|思想|内容) 是关于(?:什么|啥)
        说(?:些|的是)?啥 创新点(?:是|有) 主要观点 文章结构 简要介绍 简单介绍 介绍一下 了解一下 大意
        总的来说 梗概 简介 要点 重点 亮点 主旨 大纲 提纲 整体 总体
        in\s+(?:\d+|a\s+few|one|two|three|five)\s+(?:words|sentences|lines|paragraphs|bullets)
        (?:key|main|major|core)\s+(?:points|ideas?|takeaways?|findings|contributions?|message)
        what\s+(?:does|did)\s+(?:this|the|that)\s+{DOC}\s+(?:say|cover|discuss|propose) highlights?
        what(?:'s|\s+does|\s+did)\s+(?:it|this|the\s+\w+|this\s+\w+)\s+say like\s+i'?m\s+(?:five|5)
        (?:key|main|major|core)\s+(?:argument|claims?|results|conclusions) bullet\s*(?:points)?
        break\s+(?:down\s+(?:this|the)|(?:this|the)\s+\w+\s+down) describe\s+(?:this|the)\s+{DOC}
        in\s+(?:short|brief|plain\s+\w+|simple\s+terms) what\b[^.?!,;]{0,40}?\babout\s*(?:[?.!,;]|$)
        what\s+(?:did|do)\s+(?:the\s+authors|they)\s+do description\s+of\s+(?:the|this|each)
        mainly\s+(?:about|say\w*|discuss\w*|cover\w*) tell\s+me\s+about\s+(?:this|the|each)\s+{DOC}
        explain\s+(?:this|the)\s+{DOC} what\s+problem\s+(?:does|did) brief(?:ly)?\s+\w+ takeaways?
        short\s+version high[-\s]level overview"""),
    # Sections listed together ("背景、方法和结论") ask for the paper's outline.
    _rule(L, 2, "n", r"""笔记
        (?:背景|目的|动机|方法|结论|结果|贡献|发现)(?:、|和|与|及|,)\s*(?:背景|目的|动机|方法|结论|结果|贡献|发现)
        abstract overall notes
        (?:background|motivation|objectives?|goals?|methods?|methodology|results|findings|conclusions?|contributions?),?\s+(?:and\s+)?(?:background|motivation|objectives?|goals?|methods?|methodology|results|findings|conclusions?|contributions?)"""),
    # --- SIMPLE_INTERACTION: the assistant itself, the conversation, everyday life
    _rule(S, 3, "", r"""(?:怎么|如何)(?:使用|用)(?:你|这个(?:助手|工具|系统|平台|机器人)) 你叫什么
        你会(?!.{0,12}(?:论文|文章|文献|文档|pdf|总结|综述|摘要|概括|评审|审稿|比较|对比|分析))\S{1,6}[吗么]
        (?:用|以)(?:中文|英文|英语)(?:回答|回复|交流) (?:可以|能)帮(?:我|你)?(?:做|干)(?:什么|啥)
        (?:你|您)(?:可以|能|会)(?:联网|上网|搜索) 你(?:能|可以|会)(?:做|干)(?:什么|啥|嘛) 你的名字
        你.{0,8}(?:大模型|模型|版本|gpt|llm) (?:支持|上传|接受|传).{0,6}格式 这个(?:助手|机器人|ai)
        你是(?:什么|哪个|机器人|人|ai) 你(?:有|都有)(?:哪些|什么)功能 文件(?:的)?(?:什么|哪些)格式
        你(?:是)?(?:做什么|干什么)的 谁(?:开发|创造|训练|做)的你 你(?:会|能)(?:说|讲) 以后(?:都)?用
        我(?:应该|该不该) 是(?:chat)?gpt吗 你会(?:什么|啥) 聊(?:聊)?天 哪家公司 你觉得我 你是谁 注册
        你好吗 账号 登录 收费 免费 会员 陪我
        how\s+(?:do|can|should)\s+i\s+use\s+(?:you|this\s+(?:tool|assistant|app|system|bot)) pricing
        what\s+can\s+(?:you|u|it|this\s+(?:thing|tool|bot|app|assistant))\s+do who\s+are\s+(?:you|u)
        (?:answer|reply|respond|talk)\s+in\s+(?:chinese|english) (?:things|kinds)\s+can\s+you
        what(?:'?s|\s+is)\s+(?:your|ur)\s+(?:name|purpose|job) are\s+you\s+(?:chat)?gpt\w* sign\s+up
        are\s+you\s+(?:a\s+)?(?:bot|robot|human|an\s+ai|real) file\s+(?:formats?|types?) should\s+i
        (?:do|can)\s+you\s+(?:speak|understand|browse|access) (?:my|an|your)\s+account what'?s\s+up
        who\s+(?:made|built|created|trained)\s+(?:you|this) help\s+me\s+with\s*\??$ what\s+are\s+you
        this\s+(?:assistant|bot|chatbot|ai|service|app) (?:powers?|runs?|behind|drives?)\s+(?:you|u)
        (?:can|could)\s+you\s+help(?:\s+me)?\s*[?.!]*$ how(?:'s|\s+is)\s+(?:it\s+going|your\s+day)
        (?:which|what)\s+(?:model|llm)\s+are\s+you (?:chat|talk)\s+(?:for|with\s+me|a\s+bit)
        languages?\s+do\s+you are\s+you\s+able how\s+are\s+you from\s+now\s+on subscription
        log\s*in"""),
    # Everyday topics are also research topics (fake news, music generation, stock
    # prediction), so they are soft: they decide only when nothing asks for work.
    _rule(S, 2, "s", r"""\d+\s*[-+*/×÷]\s*\d+\s*(?:=|等于)?\s*(?:几|多少|\?) 压力(?:好|很|太)?大
        写(?:一)?(?:封|首|个)?(?:信|诗|故事|文案) 推荐(?:一)?(?:本|部|首|个) 写(?:一)?首诗 讲个故事
        星期几 世界上 吃什么 喝什么 有点累 等于几 天气 笑话 电影 音乐 歌曲 新闻 几点 几号 日期 今天
        明天 昨天 周末 首都 总统 国家 聚餐 股票 菜谱 做饭 美食 餐厅 旅游 旅行 咖啡 去哪 好玩 游戏
        心情 无聊 开心 难过 难受 伤心 郁闷 焦虑 失恋 累了 休息 睡觉 饿了 邮件 请假
        recommend\s+(?:a|some)\s+(?:good\s+)?(?:books?|movies?|songs?|places?) meaning\s+of\s+life
        \d+\s*(?:times|plus|minus|divided\s+by|multiplied\s+by)\s*\d+ translate\s+['\"] date\s+today
        learn\s+(?:to|python|english|programming) something\s+(?:interesting|fun|funny) capital\s+of
        in\s+the\s+world best\s+way\s+to restaurants? what\s+time what\s+day basketball yesterday
        president breakfast tomorrow recipes? football stressed weather movies? weekend country poem
        stocks? cook\w* anxious e-?mail jokes? films? songs? coffee dinner travel soccer games? news
        lonely letter music today lunch bored happy tired tea sad"""),
    _rule(S, 1, "s", r"""(?:老师|大家|同学|各位|师兄|师姐|朋友)好 ^[嗯哦噢啊额呃唔]+ 有人(?:吗|在吗)
        ^早[呀啊安]?$ 哈[喽啰咯罗] 就到这里 不好意思 明白了? 早上好 下午好 晚上好 在不在 知道了 你好
        了解了 有意思 对不起 您好 早安 晚安 在吗 感谢 辛苦 再见 再聊 下次 拜拜 好的 好吧 懂了 收到
        哈哈 呵呵 厉害 太棒 真棒 不错 抱歉 打扰 嗨 谢 嘿
        good\s+(?:morning|afternoon|evening|night) any(?:one|body)\s+(?:there|here|home) well\s+done
        thank\s+(?:you|u) talk\s+to\s+you makes\s+sense appreciate\w* understood good\s+job got\s+it
        greetings see\s+you ok(?:ay)? my\s+bad thanks? goodbye awesome haha\w* cheers hello hallo hi
        nihao thn?x thanx great funny sorry hiya cool nice h+m+ u+m+ hey tks bye lol wow yo ty
        oh"""),
    # --- LITERATURE_QA: research details; then doc references and question form
    _rule(Q, 2, "", r"""(?:指的是|表示|代表)(?:什么|啥) 第.{1,3}(?:节|章|部分|段) 实验(?!室) 表\s*\d
        损失函数 参考文献 对比方法 研究对象 通讯作者 什么意思 图\s*\d 数据集 数据库 学习率 批大小
        优化器 准确率 召回率 验证集 编码器 解码器 注意力 缺失值 复杂度 预训练 对照组 超参 参数 精度
        指标 分数 得分 基线 消融 样本 训练 测试 函数 公式 方程 定理 证明 算法 架构 机制 显卡 附录
        机构 单位 发表 引用 代码 开源 变量 符号 维度 取值 微调 受试 人群 问卷 统计 显著 层数 几层
        含义 定义 是指
        confidence\s+intervals? fig(?:ure)?\.?\s*\d+ hyper-?parameters? learning\s+rate batch\s+size
        control\s+group section\s*\d+ sample\s+size optimi[sz]er experiments? architecture datasets?
        participants tokeni[sz]er pre-?trained fine-?tun\w* refers?\s+to benchmarks? table\s*\d+ auc
        affiliation define[sd]? dimensions? data\s+set databases? baselines? ablations? citations?
        p-?values? parameters complexity definition precision algorithm published cite[sd]? accuracy
        mechanism labell?ed mean\s+by metrics? function equation appendix hardware training epochs?
        dropout layers? encoder decoder formula theorem trained scores? recall reward cohort github
        rouge lemma proof gpus? bleu loss eq\. code data axis f1"""),
    _rule(Q, 1, "", r"""论文[里中] 文章[里中] 模型 方法 结果 数据 性能 效果 表现 作者 文中 本文 这篇
        该文 他们
        in\s+the\s+(?:paper|article|study) (?:the|this)\s+{DOC} performance approach results? method
        authors? model their they"""),
    _rule(Q, 1, "q", r"""几[个张层次种年天轮块] 为什么 有没有 什么 多少 怎么 怎样 如何 为何 是否 啥
        具体 解释 哪 吗 呢 \?
        is\s+there explain which where whose what when does how why who did"""),
)
