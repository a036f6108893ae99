"""Layer 1's resume rules: the user asks Summer to review, rewrite or write their own resume, CV, 自傳,
cover letter or job-site profile (or one passage of it), or pastes one. A general question about resumes
(what to put in, how long, a photo) is career and must not match; nor must someone else handling the
document (HR passing it on, a recruiter reviewing it). They come after the booking rules (「諮詢時可以帶
履歷嗎」 asks about a session) and before the off-topic and greeting rules.
"""

from __future__ import annotations

from careerwise.routing._rule_base import _DOC_EN, _DOC_ZH, Rule, _r

RESUME_RULES: tuple[Rule, ...] = (
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
            # writing one from scratch: 「幫我寫一封投遞行銷職缺的求職信」
            rf"|(?:幫我|請妳|請你|可以幫忙)(?:寫|擬)[^。?？]{{0,24}}(?:{_DOC_ZH})"
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
            "幫我擬一份應徵儲備幹部用的自傳",
        ),
        # someone else handling the document (HR passing it on, a referral) is a career question
        exclude=_r(r"轉給|轉交|內推|推薦給|(?:hr|人資|主管|獵頭|面試官|公司)[^。，,?？]{0,4}(?:說|會|要)幫"),
    ),
    Rule(
        "resume.zh.pasted",
        "resume",
        _r(
            rf"(?:以下是|這是|附上|貼上|這份是)(?:我的)?(?:中文|英文|新版|最新版?|修改後的?)?(?:{_DOC_ZH})"
            rf"|(?:{_DOC_ZH})\s*(?:如下|:)"
            # 「自傳開頭這樣寫可以嗎：「…」」: a passage of it, pasted after asking about it
            rf"|(?:{_DOC_ZH})[^。:]{{0,8}}這樣(?:寫|改)[^。:]{{0,6}}:\s*\S"
        ),
        "introduces a pasted resume or 自傳",
        (
            "這是我的履歷，請給我意見",
            "以下是我的履歷：\n【學歷】政治大學",
            "我的自傳：我是一個積極的人",
            "履歷的技能欄這樣寫好嗎：熟悉 Python、SQL",
            "附上我的新版履歷 麻煩了",
        ),
        # 「這是履歷常見的錯誤嗎」 asks about resumes in general
        exclude=_r(rf"(?:{_DOC_ZH})(?:上|裡)?(?:常見|最常|通病|範本|格式)"),
    ),
    Rule(
        "resume.zh.passage",
        "resume",
        _r(
            # a section of the document, then its text quoted or after a colon, asked about:
            # 「經歷那段我是這樣寫的：「…」」, 「專長：…。這樣寫可以嗎」
            r"(?:學歷|經歷|工作經驗|技能|專長|自傳|自我介紹|自介|證照|專案經驗|summary|about)"
            r"(?:那|這)?(?:欄|段|部分|區塊|一段|第[一二三]段)?[^。:「]{0,10}"
            r"(?:這樣寫|是這樣|寫好了|改成|寫成)[^。:「]{0,8}[:「]\s*\S.{8,}"
            r"|^(?:學歷|經歷|工作經驗|技能|專長|證照|自傳|自我介紹|summary)\s*:.{10,}"
            r"(?:這樣寫|這樣|這樣改)(?:可以|對|好|ok|行|夠)"
        ),
        "a passage of the user's resume (a section named, its text quoted or after a colon) asked about",
        (
            "經歷那段我是這樣寫的：「負責門市排班與庫存盤點，每月營業額成長 12%」",
            "專長：Excel 樞紐分析、SQL、Tableau 儀表板。這樣寫可以嗎",
        ),
        # a self-introduction said at a job interview is interview practice (career), not a document
        exclude=_r(r"面試|口試|自我介紹(?:時|的時候)要"),
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
            rf"|\b(?:my|this) (?:{_DOC_EN})\b.{{0,60}}\b(?:rewrite|review|fix|improve|check|look at|polish|"
            rf"proofread|edit|go through|go over|look over|tear (?:it|this) apart)\b"
            # asked to write one, or the document handed over: "write me a cover letter", "cv attached"
            rf"|\b(?:write|draft|build|create|make)\b (?:me|up) (?:a|an|my)\b.{{0,12}}\b(?:{_DOC_EN})\b"
            rf"|\b(?:{_DOC_EN})\b (?:is |are )?(?:attached|below|pasted below|here)\b"
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
            "could you draft me a cover letter for a barista job",
            "cv attached, be brutal",
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
        "resume.en.passage",
        "resume",
        _r(
            # one part of the user's document to rewrite, or rewritten and shown again
            r"\b(?:rewrite|reword|rephrase|improve|polish|tighten|punch up|fix|strengthen)\b (?:this|my|these|the following) "
            r"(?:resume |cv )?(?:bullet(?: point)?s?|summary|headline|objective|(?:experience|skills|about|education) "
            r"section|profile summary)\b"
            r"|\b(?:rewrote|reworded|updated|redid|rewrote) my (?:resume |cv )?(?:summary|headline|objective|bullets?|"
            r"(?:experience|skills|about|education) section)\b.{0,40}(?:better|ok|okay|good|stronger|\?)"
        ),
        "one part of the user's resume (a bullet, the summary, a section) to rewrite, or shown rewritten",
        (
            "can you punch up this bullet: managed social media accounts",
            "I reworded my summary, does it read better now?",
        ),
        # the same words about a slide, a report, an email or an essay are not a resume
        exclude=_r(
            r"\b(?:slides?|deck|report|email|presentation|essay|paper|ppt|article|blog|thesis|readme)\b"
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
)
