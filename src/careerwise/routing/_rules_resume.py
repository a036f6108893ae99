"""Layer 1's resume rules: the user asks Summer to review, rewrite or write their own resume, CV, 自傳,
cover letter or job-site profile (or one passage of it), or pastes one. A general question about resumes
(what to put in, how long, a photo) is career and must not match; nor must someone else handling the
document (HR passing it on, a recruiter reviewing it). They come after the booking rules (「諮詢時可以帶
履歷嗎」 asks about a session) and before the off-topic and greeting rules.
"""

from __future__ import annotations

from careerwise.routing._rule_base import _DOC_EN, _DOC_ZH, _OTHERS_RESUMES, Rule, _r

# verbs a resume bullet opens with (work done): a quoted line that starts with one reads as a bullet
_WORK_VERB_ZH = (
    r"負責|主導|帶領|規劃|執行|管理|協助|參與|建立|開發|設計|優化|提升|推動|統籌|策劃|經營|完成|領導"
)
_WORK_VERB_EN = (
    r"led|managed|built|developed|designed|drove|launched|increased|reduced|owned|shipped|created|implemented|"
    r"delivered|grew|improved|spearheaded|coordinated|organi[sz]ed|analy[sz]ed|streamlined|automated"
)
# what may follow the document in a loose request: the end of it («thoughts on my resume?», "help with my
# cv before I apply»), not another noun («my resume gap», «my resume help center»)
_DOC_END = r"(?=\s*(?:[.,!?~:;)]|$|\b(?:pls|please|plz|before|for|this|today|tonight|asap|when|and|so|real quick)\b))"
# a resume's section headings, written inline with a colon after each
_HEADING = (
    r"學歷|教育背景|經歷|工作經歷|工作經驗|技能|專業技能|專長|證照|語言|自傳|專案|"
    r"education|experience|work experience|skills|projects|certifications|languages"
)

