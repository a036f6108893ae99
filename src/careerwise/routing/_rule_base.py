"""The parts every rule table shares: the ``Rule`` record, the regex helper, and the word lists.

A rule is a regular expression over the NFKC-normalised message with an id, an intent, the examples it
must match and an optional veto (``exclude``). The word lists here are shared because the same words
mean the same thing wherever they appear: the small-talk tokens build the greeting rules, the document
names the resume rules, and the "words used about something else" (a job interview, someone else's
appointment or counselling, a word of work) are both the rule tables' vetoes and, through
``rules.vetoed``, the bars that stop layer 2 and the LLM from being sure of booking or off-topic.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from careerwise.routing._text import units


@dataclass(frozen=True)
class Rule:
    id: str
    intent: str
    pattern: re.Pattern[str]
    description: str
    examples: tuple[str, ...]
    max_units: int | None = None  # only short messages (a greeting inside a long question is not one)
    min_chars: int | None = None  # only long messages (a pasted resume)
    exclude: re.Pattern[str] | None = None  # a match here vetoes the rule
    # A veto binds the whole message unless its last clause, where a long message states its request,
    # matches the rule and this pattern with no veto word of its own: a story about failed interviews
    # that ends «請問一對一諮詢要怎麼報名？» still books a session (None: the veto always binds).
    final_request: re.Pattern[str] | None = None

    def applies(self, text: str) -> bool:
        if self.max_units is not None and units(text) > self.max_units:
            return False
        if self.min_chars is not None and len(text) < self.min_chars:
            return False
        if self.exclude is not None and self.exclude.search(text):
            return self._last_clause_asks(text)
        return self.pattern.search(text) is not None

    def _last_clause_asks(self, text: str) -> bool:
        if self.final_request is None or self.exclude is None:
            return False
        clauses = [part for part in CLAUSE_END.split(text) if part.strip()]
        if len(clauses) < 2:
            return False
        last = clauses[-1]
        return (
            self.final_request.search(last) is not None
            and self.pattern.search(last) is not None
            and self.exclude.search(last) is None
        )


def _r(p: str) -> re.Pattern[str]:
    return re.compile(p, re.I | re.S)


# where a clause ends: a long message states its request in its last clause
CLAUSE_END = re.compile(r"[。！？!?\n，,；;]+|\.(?:\s|$)")
# the request names one of Summer's own sessions: 一對一諮詢, "a session with you"
SUMMERS_SESSION = _r(
    r"一對一|1對1|(?:跟|和|找)(?:妳|你|summer)(?:約|諮詢|談)|(?:預約|報名|約)(?:一下|一次)?(?:職涯)?諮詢"
    r"|\b(?:session|call|consultation|coaching)s? with (?:you|u|summer)\b|\b(?:your|a coaching) (?:session|consultation)s?\b"
)


# --- small talk: a message made only of these tokens (and fillers) is a greeting ----------------------

_SEP = r"[\s,.!?~:;、。…)(\-]*"
_FILLER = (
    r"summer|老師|你|妳|您|啦|喔|哦|囉|呀|啊|耶|唷|嘿|嗎|der|so much|a lot|again|there|all|everyone|"
    r"for (?:the|your) (?:advice|help|time|reply)|for helping|:\)|:d|\^\^|[🙂😊😀😄🙏👍❤️]"
)
_HELLO = (
    r"你好|您好|妳好|哈囉|哈摟|哈嘍|嗨+|安安|早安|午安|早|hi+|hello+|helo|hey+|hiya|yo|howdy|sup|"
    r"what'?s up|wassup|good (?:morning|afternoon|evening)|morning|gm"
)
_HOW = (
    r"(?:你|妳)?(?:最近|今天)?(?:還)?好嗎|(?:你|妳)?在嗎|有人在嗎|過得(?:好|如何)嗎?|how are (?:you|u)|how'?re you|hru|"
    r"how'?s it going|how'?s your day|anyone (?:here|there)|hope (?:you'?re|you are) (?:well|good|doing well)|"
    r"(?:初次見面|第一次(?:來|用)(?:這裡|這個)?)|(?:請|還請)?多多?指教|(?:很)?高興認識(?:你|妳)|nice to meet (?:you|u)|"
    r"(?:今天)?(?:跟你|跟妳|和你|和妳)?聊(?:得|的)(?:很)?(?:開心|愉快)"
)
_THANKS = r"謝謝|謝啦|謝了|感謝|多謝|感恩|3q|thx|thanks|thank (?:you|u)|ty|tks|many thanks|cheers"
_BYE = (
    r"掰掰|掰|拜拜|bye+|bye ?bye|goodbye|再見|881|下次見|(?:下次|明天|改天)(?:再)?(?:聊|見)|回頭聊|先這樣|see (?:you|ya)|later|good ?night|gn|晚安|"
    r"have a (?:nice|good|great) (?:day|night|weekend)"
)
_ACK = r"ok(?:ay)?|k|好的|好喔|好哦|好der|好滴|好唷|好|收到|了解|瞭解|知道了|懂了|明白了?|讚|cool|nice|great|got it|noted|sure|哈+|(?:ha)+|lol"
_ABOUT = (
    r"(?:你|妳)(?:是誰|哪位|叫什麼名字?|是(?:ai|機器人|真人|chatgpt|gpt)嗎?|(?:能|可以|會)(?:幫我)?(?:做)?(?:什麼|啥|哪些事))|"
    r"who are (?:you|u)|what are you|what can (?:you|u) do|what do you do|are (?:you|u) (?:a )?(?:bot|robot|human|real|ai|chatgpt)|"
    # who built Summer, and personal questions to her (languages, likes): still small talk
    r"who (?:made|built|created|developed|trained|designed) (?:you|u|this(?: bot| chatbot| thing| app)?)|"
    r"(?:你|妳)們?是(?:哪家|哪間|哪個|什麼|誰)(?:公司|團隊|單位|人)?(?:做|開發|寫|設計|訓練)(?:出來)?的|"
    r"(?:誰|哪家公司|哪間公司)(?:做|開發|寫|設計)(?:了|出)?(?:你|妳)|"
    r"(?:你|妳)(?:會|懂|能)(?:說|講|聽)?(?:台語|臺語|英文|英語|日文|日語|中文|客語|客家話|韓文|粵語|廣東話)嗎?|"
    r"(?:你|妳)(?:(?:平常|平時|都)?(?:喜歡|愛)|平常|平時)(?:喝|吃|看|聽|玩)[^\s,，。?？!！]{1,6}嗎?|"
    # 「妳平常都聽什麼音樂」, 「妳喜歡貓還是狗」
    r"(?:你|妳)(?:平常|平時)?都?(?:聽|看|吃|喝|玩)什麼(?:音樂|歌|電影|劇|書|東西)?|"
    r"(?:你|妳)(?:比較)?喜歡(?:貓|狗|咖啡|茶|夏天|冬天|海邊|山上)還是(?:貓|狗|咖啡|茶|夏天|冬天|海邊|山上)|"
    r"do (?:you|u) (?:like|drink|eat|watch|speak) [a-z ]{2,20}"
)
# a kind word after the thanks: 「thx 妳人真好」
_PRAISE = (
    r"人(?:真|超|很|太)好|最棒了?|真的?(?:很|超|好)?(?:棒|厲害)|(?:很|超|好)(?:棒|厲害)"
    r"|(?:you(?:'re| are)|ur) (?:the best|awesome|amazing)|you rock"
)
_ANY = f"{_HELLO}|{_HOW}|{_THANKS}|{_BYE}|{_ACK}|{_ABOUT}|{_PRAISE}|{_FILLER}"


def _smalltalk(first: str) -> re.Pattern[str]:
    """The whole message: optional fillers, a token of kind ``first``, then any small-talk tokens."""
    tail = f"(?:{_SEP}(?:{_ANY})(?![a-z]))*"
    return _r(f"^(?:(?:欸+|誒|那|那就|{_FILLER}){_SEP})*(?:{first})(?![a-z]){tail}{_SEP}$")


# --- documents and request verbs --------------------------------------------------------------------

_DOC_ZH = (
    r"履歷|履力|履厲|履立|簡歷|(?<![a-z])(?:cv|resume)(?![a-z])|自傳|自我推薦信|自薦信|求職信|轉職信|cover ?letter"
    r"|linkedin\s?的?\s?(?:about|簡介|摘要|自介|headline|summary|profile|個人檔案|關於我)"
    # a job site's self-introduction: 「104 的自我介紹」, 「一段自我介紹要放在 104 上」
    r"|(?:104|1111|518|yourator|cake ?resume)\s?(?:上的|上|的)?\s?(?:自我介紹|自介|簡介)"
    r"|(?:自我介紹|自介)[^。，,]{0,6}(?:104|1111|518|yourator|cake ?resume)"
)
# a job-site profile counts as the user's document («rewrite my linkedin summary»)
_DOC_EN = r"resume|résumé|resme|resum|cv|cover letter|linkedin (?:summary|profile|headline|about)"

# --- words used about something else: vetoes for the booking rules --------------------------------------

# a personal service or a meal booked (a haircut, nails, a massage, a table for dinner): an errand
_ERRAND_ZH = (
    r"(?:剪|燙|染|洗|護)頭?髮|洗頭|髮廊|美髮|美容院|美甲|指甲|光療|美睫|按摩|洗牙|訂位|燒肉|火鍋|吃到飽|牛排|壽司|"
    r"omakase|居酒屋|包廂|演唱會|音樂會|電影院|門票"
    # a clinic's department: 「幫我約下週三晚上的皮膚科」
    r"|(?:眼|牙|皮膚|耳鼻喉|骨|婦產|小兒|家醫|復健|身心|精神)科"
)

# other people's resumes in the user's hands: screening applicants at work, helping at someone's request
# (「主管叫我幫忙篩新人的履歷」, "my manager asked me to review the resumes"): a question about work
_OTHERS_RESUMES = (
    r"(?:叫|要|請|找|拜託)我(?:去)?幫|(?:幫忙|幫|負責|我要|要我|我在)(?:篩|過濾|審)"
    r"|(?:新人|應徵者|求職者|候選人|面試者|應屆生們|部屬|下屬|學弟妹|別人|其他人|大家)的?(?:履歷|簡歷|cv|自傳)"
    # someone else's by a pronoun or a person named before it (他的履歷, 實習生的履歷), or one the user is
    # to write for someone else (幫海綿寶寶寫一份搞笑履歷; 幫我 and 幫忙 are the user's own request)
    r"|(?:他|她|他們|她們|實習生|學生|員工|同事|朋友|男友|女友|老公|老婆|另一半|兒子|女兒|弟弟|妹妹|哥哥|姊姊|姐姐)"
    r"的(?:履歷|簡歷|cv|自傳|求職信)"
    r"|幫(?!我|忙|妳|你)[^。，,?？\s]{1,8}寫(?:一份|一封|個)?[^。，,?？]{0,6}(?:履歷|簡歷|自傳|求職信)"
    r"|\b(?:screen(?:ing)?|shortlist(?:ing)?) (?:the |these |all the |incoming |new )?(?:resumes|cvs|"
    r"applicants|candidates|applications)\b|\b(?:candidates?|applicants?|new hires?|interns?|"
    r"students?|friends?|coworkers?|colleagues?)'?s? (?:resumes?|cvs?|cover letters?)\b"
    r"|\basked me to (?:review|check|look (?:at|over|through)|go through|read)\b"
)
# a job interview, any round (面試, 二面, 複試, 終面 …): its time slot or its date is a career question
_INTERVIEW_ZH = r"(?<!模擬)面試|[一二三四五終初複]面|複試|初試|筆試|口試|面談(?!.{0,4}(?:summer|妳|你))"
# booking for someone or something else: the boss's meeting room, a client visit, a clinic, a restaurant
_OTHERS_BOOKING_ZH = (
    r"(?:幫|替|給)(?:我的)?(?:主管|老闆|長官|客戶|同事|他|她|別人|家人|媽媽|爸爸|老公|老婆|小孩)"
    r"|(?:預約|約)(?:了)?(?:會議室|拜訪|場地|餐廳|門診|掛號|醫生|牙醫|會議|客戶|訪談|參訪)"
    r"|(?:會議室|門診|餐廳|牙醫|健身房|醫院|診所|(?<!履歷|簡歷|履力|履立)健檢|體檢|看診)"
    # a personal service or a meal: 剪頭髮, 美甲, 燒肉 (「我想剪頭髮 幫我約週日下午」)
    rf"|{_ERRAND_ZH}"
    # a family member or a client booking for themselves: 「我媽要預約…」, 「客人臨時取消預約」
    r"|我的?(?:媽|爸|妹|弟|姊|姐|哥|老公|老婆|男友|女友|兒子|女兒)(?:媽|爸)?(?:要|想|在|說要)(?:預約|約)"
    r"|(?:客人|客戶|個案|學員|病人)[^。，,]{0,6}(?:取消|預約|改期|改時間|約)"
    # a workplace one-to-one: 「跟主管的一對一改到週五」
    r"|(?:主管|老闆|經理|部屬|下屬|同事|組員)[^。，,]{0,4}(?:一對一|1對1|1:1)"
)
# someone else asking the user (「主管問我你禮拜六有空嗎」, 「HR 問我怎麼約你」): their question, not a booking
_ASKED_BY_OTHERS_ZH = r"(?:hr|人資|主管|老闆|長官|客戶|同事|獵頭|面試官|朋友|他|她)[^。，,]{0,6}問(?:我|說)"
# counselling that is not Summer's: a counsellor as a job, a lawyer, the labour office, an employer's
# counselling programme (EAP)
_SOMEONE_ELSES_COUNSELLING = (
    r"諮詢師|心理諮商|心理諮詢|法律諮詢|律師|勞工局|就業服務|就服站|員工|公司(?:的|有|提供)|eap|協助方案"
    # a school's careers office
    r"|學校|校內|職涯中心|就業輔導|輔導室|輔導中心|學生諮商"
)
# English: a job interview (a mock interview with Summer is hers), or an appointment for someone else
_OTHERS_EN = (
    r"(?<!mock )\binterviews?\b|\bphone screen|\b(?:first|second|third|final)[- ]round\b"
    r"|\bfor (?:my|his|her|their|our|the) (?:boss|manager|clients?|customers?|team|patients?|kids?|son|daughter)\b"
    r"|\b(?:meeting|conference) rooms?\b|\b(?:dentist|doctor|haircut|salon|restaurant)\b|\bskip[- ]level\b"
)

# a question about code itself (a layout, a framework's hook, a language construct), not about a job
_CODE = (
    r"\bcenter (?:a|the) div\b|\b(?:css|html) (?:grid|flexbox|selector)s?\b|\buse(?:effect|state|memo)\b"
    r"|\bre-?render(?:s|ing)?\b|\babstract class\b|\bgit (?:rebase|merge|stash|cherry-pick)\b|\bsegfault\b"
    r"|\bnull ?pointer\b|\bundefined is not\b"
)

# any word of work or careers vetoes the off-topic rules: a career question wins over what else it asks
_CAREER_WORDS = (
    r"工作|職|面試|履歷|簡歷|自傳|薪|老闆|主管|同事|公司|轉行|求職|應徵|上班|下班|加班|升遷|產業|行業|實習|"
    r"諮詢|工程師|年資|資遣|裁員|勞基法|請假|病假|特休|事假|產假|育嬰假|部門|尾牙|春酒|團建|員工旅遊|"
    r"\b(?:jobs?|careers?|interview(?:s|ers?)?|resumes?|cv|salary|salaries|pay|boss|manager|coworkers?|colleagues?|"
    r"company|work|working|hire|hired|hiring|promotion|linkedin|recruiters?|offers?|quit|layoffs?|laid off|"
    r"employer|office|team|engineer|developer|coaching|session|consultation|sick leave|pto|day off|"
    r"phone screens?|screening|onsite|take-home)\b"
)
