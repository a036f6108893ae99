"""Layer 1: free, deterministic rules, each with an id, in Traditional Chinese and English.

The first rule that matches decides. Order is the mixed-intent policy: an explicit booking request wins
over a resume request, which wins over a career question; a greeting rule only matches a message that
is *nothing but* small talk (「你好，我想問怎麼談薪水」 is a career question). Every rule carries the
examples it must match; the tests run them, and docs/routing.md lists the ids.

Rules are precise, not complete: what they miss goes to the embedding layer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from careerwise.routing._text import normalise, units


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

    def applies(self, text: str) -> bool:
        if self.max_units is not None and units(text) > self.max_units:
            return False
        if self.min_chars is not None and len(text) < self.min_chars:
            return False
        if self.exclude is not None and self.exclude.search(text):
            return False
        return self.pattern.search(text) is not None


def _r(p: str) -> re.Pattern[str]:
    return re.compile(p, re.I | re.S)


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
    r"掰掰|掰|拜拜|bye+|bye ?bye|goodbye|再見|881|下次見|先這樣|see (?:you|ya)|later|good ?night|gn|晚安|"
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
    r"do (?:you|u) (?:like|drink|eat|watch|speak) [a-z ]{2,20}"
)
_ANY = f"{_HELLO}|{_HOW}|{_THANKS}|{_BYE}|{_ACK}|{_ABOUT}|{_FILLER}"


def _smalltalk(first: str) -> re.Pattern[str]:
    """The whole message: optional fillers, a token of kind ``first``, then any small-talk tokens."""
    tail = f"(?:{_SEP}(?:{_ANY})(?![a-z]))*"
    return _r(f"^(?:(?:欸+|誒|{_FILLER}){_SEP})*(?:{first})(?![a-z]){tail}{_SEP}$")


# --- documents and request verbs --------------------------------------------------------------------

_DOC_ZH = r"履歷|履力|履厲|簡歷|cv|resume|自傳|自我推薦信|自薦信|求職信|cover ?letter"
# a job-site profile counts as the user's document («rewrite my linkedin summary»)
_DOC_EN = r"resume|résumé|resme|resum|cv|cover letter|linkedin (?:summary|profile|headline|about)"

# --- words used about something else: vetoes for the booking rules --------------------------------------

# a job interview, any round (面試, 二面, 複試, 終面 …): its time slot or its date is a career question
_INTERVIEW_ZH = r"(?<!模擬)面試|[一二三四五終初複]面|複試|初試|筆試|口試|面談(?!.{0,4}(?:summer|妳|你))"
# booking for someone or something else: the boss's meeting room, a client visit, a clinic, a restaurant
_OTHERS_BOOKING_ZH = (
    r"(?:幫|替|給)(?:我的)?(?:主管|老闆|長官|客戶|同事|他|她|別人|家人|媽媽|爸爸|老公|老婆|小孩)"
    r"|(?:預約|約)(?:了)?(?:會議室|拜訪|場地|餐廳|門診|掛號|醫生|牙醫|會議|客戶|訪談|參訪)"
    r"|(?:會議室|門診|餐廳|牙醫|健身房)"
)
# counselling that is not Summer's: a counsellor as a job, a lawyer, the labour office, an employer's
# counselling programme (EAP)
_SOMEONE_ELSES_COUNSELLING = (
    r"諮詢師|心理諮商|心理諮詢|法律諮詢|律師|勞工局|就業服務|就服站|員工|公司(?:的|有|提供)|eap|協助方案"
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
    r"諮詢|工程師|年資|資遣|裁員|勞基法|請假|病假|特休|事假|產假|育嬰假|"
    r"\b(?:jobs?|careers?|interview(?:s|ers?)?|resumes?|cv|salary|salaries|pay|boss|manager|coworkers?|colleagues?|"
    r"company|work|working|hire|hired|hiring|promotion|linkedin|recruiters?|offers?|quit|layoffs?|laid off|"
    r"employer|office|team|engineer|developer|coaching|session|consultation|sick leave|pto|day off)\b"
)

RULES: tuple[Rule, ...] = (
    # booking first: an explicit request to book is an action, whatever else the message asks
    Rule(
        "booking.zh.reserve",
        "booking",
        _r(
            r"預[約越]|(?:^|我|想|要|以|能|麼|何|跟妳|跟你|和妳|和你)約(?:個|一個|一下)?(?:時間|諮詢|一對一|1對1|面談)"
            r"|可以約(?:嗎|\?)|(?:做|約|報名|安排)(?:一下)?(?:下週的)?(?:職涯)?(?:諮詢|一對一|1對1)"
        ),
        "asks to book a consultation (預約, 約一對一, 報名諮詢)",
        ("我想預約諮詢", "想約一對一", "可以預越嗎", "下週三下午可以約嗎", "欸想約諮詢 怎麼弄"),
        # booking for someone else or something else (a boss's meeting room, a client visit, a clinic,
        # a job interview) is a workplace question, not a session with Summer
        exclude=_r(rf"{_OTHERS_BOOKING_ZH}|{_INTERVIEW_ZH}"),
    ),
    Rule(
        "booking.zh.change",
        "booking",
        # 取銷: the usual typo of 取消
        _r(
            r"取[消銷][^，,。?？]{0,6}(?:預約|諮詢)|改期|改時間|換時段|(?:諮詢|預約).{0,8}(?:延後|改期|改時間|取[消銷])"
        ),
        "changes or cancels a booking",
        ("取消我的諮詢", "可以改期嗎", "明天的諮詢可以延後嗎", "明天的諮詢想取銷"),
        # a job interview's date (面試, 二面, 複試 …), a membership or a subscription is not a session
        exclude=_r(rf"{_INTERVIEW_ZH}|{_OTHERS_BOOKING_ZH}|會員|訂閱|健身房"),
    ),
    Rule(
        "booking.zh.price",
        "booking",
        _r(
            r"(?:諮詢|一對一|1對1|面談|服務)(?:的)?(?:費用|收費|價格|價錢|多少錢|怎麼收費|怎麼算)"
            # 「一對一的方式跟費用」: the session's terms named together
            r"|(?:一對一|1對1)[^，,。?？]{1,6}(?:費用|收費|價格|價錢|多少錢)"
            r"|(?:費用|收費|價格|價錢).{0,4}(?:諮詢|一對一)"
        ),
        "asks what a consultation costs",
        ("諮詢費用多少", "一對一諮詢怎麼收費？"),
        exclude=_r(_SOMEONE_ELSES_COUNSELLING),
    ),
    Rule(
        "booking.zh.payment",
        "booking",
        _r(r"付款|刷卡|退費|退款|退錢|學生優惠|學生價|學生方案|轉帳|匯款|收據|發票"),
        "asks about paying for a session: payment, refunds, discounts (short messages only)",
        ("付款可以刷卡嗎", "有學生優惠嗎", "沒辦法去的話可以退錢嗎", "諮詢可以開發票嗎"),
        max_units=20,
        # money that is not a session's: pay, the employer's or a client's invoices, insurance, shopping
        exclude=_r(
            r"薪|公司|客戶|廠商|老闆|勞保|健保|勞退|稅|房租|學費|保險|訂單|網購|蝦皮|會員|訂閱|健身房|軟體"
        ),
    ),
    Rule(
        "booking.zh.session",
        "booking",
        _r(
            r"諮詢(?:的)?(?:時候|時|前|當天|那天|過程中?)[^。！!]{0,14}(?:帶|準備|需要|要|可以|能|會)"
            r"|(?:諮詢|跟(?:妳|你|summer)的?一對一)[^。！!，,]{0,6}(?:線上|視訊|實體|面對面|電話|zoom|meet|見面)"
            r"|諮詢(?:一次|一堂|每次)?(?:大概|通常|總共)?(?:要|是|會)?(?:多久|多長|幾分鐘|幾個?小時)"
            r"|(?:諮詢|一對一|1對1)[^。！!，,]{0,5}(?:方案|價目|套票|套裝|優惠)"
        ),
        "asks about the sessions themselves: what to bring, format, length, plans (before the resume "
        "rules: 「諮詢的時候可以帶履歷嗎」 is a question about a session)",
        (
            "諮詢當天需要準備什麼資料",
            "諮詢是線上還是實體",
            "諮詢一次大概多久",
            "一對一有沒有優惠方案",
            "諮詢時可以順便帶作品集和履歷給妳看嗎",
        ),
        # someone else's counselling (a counsellor as a job, a lawyer, the labour office, an employer's
        # counselling programme) is career
        exclude=_r(_SOMEONE_ELSES_COUNSELLING),
    ),
    Rule(
        "booking.zh.slot",
        "booking",
        _r(
            r"(?:summer|妳|你|老師)\s*(?:這週|下週|週末|明天|今天|哪天|什麼時候|何時)?(?:有空|有時間)"
            r"|(?:還有|有沒有|有)(?:週末|平日|晚上|下週|這週)?的?(?:時段|名額|空檔|空位)"
        ),
        "asks when Summer is free",
        ("Summer 這週有空嗎", "還有週末的時段嗎"),
        # an interview's time slot, a job's or a course's openings; "do you have time to look at my
        # resume" asks for a review (the resume rules), not for a slot
        exclude=_r(rf"{_INTERVIEW_ZH}|職缺|公司|實習|徵才|招募|課程|研究所|考試|(?:有空|有時間)(?:幫|看)"),
    ),
    Rule(
        "booking.en.reserve",
        "booking",
        _r(
            r"\b(?:book|schedule|reserve|arrange|set up|sign up for)\b.{0,30}\b(?:sessions?|consultations?|"
            r"coaching|appointments?|1[-: ]?on[-: ]?1|one[- ]on[- ]one|1:1|slots?|mock interviews?)\b"
            r"|\b(?:book|schedule)\b.{0,15}\b(?:call|meeting|time|chat)\b.{0,10}\bwith (?:you|summer)\b"
            r"|\bbook (?:a|an) (?:call|session)\b|\b(?:book|squeeze|fit|pencil) me in\b|\bput me down for\b"
        ),
        "asks to book a session",
        (
            "book a session",
            "I want to book a consultation",
            "how do I book a call with you",
            "can you pencil me in for thursday morning",
        ),
        # a 1:1 that the user's manager, HR or a recruiter sets up, or booking for someone else (clients,
        # a meeting room), is a workplace question (career); so is a job interview (not a mock one)
        exclude=_r(
            rf"\b(?:manager|boss|supervisor|team lead|hr|recruiter|hiring manager|interviewer)\b|{_OTHERS_EN}"
        ),
    ),
    Rule(
        "booking.en.change",
        "booking",
        _r(
            # with the usual typos of reschedule («reshedule», «resceduel») and cancel («cancle»)
            r"\b(?:re-?s[ck]?h?ed[a-z]{0,5}|cancel|cancle|move|postpone)\b.{0,25}\b(?:booking|appointment|"
            r"sess?ion|consultation|slot)s?\b|\b(?:booked|reserved) (?:a|my) (?:slot|session)\b"
            # the whole message: «can I reschedule?» can only be about the session with Summer
            r"|^(?:hi |hey |sorry,? )?(?:can|could|may) (?:i|we) (?:re-?s[ck]?h?ed[a-z]{0,5}|cancel)\W*$"
        ),
        "changes or cancels a booking",
        ("can I reschedule my appointment to friday", "cancel my booking please", "pls reshedule my session"),
        exclude=_r(
            rf"{_OTHERS_EN}|\b(?:membership|subscription|gym|flight|hotel|restaurant|table)\b"
            r"|\b(?:boss|manager|supervisor|clients?|customers?|coworkers?|colleagues?|team lead|hr|recruiter)\b"
        ),
    ),
    Rule(
        "booking.en.price",
        "booking",
        _r(
            r"\b(?:how much|price|pricing|prices|cost|costs|fee|fees|rates?|charge)\b.{0,30}\b(?:sessions?|"
            r"consultations?|coaching|appointments?|1[-:]on[-:]1)\b|\b(?:session|consultation|coaching)s?\b"
            r".{0,20}\b(?:cost|price|fee)s?\b|\brefund policy\b"
            r"|\bwhat (?:are|r) your (?:rates|prices|fees)\b|\byour (?:rates|pricing|price list|fees)\b"
            r"|\bhow much do (?:you|u|summer) charge\b|\bstudent (?:price|pricing|discount|rate)s?\b"
        ),
        "asks what a session costs",
        (
            "how much is a session?",
            "how much do you charge for career coaching",
            "how much do u charge",
            "is there a student discount",
        ),
        # what the user should charge (freelancing) or a product's price is not Summer's fee
        exclude=_r(
            r"\b(?:should|do|can|could) (?:i|we) (?:charge|ask)\b|\bfreelanc|\bmy (?:clients?|customers?|rates?)\b"
            r"|\b(?:gym|therapy|therapist|yoga|pilates|dentist|doctor|tutor(?:ing)?)\b"
        ),
    ),
    Rule(
        "booking.en.session",
        "booking",
        _r(
            r"\b(?:refund|payment|invoice|receipt)s?\b.{0,40}\b(?:sessions?|booking|consultations?|coaching|"
            r"appointments?)\b|\b(?:my|the|our) (?:sessions?|booking|consultations?|appointments?)\b.{0,40}"
            r"\b(?:refund|payment|paid|pending|invoice|receipt)\b"
            r"|\b(?:do|can) (?:you|we) (?:offer|do|have|hold)\b.{0,25}\b(?:(?:video|online|zoom|phone|in[- ]person)"
            r" (?:sessions?|calls?|consultations?|coaching)|sessions? (?:online|in[- ]person|over (?:zoom|video|"
            r"the phone)|by (?:video|phone)))\b"
            r"|\b(?:the|our|a|your) (?:sessions?|consultations?) (?:online|in[- ]person|on zoom|over zoom|by phone)\b"
            r"|\b(?:bring|prepare)\b.{0,30}\b(?:to|for) (?:the|our|my|a) (?:session|consultation|call with (?:you|summer))\b"
            r"|\bhow long (?:is|are|does) (?:a|the|one|each|your) (?:session|consultation)s?\b"
        ),
        "asks about the sessions themselves: payment state, refunds, format, what to bring, length",
        (
            "will I get a refund for the session I missed",
            "my booking shows paid but no confirmation email",
            "do you do video sessions",
            "is the consultation online or in person",
            "what should I prepare for our session",
            "how long does a session last",
        ),
        exclude=_r(
            rf"{_OTHERS_EN}|\b(?:gym|therapy|therapist|trainer|yoga|pilates|dentist|doctor|class(?:es)?|course)\b"
        ),
    ),
    Rule(
        "booking.en.availability",
        "booking",
        _r(
            r"\b(?:are you|is summer) (?:free|available)\b|\byour (?:availability|calendar)\b"
            r"|\b(?:available|open) (?:slots?|times?|sessions?)\b|\bwhat times are (?:available|open)\b"
        ),
        "asks when Summer is free",
        ("are you free next tuesday?", "what times are available this week"),
        # someone else asking the user (a boss: "are you free this weekend?"), an interview's slots
        exclude=_r(rf"\b(?:boss|manager|recruiter|hr|coworker|colleague|client|team lead)\b|{_OTHERS_EN}"),
    ),
    # resume: the user wants *their* document reviewed or written (general resume advice is career)
    Rule(
        "resume.zh.review",
        "resume",
        _r(
            # 請問 asks a question, 可以 alone may ask what a resume may hold (「可以在履歷上寫離職原因嗎」):
            # a request needs a helping verb before the document
            rf"(?:幫|請(?!問)|麻煩|想請)[^。?？]{{0,10}}(?:{_DOC_ZH})"
            rf"|(?:能|可以|可不可以)[^。?？]{{0,4}}(?:幫|看|改|修|潤|健檢|review|check)[^。?？]{{0,8}}(?:{_DOC_ZH})"
            rf"|(?:{_DOC_ZH}).{{0,12}}(?:幫我|幫忙|給你|給妳|健檢|review|check|看一下|給(?:點|些)?(?:意見|建議))"
            # a request that comes after the story of the document: 「這份簡歷我改了三次…可以幫忙看嗎」
            rf"|(?:{_DOC_ZH}).{{0,24}}(?:幫忙看|幫我看|幫忙改|幫我改|聽聽(?:妳|你)?的?(?:意見|建議|看法))"
        ),
        "asks Summer to review, rewrite or write their resume, CV, 自傳 or cover letter",
        (
            "幫我看履歷",
            "履歷健檢",
            "履力幫我看一下",
            "我的 CV 可以幫我 review 嗎",
            "請幫我潤一下求職信",
            "我的簡歷投了二十家都沒回，可以幫忙看嗎",
            "寫了一份新的自傳，想聽聽妳的意見",
        ),
        # someone else handling the document (HR passing it on, a referral) is a career question
        exclude=_r(r"轉給|轉交|內推|推薦給|(?:hr|人資|主管|獵頭|面試官|公司)[^。，,?？]{0,4}(?:說|會|要)幫"),
    ),
    Rule(
        "resume.zh.pasted",
        "resume",
        _r(
            rf"(?:以下是|這是|附上|貼上|這份是)(?:我的)?(?:{_DOC_ZH})|(?:{_DOC_ZH})\s*(?:如下|:)"
            # 「自傳開頭這樣寫可以嗎：「…」」: a passage of it, pasted after asking about it
            rf"|(?:{_DOC_ZH})[^。:]{{0,8}}這樣(?:寫|改)[^。:]{{0,6}}:\s*\S"
        ),
        "introduces a pasted resume or 自傳",
        (
            "這是我的履歷，請給我意見",
            "以下是我的履歷：\n【學歷】政治大學",
            "我的自傳：我是一個積極的人",
            "履歷的技能欄這樣寫好嗎：熟悉 Python、SQL",
        ),
        # 「這是履歷常見的錯誤嗎」 asks about resumes in general
        exclude=_r(rf"(?:{_DOC_ZH})(?:上|裡)?(?:常見|最常|通病|範本|格式)"),
    ),
    Rule(
        "resume.en.review",
        "resume",
        _r(
            rf"\b(?:review|check|look (?:at|over)|critique|proofread|improve|rewrite|edit|polish|roast|rate|fix|"
            rf"tailor|shorten|feedback on|go over|go through|look through|read through|take a look at|"
            rf"tear apart|make|paste|send|share|upload)\b.{{0,25}}"
            rf"\b(?:my|this|the)\b.{{0,15}}\b(?:{_DOC_EN})\b"
            rf"|\b(?:{_DOC_EN})\b.{{0,3}}\b(?:review|check|feedback|critique)\b"
            rf"|\b(?:my|this) (?:{_DOC_EN})\b.{{0,40}}\b(?:rewrite|review|fix|improve|check|look at|polish|"
            rf"proofread|edit|go through|look over)\b"
            rf"|\bis my (?:{_DOC_EN}) (?:ok|okay|good|fine|any good)\b"
            rf"|\b(?:here is|here's|attached is|below is|i pasted)\b.{{0,10}}\b(?:my|the)\b.{{0,5}}\b(?:{_DOC_EN})\b"
        ),
        "asks Summer to review or rewrite their resume, CV or cover letter",
        (
            "review my resume",
            "resme review pls",
            "roast my resume lol",
            "is my resume ok?",
            "could someone go through my cv this week",
            "my cover letter is below, can you proofread it",
        ),
        exclude=_r(
            # general advice about one's resume is career ("how do I make my resume stand out"), unless
            # it also asks Summer to do it
            r"^(?:how|what|when|where|why|should|is it|do i|does|which)\b(?!.*\b(?:can you|could you|would you|"
            r"please|pls|help me|for me)\b)"
            # someone else reviewing it (the recruiter, an ATS) is career
            r"|\b(?:recruiters?|hr|hiring managers?|they|he|she|the company|ats|interviewers?)\b[^.?!]{0,15}"
            r"\b(?:review(?:ed|s)?|check(?:ed|s)?|look(?:ed)? at|read|reject(?:ed|s)?)\b"
        ),
    ),
    Rule(
        "resume.pasted",
        "resume",
        _r(
            r"^(?=.*(?:學歷|教育背景|education))(?=.*(?:經歷|經驗|experience))"
            r"(?=.*(?:技能|自傳|證照|skills|projects|certifications))"
        ),
        "a long message with a resume's sections (education, experience, skills)",
        (
            "王小明\n學歷\n台北大學 2016-2020\n工作經歷\nABC 科技 行銷專員 2020-至今，負責社群經營與每月電子報，"
            "粉專追蹤數一年成長 40%，並規劃三場線下活動與兩次品牌聯名企劃。\n專業技能\nGoogle Analytics、Canva",
        ),
        min_chars=120,
        # one line ending in a question: a career question that mentions education, experience, skills
        exclude=_r(r"^[^\n]*[?？]\s*$"),
    ),
    # off-topic: a request outside what Summer does, with no word of work or careers in it (a career
    # question wins over anything else it mentions; what these miss goes to layer 2)
    Rule(
        "offtopic.zh.request",
        "offtopic",
        _r(
            r"(?:寫|作)(?:一)?(?:首|篇|個|段)(?:[^，,。]{0,8})(?:詩|絕句|歌詞|故事|小說|笑話|情書)"
            r"|(?:講|說)(?:個|一個|幾個)?(?:冷)?笑話|睡前故事"
            # the weather with a day to forecast (「那天氣呢？」 alone is a follow-up, 「今天好冷喔」 small talk)
            r"|(?:明天|今天|後天|週末|這週|下週|今晚|明早)[^。，,]{0,8}(?:天氣|氣溫|下雨|颱風|冷|熱)[^。]{0,6}"
            r"(?:嗎|幾度|如何|怎樣|多少)|天氣預報|會不會下雨|颱風假"
            r"|食譜|怎麼(?:煮|滷|烤|炒|燉)|氣炸鍋|電鍋"
            r"|幾比幾|總冠軍|全壘打|比賽結果"
            r"|匯率|股票代號|股價"
            r"|(?:貓|狗|倉鼠|兔子|寵物)(?:咪|狗)?(?:一直|可以|能|會|吃|吐|生病)"
            r"|(?:發燒|感冒|喉嚨痛|拉肚子)[^。]{0,10}(?:怎麼辦|吃什麼|要不要|嗎|掛)"
            r"|數學題|方程式|微積分|國小[一二三四五六]?年級"
            r"|(?=.*[\u3400-\u9fff])[a-z]+(?:error|exception)\b"  # a programming error, asked in Chinese
            rf"|(?=.*[\u3400-\u9fff])(?:{_CODE})"  # a question about code, asked in Chinese
            r"|(?:晚餐|午餐|早餐|宵夜)(?:要)?(?:煮|吃)什麼"
            r"|推薦(?:幾|一)?(?:部|本|齣|款|個)?[^，,。]{0,8}(?:電影|影集|台劇|韓劇|日劇|動畫|動漫|漫畫|小說|遊戲)"
            # a translation or a thesis (a document of the user's job search is the resume rules' before)
            r"|翻(?:譯)?成(?:英文|中文|日文|韓文)|論文摘要|\d[\d,.]*\s?%\s?(?:是多少|等於多少)"
        ),
        "a request outside careers: writing poems or stories, jokes, the weather, recipes, sports, "
        "exchange rates, pets, health, homework, a programming error",
        (
            "幫我寫一首關於海的詩",
            "講個笑話給我聽",
            "明天高雄會下雨嗎",
            "紅燒肉怎麼滷比較入味",
            "昨晚洋基幾比幾",
            "日圓匯率現在多少",
            "我家貓一直吐怎麼辦",
            "Python 出現 KeyError 是什麼意思",
        ),
        exclude=_r(_CAREER_WORDS),
    ),
    Rule(
        "offtopic.en.request",
        "offtopic",
        _r(
            r"\b(?:write|compose) (?:me )?(?:a|an|some) (?:\w+ )?(?:poem|haiku|song|lyrics|story|limerick|joke|"
            r"bedtime story|love letter)\b|\btell me (?:a|another|some) (?:\w+ )?(?:jokes?|stor(?:y|ies))\b"
            rf"|{_CODE}"
            r"|\b(?:weather|forecast)\b|\bwill it (?:rain|snow)\b"
            r"|\brecipes?\b|\bhow (?:long|do i|to) (?:boil|bake|cook|roast|grill)\b"
            r"|\bwho won\b|\bscore (?:of|in) (?:the|last)\b|\bsuper bowl\b|\bworld cup\b"
            r"|\bexchange rate\b|\bticker symbol\b|\bstock price\b"
            r"|\bmy (?:dog|cat|puppy|kitten|hamster|rabbit)\b"
            r"|\b(?:derivative|integral) of\b|\bsolve (?:for x|this equation)\b"
            r"|\b[a-z]+(?:error|exception)\b"
            r"|\bwho (?:painted|wrote|sang|invented|discovered)\b|\bcapital (?:city )?of\b"
            r"|\bsummari[sz]e the (?:plot|movie|book|novel|film)\b|\bplot of\b"
            r"|\bget (?:\w+ ){1,3}out of (?:my |a |the )?(?:\w+ )?(?:shirt|carpet|couch|jeans|sofa)\b"
            r"|\bwhat(?:'s| is) \d[\d,.]*\s?(?:%|percent) of\b|\btranslate\b|\b(?:thesis|dissertation) abstract\b|\babstract for (?:the|a|my) (?:conference|journal)\b"
        ),
        "a request outside careers: poems, stories, jokes, the weather, recipes, sports, exchange rates, "
        "pets, homework, a programming error",
        (
            "write me a poem about autumn",
            "tell me a joke",
            "what's the weather in Taipei tomorrow",
            "any good recipe for banana bread?",
            "who won the game last night",
            "my cat keeps throwing up",
            "what does IndexError mean in python",
        ),
        exclude=_r(_CAREER_WORDS),
    ),
    # booking words about a personal errand: someone's table, a doctor, a haircut, a streaming membership.
    # The booking rules veto these words; without a word of work they are a request outside careers.
    Rule(
        "offtopic.zh.errand",
        "offtopic",
        _r(
            r"(?:預約|預訂|訂|取消|退訂|改期|改時間|掛)[^，,。?？]{0,10}"
            r"(?:牙醫|門診|醫生|看診|掛號|餐廳|位子|訂位|剪髮|剪頭髮|美髮|美甲|按摩|健身房|機票|飯店|民宿|高鐵|火車票|電影票)"
            r"|(?:netflix|youtube|spotify|disney|apple music|kkbox|line music)[^，,。]{0,12}(?:會員|訂閱|premium)"
            r"|(?:會員|訂閱)[^，,。]{0,6}(?:取消|退訂|退費|續約)|(?:取消|退訂)[^，,。]{0,6}(?:會員|訂閱)"
        ),
        "books or cancels something that is not a session with Summer: a table, a doctor, a haircut, a "
        "ticket, a streaming or gym membership",
        ("幫我訂週五晚上的餐廳", "我想預約下週的牙醫", "Netflix 會員要怎麼取消"),
        exclude=_r(_CAREER_WORDS),
    ),
    Rule(
        "offtopic.en.errand",
        "offtopic",
        _r(
            r"\b(?:book|reserve|cancel|reschedule)\b[^.?!]{0,30}"
            r"\b(?:table|dentist|doctor'?s?|haircut|salon|restaurant|flight|hotel|massage|vet|"
            r"netflix|spotify|disney\+?|hulu|youtube premium|gym)\b"
            r"|\b(?:netflix|spotify|hulu|disney\+?|youtube|gym|streaming)\b[^.?!]{0,20}\b(?:membership|subscription|premium)\b"
            r"|\b(?:cancel|end|stop)\b[^.?!]{0,10}\b(?:membership|subscription)\b"
        ),
        "the same in English",
        ("book me a table for four tonight", "how do I cancel my spotify subscription"),
        exclude=_r(_CAREER_WORDS),
    ),
    # greeting: only a message that is nothing but small talk
    Rule(
        "greet.hello",
        "greeting",
        _smalltalk(f"{_HELLO}|{_HOW}"),
        "a greeting and nothing else",
        ("你好", "嗨", "早安 Summer", "Hi Summer :)", "你好，最近好嗎？", "hey hey what's up", "gm summer"),
        max_units=14,
    ),
    Rule(
        "greet.thanks",
        "greeting",
        _smalltalk(_THANKS),
        "thanks and nothing else",
        ("謝謝妳！", "3Q", "thx!!", "thank you so much", "謝啦 先這樣"),
        max_units=14,
    ),
    Rule(
        "greet.bye",
        "greeting",
        _smalltalk(_BYE),
        "a goodbye and nothing else",
        ("掰掰", "bye~", "晚安囉"),
        max_units=14,
    ),
    Rule(
        "greet.ack",
        "greeting",
        _smalltalk(_ACK),
        "an acknowledgement (ok, 收到, 了解) and nothing else",
        ("好的", "收到", "ok", "了解了解", "哈哈哈 好喔"),
        max_units=10,
    ),
    Rule(
        "greet.about",
        "greeting",
        _smalltalk(_ABOUT),
        "asks who Summer is or what she can do",
        (
            "你是誰？",
            "who are you",
            "你能做什麼",
            "妳是機器人嗎",
            "who built you",
            "妳會講台語嗎",
            "你平常喜歡喝茶嗎",
        ),
        max_units=14,
    ),
)


# Layer 2 reads the same words: a booking verdict on a message that is about someone else's appointment,
# a job interview, an employer's counselling or a membership is not sure (the LLM, or the no-LLM guess,
# decides instead). The booking rules' vetoes, in one pattern.
_BOOKING_VETO = _r(
    rf"{_INTERVIEW_ZH}|{_OTHERS_BOOKING_ZH}|{_SOMEONE_ELSES_COUNSELLING}|{_OTHERS_EN}"
    r"|會員|訂閱|\b(?:membership|subscription)s?\b"
)

_MOCK_INTERVIEW = _r(r"模擬面試|\bmock interviews?\b")
# the request names one of Summer's own sessions: 一對一諮詢, "a session with you"
_SUMMERS_SESSION = _r(
    r"一對一|1對1|(?:跟|和|找)(?:妳|你|summer)(?:約|諮詢|談)|(?:預約|報名|約)(?:一下|一次)?(?:職涯)?諮詢"
    r"|\b(?:session|call|consultation|coaching)s? with (?:you|u|summer)\b|\b(?:your|a coaching) (?:session|consultation)s?\b"
)
# a general question about a document's length (「履歷要寫幾頁？」, "is a two-page resume too long"): career,
# unless the message asks for something to be done to the user's own document (「可以幫我精簡嗎」)
_DOC_LENGTH = _r(
    r"幾頁|幾個字|多少字|寫多長|\bhow long should\b|\bhow many (?:pages|words)\b|\b(?:one|two|1|2)[- ]pages?\b"
    r"|\btoo long\b"
)
_DOC_REQUEST = _r(
    r"幫|替我|請你|可以.{0,4}(?:看|改|刪|精簡|縮)|以下是|附上|\b(?:help|review|check|look at|look over|fix|"
    r"rewrite|shorten|cut|trim|edit|proofread|here'?s my|attached)\b"
)
_CLAUSE_END = re.compile(r"[。！？!?\n，,；;]+|\.(?:\s|$)")
_CAREER = _r(_CAREER_WORDS)


def vetoed(intent: str, message: str) -> str | None:
    """Why a model (layer 2, or the LLM) must not be taken at its word for ``intent`` on ``message``,
    or None: the words the booking rules veto for booking, a word of work or careers for off-topic (the
    off-topic rules' veto: a career question wins over whatever else it asks), a question about a
    document's length without a request to work on the user's own for resume (「履歷要寫幾頁？」 is
    career).

    A booking stays un-vetoed for a mock interview (one of Summer's sessions) and for a message whose
    last clause, where a long message states its request, asks for one of Summer's sessions without a
    veto word of its own: a story about failed interviews that ends «請問一對一諮詢要怎麼報名？» is a
    booking, «HR 約我明天面試，可以改到後天嗎？» is not."""
    text = normalise(message)
    if intent == "offtopic":
        found = _CAREER.search(text)
        return found.group(0) if found else None
    if intent == "resume":
        found = _DOC_LENGTH.search(text)
        return found.group(0) if found and not _DOC_REQUEST.search(text) else None
    if intent != "booking" or _MOCK_INTERVIEW.search(text):
        return None  # a mock interview is one of Summer's sessions, whatever else the message says
    found = _BOOKING_VETO.search(text)
    if found is None:
        return None
    clauses = [part for part in _CLAUSE_END.split(text) if part.strip()]
    last = clauses[-1] if clauses else text
    if len(clauses) > 1 and _SUMMERS_SESSION.search(last) and not _BOOKING_VETO.search(last):
        return None
    return found.group(0)


def match_rules(message: str) -> Rule | None:
    """The first rule that applies to the normalised message, or None."""
    text = normalise(message)
    for rule in RULES:
        if rule.applies(text):
            return rule
    return None