RESUME_RULES: tuple[Rule, ...] = (
    Rule(
        "resume.zh.review",
        "resume",
        _r(
            # 請問 asks a question, 可以 alone may ask what a resume may hold (「可以在履歷上寫離職原因嗎」):
            # a request needs a helping verb before the document
            rf"(?:幫|請(?!問)|麻煩|想請)[^。?？]{{0,10}}(?:{_DOC_ZH})"
            rf"|(?:能|可以|可不可以)[^。?？]{{0,4}}(?:幫|看|改|修|潤|健檢|review|check)[^。?？]{{0,8}}(?:{_DOC_ZH})"
            rf"|(?:{_DOC_ZH}).{{0,12}}(?:幫我|幫忙|幫看|幫改|給你|給妳|健檢|review|check|看一下|給(?:點|些)?(?:意見|建議)"
            r"|救救我|救命|求救)"
            # a request that comes after the story of the document: 「這份簡歷我改了三次…可以幫忙看嗎」,
            # 「朋友說可能是履歷的問題，我自己看不出來，可以幫我檢查一下嗎」
            rf"|(?:{_DOC_ZH}).{{0,40}}(?:幫忙|幫我|請妳|請你)(?:看|改|檢查|修|潤|過目|健檢|挑|重寫|順)"
            rf"|(?:{_DOC_ZH}).{{0,24}}聽聽(?:妳|你)?的?(?:意見|建議|看法)"
            # writing one from scratch: 「幫我寫一封投遞行銷職缺的求職信」
            rf"|(?:幫我|請妳|請你|可以幫忙)(?:寫|擬)[^。?？]{{0,24}}(?:{_DOC_ZH})"
            rf"|(?:救救|救一下|拯救)(?:我的)?[^。?？]{{0,4}}(?:{_DOC_ZH})"
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
            "投了三十家都石沉大海，學長說履歷可能有問題，我看不出來，可以幫我檢查嗎",
            "我寫了 104 的自我介紹 幫我潤一下",
            "拯救一下我的英文履歷吧",
            "我的 LinkedIn 關於我那段很空洞，可以幫我重寫嗎",
        ),
        # someone else handling the document (HR passing it on, a referral), or the user handling other
        # people's (screening applicants' resumes at work, helping at someone's request) is a career question
        exclude=_r(
            r"轉給|轉交|內推|推薦給|(?:hr|人資|主管|獵頭|面試官|公司)[^。，,?？]{0,4}(?:說|會|要)幫"
            r"|(?:朋友|同學|學長|學姊|家人|老師|前輩|同事)[^。，,?？]{0,4}(?:已經|有)幫(?:我|忙)|幫(?:我|忙)(?:看|改|檢查)過"
            rf"|{_OTHERS_RESUMES}"
        ),
    ),
    Rule(
        "resume.zh.pasted",
        "resume",
        _r(
            rf"(?:以下是|這是|附上|貼上|這份是)(?:我的)?(?:中文|英文|新版|最新版?|修改後的?)?\s?(?:{_DOC_ZH})"
            rf"|(?:{_DOC_ZH})\s*(?:如下|:)"
            # 「自傳開頭這樣寫可以嗎：「…」」: a passage of it, pasted after asking about it
            rf"|(?:{_DOC_ZH})[^。:]{{0,8}}這樣(?:寫|改)[^。:]{{0,6}}:\s*\S"
            # 「我把履歷貼在下面」
            rf"|(?:{_DOC_ZH})(?:貼|放)(?:在)?(?:下面|下方)"
        ),
        "introduces a pasted resume or 自傳",
        (
            "這是我的履歷，請給我意見",
            "以下是我的履歷：\n【學歷】政治大學",
            "我的自傳：我是一個積極的人",
            "履歷的技能欄這樣寫好嗎：熟悉 Python、SQL",
            "附上我的新版履歷 麻煩了",
            "附上我的英文 CV",
            "我把自傳貼在下面了，請看看哪裡不通順",
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
            r"(?:學歷|教育背景|經歷|工作經驗|技能|專長|自傳|自我介紹|自介|證照|專案經驗|summary|about)"
            r"(?:那|這)?(?:欄|段|部分|區塊|一段|第[一二三]段)?[^。:「]{0,10}"
            r"(?:這樣寫|是這樣|寫好了|改成|寫成|我寫|我是寫|寫的是)[^。:「]{0,8}[:「]\s*\S.{8,}"
            r"|^(?:學歷|教育背景|經歷|工作經驗|技能|專長|證照|自傳|自我介紹|summary)\s*:.{10,}"
            r"(?:這樣寫|這樣|這樣改)(?:可以|對|好|ok|行|夠|會不會|太少|太多|太短|太長)"
            # a line to rewrite that reads like a resume bullet (it opens with a verb of work done):
            # 「幫我把這句改得專業一點：負責公司 IG 經營，粉絲從兩千成長到一萬」
            r"|這(?:句|段|行|條|一句|一段)[^。:「]{0,12}(?:改|潤|修|寫|調)[^。:「]{0,8}[:「]\s*「?\s*"
            rf"(?:{_WORK_VERB_ZH})"
            # the line quoted first, then asked about: 「「主導…提升 45%」這句放在我履歷的第一條，這樣寫可以嗎」
            rf"|^「\s*(?:{_WORK_VERB_ZH})[^」]{{6,}}」[^。]{{0,30}}(?:這樣寫|這樣|這句)[^。]{{0,6}}(?:可以|好|對|ok|行|怎麼改)"
        ),
        "a passage of the user's resume (a section named, its text quoted or after a colon) asked about",
        (
            "經歷那段我是這樣寫的：「負責門市排班與庫存盤點，每月營業額成長 12%」",
            "專長：Excel 樞紐分析、SQL、Tableau 儀表板。這樣寫可以嗎",
            "這句可以幫我改得有力一點嗎：「主導門市改裝專案，三個月內完成」",
            "工作經驗那欄我寫「協助主管處理進出口報關文件」，感覺很弱",
            "「負責北區門市營運，年營收成長 20%」這句當第一條，這樣寫好嗎",
            "技能：Photoshop、Illustrator、Figma 基礎。這樣會不會太單薄",
        ),
        # a self-introduction said at a job interview is interview practice (career), not a document; a
        # line of an email, a message or a notice is not one of the resume
        exclude=_r(
            r"面試|口試|自我介紹(?:時|的時候)要|信件|封信|的信|回信|寄信|寄給|e-?mail|\bmail\b|訊息|群組|公告"
            # the line itself addressed to someone: a message, not a bullet
            r"|:\s*[^「\s][^。，,?？「」]*(?:你|妳|您)|「[^」]*(?:你|妳|您)[^」]*」"
        ),
    ),
    Rule(
        "resume.en.review",
        "resume",
        _r(
            rf"\b(?:review|check|look (?:at|over)|critique|proofread|improve|rewrite|edit|polish|roast|rate|fix|"
            rf"tailor|shorten|tighten(?: up)?|trim|punch up|clean up|feedback on|go over|go through|look through|"
            rf"read through|take a look at|"
            rf"tear apart|make|paste|send|share|upload)\b.{{0,25}}"
            rf"\b(?:my|this|the)\b.{{0,15}}\b(?:{_DOC_EN})\b"
            rf"|\b(?:{_DOC_EN})\b.{{0,3}}\b(?:review|check|feedback|critique)\b"
            rf"|\b(?:my|this) (?:{_DOC_EN})\b.{{0,60}}\b(?:rewrite|review|fix|improve|check|look at|polish|"
            rf"proofread|edit|go through|go over|look over|tear (?:it|this) apart)\b"
            # asked to write one, or the document handed over: "write me a cover letter", "cv attached"
            rf"|\b(?:write|draft|build|create|make)\b (?:me|up) (?:a|an|my)\b.{{0,12}}\b(?:{_DOC_EN})\b"
            rf"|\bturn\b.{{0,30}}\binto\b.{{0,20}}\b(?:{_DOC_EN})\b"
            # a line of it changed and asked about: "tweaked the top bullet on my resume to '…', better?"
            rf"|\bmy (?:{_DOC_EN})\b.{{0,40}}\bto\s+['\"「].{{8,}}['\"」]\s*,?\s*(?:better|any better|does (?:it|this|that) work|"
            rf"ok|okay)\s*\??\s*$"
            rf"|\b(?:{_DOC_EN})\b (?:is |are )?(?:attached|below|pasted below|here)\b"
            rf"|\bis my (?:{_DOC_EN}) (?:ok|okay|good|fine|any good)\b"
            # asked loosely: "help with my cv", "thoughts on my resume?", "resume help pls", "what do you
            # think of my cover letter", "my resume sucks, can you make it better"
            # (the document itself, not its gap, format or length: the words after it end the request)
            rf"|\b(?:help|thoughts|opinion|input)\b (?:\w+ ){{0,2}}(?:on|with|about|for) my (?:{_DOC_EN}){_DOC_END}"
            rf"|\b(?:{_DOC_EN}) help{_DOC_END}|\bwhat do you think (?:of|about) my (?:{_DOC_EN}){_DOC_END}"
            rf"|\bwhat(?:'s| is) wrong with my (?:{_DOC_EN}){_DOC_END}"
            rf"|\bmy (?:{_DOC_EN})\b.{{0,60}}\b(?:make it (?:better|stronger|pop|shine)|what(?:'s| is) wrong with it|"
            rf"what (?:to|i should|should i) (?:change|fix|improve))\b"
            rf"|\b(?:here is|here's|attached is|below is|i pasted)\b.{{0,10}}\b(?:my|the)\b.{{0,5}}\b(?:{_DOC_EN})\b"
            # a request after the story of the document: "I think my CV is the problem … would you mind
            # giving it a once-over?", "be brutally honest about my resume, I'll send it over"
            rf"|\bmy (?:{_DOC_EN})\b.{{0,100}}\b(?:give|giving|take|taking|have|having) (?:it|this|them) a "
            rf"(?:quick )?(?:look|once-over|glance|read|skim)\b"
            rf"|\bmy (?:{_DOC_EN})\b.{{0,100}}\b(?:look (?:at|over|through) it|eyes on it|check it|review it)\b"
            rf"|\b(?:be|give me|i want|i need|want|need)\b (?:\w+ ){{0,2}}(?:brutal(?:ly)?|honest|harsh|savage|ruthless)\b.{{0,25}}"
            rf"\bmy (?:{_DOC_EN})\b"
            rf"|\bmy (?:{_DOC_EN})\b.{{0,60}}\b(?:i'?ll|let me|i will|i can|gonna) (?:send|share|paste|upload) it "
            rf"(?:over|here|to you|in a (?:sec|minute|bit))\b"
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
            "nobody replies to my applications, maybe my resume is weak, could you take a look at it",
            "no interviews in 3 months, I suspect my CV. can you give it a quick read?",
            "be harsh about my cover letter, I'll paste it",
            "could use some help with my cv before I apply",
            "what do you think of my cover letter? it's below",
            "can you trim my resume down to one page",
            "be ruthless with my cv, nothing is too small",
            "could you turn these notes into a decent cover letter",
            "changed the first line of my cv to 'Cut support tickets by 30%', better?",
        ),
        exclude=_r(
            # general advice about one's resume is career ("how do I make my resume stand out"), unless
            # it also asks Summer to do it
            r"^(?!what do you think|what'?s wrong with my|what is wrong with my)"
            r"(?:how|what|when|where|why|should|is it|do i|does|which)\b(?!.*\b(?:can you|could you|would you|"
            r"please|pls|help me|for me)\b)"
            # someone else reviewing it (the recruiter, an ATS) is career
            r"|\b(?:recruiters?|hr|hiring managers?|they|he|she|the company|ats|interviewers?|(?:my )?(?:manager|boss|"
            r"mentor|friend|professor|dad|mom))\b[^.?!]{0,15}"
            r"\b(?:review(?:ed|s)?|check(?:ed|s)?|look(?:ed)? at|read|reject(?:ed|s)?)\b"
            # the user reviewing other people's (screening applicants at work)
            rf"|{_OTHERS_RESUMES}"
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
            # a quoted line that reads like a resume bullet (a verb of work done), asked about:
            # 'is this better? «Led a 4-person team to ship…»'
            # (a figure in it: a bullet states a result; «managed services or product?» is no bullet)
            rf"|^(?=.*[«\"“:]\s*(?:{_WORK_VERB_EN})\b[^»\"”]{{0,80}}\d)"
            r"(?=.*\b(?:better|stronger|rewrite|reword|rephrase|improve|polish|punch (?:it )?up|tighten|"
            r"(?:sound|read)s? (?:ok|okay|good|right|weak)|good enough)\b)"
        ),
        "one part of the user's resume (a bullet, the summary, a section) to rewrite, or shown rewritten",
        (
            "can you punch up this bullet: managed social media accounts",
            "I reworded my summary, does it read better now?",
            '"Managed a budget of $2M across three regions" - does that sound weak?',
        ),
        # the same words about a slide, a report, an email or an essay are not a resume; nor is a line
        # someone else wrote about the user (a manager's appraisal)
        exclude=_r(
            r"\b(?:slides?|deck|report|email|presentation|essay|paper|ppt|article|blog|thesis|readme)\b"
            r"|\b(?:boss|manager|supervisor|appraisal|performance review|review said|told me|wrote about me)\b"
            r"|\b(?:post|posts|posting|chat|message|slack|teams|tweet|announcement|caption)\b"
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
    Rule(
        "resume.inline",
        "resume",
        # three section headings, each followed by a colon: a short resume pasted on one line
        _r(rf"(?:(?:^|[\s|｜,，。;；])(?:{_HEADING})\s*:\s*\S.*?){{3}}"),
        "a resume pasted with its section headings inline (three of 學歷：, 經歷：, 技能：, Skills: …), at any "
        "length",
        (
            "陳美玲 學歷：輔仁大學 日文系 經歷：旅行社 OP 兩年 技能：日文 N1、Excel",
            "Jamie Lee | Education: BSc Biology Experience: lab assistant 2022-2024 Skills: PCR, R",
        ),
        # the writer's background told to ask about a move (a career question), or a question alone
        exclude=_r(
            r"適合|轉行|轉職|要不要|該不該|可以轉|能不能|\b(?:should i|can i|could i|is it|am i)\b"
            r"|^[^\n]*[?？]\s*$"
        ),
    ),
)
