"""Layer 1 (rules, by id) and classifyTier (the seed's table): deterministic, no model."""

from __future__ import annotations

import pytest

from careerwise.routing import RULES, RulesRouter, classify_tier, match_rules
from careerwise.routing._text import normalise, strip_opener, units

RULE_IDS = [r.id for r in RULES]


def test_rule_ids_are_unique_and_every_rule_has_examples() -> None:
    assert len(RULE_IDS) == len(set(RULE_IDS))
    assert all(r.examples for r in RULES)
    assert {r.intent for r in RULES} == {"greeting", "resume", "booking", "offtopic"}  # career never is


@pytest.mark.parametrize(("rule_id", "example"), [(r.id, e) for r in RULES for e in r.examples])
def test_each_rule_matches_its_examples(rule_id: str, example: str) -> None:
    rule = match_rules(example)
    assert rule is not None and rule.id == rule_id


@pytest.mark.parametrize(
    ("message", "rule_id"),
    [
        ("ｈｉ！", "greet.hello"),  # full-width letters and punctuation
        ("Hello Summer!!", "greet.hello"),
        ("謝謝，今天跟妳聊得很開心", "greet.thanks"),
        ("thx, bye", "greet.thanks"),
        ("你好，我想預約一對一諮詢", "booking.zh.reserve"),  # booking wins over the greeting
        ("我想預約諮詢，也想請你先幫我看履歷", "booking.zh.reserve"),  # booking wins over resume
        ("hi, could you review my resume?", "resume.en.review"),
        ("謝謝！那可以再幫我看一次履歷嗎", "resume.zh.review"),
        ("請幫我看看履歷 順便問一下面試要注意什麼", "resume.zh.review"),  # resume wins over career
        ("cancel my booking please", "booking.en.change"),
    ],
)
def test_rule_decides_mixed_and_noisy_messages(message: str, rule_id: str) -> None:
    rule = match_rules(message)
    assert rule is not None and rule.id == rule_id


@pytest.mark.parametrize(
    "message",
    [
        "你好，我想問怎麼談薪水",  # a greeting in front of a question is not a greeting
        "hi, how do I negotiate my salary",
        "謝謝，那該不該離職",
        "履歷要寫幾頁？",  # general resume advice is career, not a review request
        "how long should a resume be",
        "HR 約我下週二面試，我要怎麼回信比較得體",  # a job interview is not a booking with Summer
        "the recruiter wants to schedule an interview call, what should I say in my reply",
        "面試可以改期嗎",
        "what book should I read about negotiation",
        "hiring managers look for what",
        "我學歷普通、沒有經驗、技能也不夠，要怎麼轉職",  # resume words, but not a pasted resume
    ],
)
def test_no_rule_for_career_questions(message: str) -> None:
    assert match_rules(message) is None


@pytest.mark.parametrize(
    ("message", "rule_id"),
    [
        # what a session costs, in both languages: always a booking question, decided by a rule
        ("how much is a session?", "booking.en.price"),
        ("what are your prices for coaching", "booking.en.price"),
        ("do u have student pricing", "booking.en.price"),
        ("一次諮詢多少錢", "booking.zh.price"),
        ("可以退費嗎", "booking.zh.payment"),
        ("上週的諮詢我臨時不能去，可以退款嗎", "booking.zh.payment"),
        ("can I get a refund for my consultation", "booking.en.session"),
        # the rest of a session: format, length, what to bring
        ("諮詢可以用視訊嗎", "booking.zh.session"),
        ("請問諮詢大概要多久", "booking.zh.session"),
        ("do you offer online sessions", "booking.en.session"),
        ("what should I bring to the consultation", "booking.en.session"),
        # resume words in a question about a session: booking wins (it used to hit resume.zh.review)
        ("諮詢的時候可以帶我的履歷給妳看嗎", "booking.zh.session"),
        ("請問諮詢當天要帶履歷和作品集嗎", "booking.zh.session"),
    ],
)
def test_questions_about_the_sessions_are_booking(message: str, rule_id: str) -> None:
    rule = match_rules(message)
    assert rule is not None and (rule.id, rule.intent) == (rule_id, "booking")


@pytest.mark.parametrize(
    "message",
    [
        "my manager wants to schedule a 1:1 with me tomorrow",  # a workplace 1:1, not Summer's session
        "去勞工局諮詢的時候要帶什麼",  # someone else's counselling
        "想當職涯諮詢師要考什麼證照",
        "how much should I charge as a freelance designer",
        "a recruiter booked a call with me, how do I prepare",
    ],
)
def test_other_peoples_sessions_and_prices_are_not_booking(message: str) -> None:
    rule = match_rules(message)
    assert rule is None or rule.intent != "booking"


@pytest.mark.parametrize(
    "message", ["gm", "who built you?", "妳會講台語嗎", "你們是哪間公司開發的", "你平常喜歡喝茶嗎"]
)
def test_small_talk_about_summer_herself_is_a_greeting(message: str) -> None:
    rule = match_rules(message)
    assert rule is not None and rule.intent == "greeting"


def test_pasted_resume_needs_its_sections_and_length() -> None:
    resume = (
        "Jane Doe\nEXPERIENCE\nAcme, Backend Engineer, 2021-present: payment APIs in Go\n"
        "EDUCATION\nB.S. Computer Science, 2021\nSKILLS\nGo, Python, PostgreSQL, Kubernetes, Terraform"
    )
    rule = match_rules(resume)
    assert rule is not None and rule.id == "resume.pasted"
    assert match_rules("education, experience and skills: which matters most to recruiters?") is None


async def test_rules_router_gives_career_a_tier() -> None:
    decision = await RulesRouter().route("該不該離職")
    assert (decision.intent, decision.tier, decision.layer) == ("career", "complex", "default")
    greeting = await RulesRouter().route("嗨")
    assert (greeting.intent, greeting.tier, greeting.rule_id) == ("greeting", None, "greet.hello")


# --- classifyTier: the seed's table (docs/routing.md) --------------------------------------------------

SEED_TABLE = [
    ("面試要怎麼準備", "simple"),
    ("我想轉職前端但沒有相關經驗", "medium"),
    ("2025 軟體工程師生存指南說了什麼？", "medium"),
    ("該不該離職", "complex"),
    ("前端還後端？該不該離職？", "complex"),
    # seeds 000 and 001 disagree (000 streams it); 001 wins: longer than 10 units, one topic
    ("前端工程師在台灣好找工作嗎？", "medium"),
    ("怎麼談薪水？", "simple"),
]
ENGLISH_TABLE = [
    ("how do I prepare for interviews", "simple"),
    ("I want to move into frontend but I have no related experience", "medium"),
    ("what are the main points of the 2025 software engineer survival guide?", "medium"),
    ("should I quit my job?", "complex"),
    ("frontend or backend? should I quit?", "complex"),
    ("is it worth going back to school for a master's?", "complex"),
    ("how much notice should I give before leaving my job in Taiwan", "medium"),  # "how … should I"
]


@pytest.mark.parametrize(("message", "tier"), SEED_TABLE + ENGLISH_TABLE)
def test_tier_table(message: str, tier: str) -> None:
    result = classify_tier(message)
    assert result.tier == tier, result.reasons
    assert result.reasons and result.reasons[0].startswith(tier)


def test_tier_reasons_say_why() -> None:
    assert classify_tier("該不該離職").reasons == ["complex: decision question (該不該)"]
    both = classify_tier("前端還後端？該不該離職？").reasons[0]
    assert "該不該" in both and "2 questions" in both
    assert classify_tier("面試要怎麼準備").reasons == ["simple: 7 units (≤ 10), no decision word"]


@pytest.mark.parametrize(
    ("message", "tier"),
    [
        ("你好，我想問怎麼談薪水", "simple"),  # the greeting is not counted
        ("自學前端一年了還是找不到工作", "medium"),  # 還是 = still, not "or"
        ("留在台灣還是去新加坡", "complex"),  # 還是 = or
        ("轉職作品集要做幾個專案才夠，每個專案要做到什麼程度", "complex"),  # two questions, no marks
        ("面試官問我為什麼想來我們公司，要怎麼回答不會太制式", "medium"),  # a reported question
        ("該不改離職阿 好累", "complex"),  # a typo of 該不該
        ("startup or big company for a new grad?", "complex"),
    ],
)
def test_tier_edge_cases(message: str, tier: str) -> None:
    assert classify_tier(message).tier == tier


def test_units_count_han_characters_and_words() -> None:
    assert units("面試要怎麼準備") == 7
    assert units("2025 軟體工程師生存指南說了什麼？") == 14
    assert units("what's the plan?") == 3
    assert normalise("ｈｅｌｌｏ！　Summer") == "hello! Summer"
    assert strip_opener("hi! how do I prepare") == "how do I prepare"
    assert strip_opener("hiring managers") == "hiring managers"  # "hi" only as a word
    assert strip_opener("早安～請問面試遲到要怎麼補救") == "面試遲到要怎麼補救"
    assert strip_opener("good morning! how do I ask for a raise") == "how do I ask for a raise"


# --- what each rule must not match: its words used about something else (issue #25) ------------------

MUST_NOT_MATCH: dict[str, tuple[str, ...]] = {
    "booking.zh.reserve": (
        "我幫主管預約會議室一直失敗怎麼辦",
        "老闆叫我幫客戶預約拜訪時間，行政工作做太多會影響升遷嗎",
        "HR 要我自己上系統預約面試時間，要選早上還是下午",
        "請病假要先預約門診證明嗎",
        # an employer's counselling programme, the user's own clients, a relative's check-up
        "公司的員工協助方案可以免費談幾次，要怎麼預約",
        "我是諮詢師，個案一直臨時取消預約，可以收費嗎",
        "我爸要預約醫院的復健，網站一直當機",
        "客戶約不到時間，業績要怎麼衝",
        "HR 問我怎麼約你比較方便，我要怎麼回",
    ),
    "booking.zh.change": (
        "二面可以改期嗎？會不會扣分",
        "我想把複試改時間，要怎麼跟 HR 開口",
        "健身房會員可以取消嗎",
        "幫老闆把客戶會議改期，結果被罵",
    ),
    "booking.zh.price": (
        "公司的一對一輔導費用是公司出嗎",
        "公司的員工諮詢服務費用是公司出嗎",
        "勞資糾紛找律師諮詢費用大概多少",
    ),
    "booking.zh.payment": (
        "公司的薪水都轉帳，可以要求領現金嗎",
        "客戶一直不付款，業務要負責嗎",
        "離職後勞保退費怎麼算",
    ),
    "booking.zh.session": (
        "公司有提供員工諮詢方案，去用會被主管知道嗎",
        "我們公司的 EAP 心理諮詢是線上還是實體",
        "想當職涯諮詢師，諮詢一次大概多久才夠",
    ),
    "booking.zh.slot": (
        "面試官問我下週哪個時段有空，要怎麼回比較好",
        "這家公司的實習還有名額嗎",
        "你有時間幫我看一下履歷嗎",
    ),
    "booking.en.reserve": (
        "my boss asked me to book appointments for his clients, is that part of my job?",
        "how do I book a meeting with my skip-level manager",
        "should I schedule my interview in the morning or afternoon",
        "how do I book a conference room for my team's offsite",
    ),
    "booking.en.change": (
        "can I cancel my interview",
        "can I reschedule my second-round interview without looking bad",
        "how do I cancel my gym membership",
        "I had to reschedule a client appointment twice, will my boss be mad",
    ),
    "booking.en.price": (
        "how much should I charge per session as a freelance designer",
        "what's a fair price for my tutoring sessions",
        "how much do therapy sessions cost in Taipei",
    ),
    "booking.en.session": (
        "my gym won't refund the personal training sessions I missed",
        "is my company's counselling programme online or in person",
        "what should I prepare for the interview session with the hiring manager",
    ),
    "booking.en.availability": (
        "my boss texted 'are you free this weekend?' should I answer",
        "the recruiter sent me available slots for the interview",
    ),
    "resume.zh.review": (
        "請問履歷要放照片嗎",
        "可以在履歷上寫離職原因嗎",
        "HR 說會幫我把履歷轉給主管，要等多久",
        "幫我看一下論文摘要的英文有沒有錯",
    ),
    "resume.zh.pasted": (
        "履歷這樣寫可以嗎",
        "這是履歷常見的錯誤嗎",
        "以下是履歷範本的問題：要用哪一種",
    ),
    "resume.en.review": (
        "how do I write a good linkedin summary",
        "how do I make my resume stand out",
        "should I send my resume as a PDF or a Word file",
        "the recruiter said they would review my resume this week, how long should I wait",
        "can you proofread my thesis abstract",
    ),
    "resume.pasted": (
        "I have a CS education, three years of experience in QA, and skills in Python and SQL. Should I move "
        "into data science now or wait until I finish the online course I started last month?",
        "我的學歷是普通大學，工作經歷三年行政，技能只有 Office，想轉行做數據分析，現在開始學 Python 和 SQL "
        "來得及嗎？還是應該先去上補習班，或是直接找相關的助理職缺，從基層慢慢往上爬比較實際呢？",
    ),
    "offtopic.zh.request": (
        "面試官叫我講個笑話，要怎麼接",
        "幫我把這封給主管的信翻成英文",
        "面試會考 abstract class 嗎",
        "前端工程師要會 useEffect 嗎",
        "尾牙要上台表演，有推薦的工作場合笑話嗎",
        "我是天氣預報主播，想轉職當公關可以嗎",
        "Python 面試常考 KeyError 嗎",
    ),
    "offtopic.en.request": (
        "my boss asked me to write a poem for the company party, is that part of my job?",
        "how do I translate my job title on my resume",
        "will interviewers ask me to center a div",
        "I'm a chef, how do I move from cooking into a food-tech career",
        "what is a ValueError and will interviewers ask about it",
        "I want to work as a weather forecaster, what degree do I need",
    ),
    "offtopic.zh.errand": (
        "HR 幫我預約了面試，要準備什麼",
        "請病假要先預約門診證明嗎",
        "公司尾牙要訂餐廳，行政可以報加班嗎",
    ),
    "offtopic.en.errand": (
        "my boss asked me to book a table for the client dinner, is that my job?",
        "how do I cancel my LinkedIn Premium subscription",
        "can I reschedule my dentist appointment around my interview",
    ),
    "greet.hello": (
        "你好，我想問怎麼談薪水",
        "hi summer! quick question: how do I ask for a raise",
        "早安～請問面試遲到要怎麼補救",
    ),
    "greet.thanks": (
        "謝謝！那如果對方要我先開價怎麼辦",
        "thanks, one more thing: should I accept the counter offer",
    ),
    "greet.bye": (
        "掰掰之前最後一個問題：要不要接這個 offer",
        "bye for now, but how do I follow up after an interview",
    ),
    "greet.ack": (
        "好，那我要準備什麼作品集",
        "ok so what should I do next about the layoff",
    ),
    "booking.zh.terms": (
        "健身房十堂一起買比較便宜嗎",
        "主管說一對一和團體會議要分開排，我該怎麼安排",
        "上班打卡常常會晚到五分鐘，會被記過嗎",
        "公司的員工諮詢可以用英文嗎",
    ),
    "booking.zh.receipt": (
        "我在會計部負責開發票，抬頭一直打錯會被扣薪嗎",
        "客戶要求發票抬頭改成新公司，業務要怎麼回",
    ),
    "booking.en.with_summer": (
        "my manager wants to book a call with you? no, with the whole team, how do I prep",
        "how do I schedule time with my skip-level for my team's review",
        "can we grab a call with summer interns about the return offers",
    ),
    "resume.zh.passage": (
        "面試的自我介紹我是這樣寫的：「大家好，我叫小明，畢業於政大」，會太長嗎",
        "學歷欄要寫高中嗎",
        "技能要怎麼寫比較好",
    ),
    "resume.en.passage": (
        "can you rewrite this summary of the quarterly report for my boss",
        "how do I write a strong summary section",
        "I updated my slide deck summary, is it better?",
    ),
    "greet.about": (
        "你是誰介紹給我的 HR 嗎，我該怎麼回他",
        "what can you do about a boss who steals credit",
        "你能幫我做什麼樣的職涯規劃",
    ),
}


@pytest.mark.parametrize(
    ("message", "rule_id"),
    [
        # booking in words the rules lacked: asking for Summer, a day named, students, a bundle,
        # arriving late, the language, a group, a receipt for the employer, a confirmation that differs
        ("請問要怎麼約到妳", "booking.zh.reserve"),
        ("這週末還約得到嗎", "booking.zh.reserve"),
        ("幫我約下禮拜二", "booking.zh.reserve"),
        ("我想幫我哥約一次諮詢", "booking.zh.reserve"),
        ("Summer 禮拜六下午有開放嗎", "booking.zh.slot"),
        ("我是大學生 有沒有學生可以用的優惠", "booking.zh.payment"),
        ("三次一起買有比較划算的組合價嗎", "booking.zh.terms"),
        ("週四的諮詢我可能會遲到一下", "booking.zh.terms"),
        ("一對一還是小團體比較適合我", "booking.zh.terms"),
        ("收據抬頭可以寫我們公司嗎 要報帳", "booking.zh.receipt"),
        ("can I get a session with summer before my final round", "booking.en.with_summer"),
        ("is the coaching in english or chinese", "booking.en.session"),
        ("I booked friday but the confirmation says saturday", "booking.en.session"),
        # resume requests in words the rules lacked: a typo, writing one, a passage, a section, attached
        ("幫我看履立", "resume.zh.review"),
        ("可以幫忙寫一份應徵行政助理的求職信嗎", "resume.zh.review"),
        ("轉職信麻煩幫我看看語氣", "resume.zh.review"),
        ("技能：溝通協調、Excel、PowerPoint 這樣寫夠嗎", "resume.zh.passage"),
        ("LinkedIn 的 About 寫好了 幫我潤一下", "resume.zh.review"),
        ("這是我的英文履歷 Summary: Marketing analyst with 3 years", "resume.zh.pasted"),
        ("自傳第二段我改成：「在門市三年，我學會從客人的抱怨裡找到改善的方法」", "resume.zh.passage"),
        ("can you write me a CV? I worked two summers as a lifeguard", "resume.en.review"),
        ("resume attached, be honest", "resume.en.review"),
        ("polish this bullet: organised weekly team events", "resume.en.passage"),
        # off-topic kinds: a speech, transport, a child's homework, a tip, a relative's check-up
        ("幫我想一段生日致詞", "offtopic.zh.request"),
        ("捷運從淡水到動物園要多久", "offtopic.zh.request"),
        ("我女兒的數學作業看不懂", "offtopic.zh.request"),
        ("what's a 10% tip on 2,400", "offtopic.en.request"),
        ("我姊要預約診所的健檢", "offtopic.zh.errand"),
        ("先這樣 改天再聊", "greet.bye"),
    ],
)
def test_booking_resume_and_offtopic_in_new_words(message: str, rule_id: str) -> None:
    matched = match_rules(message)
    assert matched is not None and matched.id == rule_id, (message, matched and matched.id)


@pytest.mark.parametrize(
    "message",
    [
        # the new words used about something else: the employer's receipts, someone else's check-up,
        # the user's own clients, a coworker's time, a job's languages, someone's homework at work
        "我爸要預約醫院的健檢 但我要上班沒辦法陪",
        "老闆要我幫客戶約下週二",
        "主管要怎麼約到大老闆",
        "主管問我你禮拜六下午有空嗎，我該答應加班嗎",
        "學生實習有比較便宜的員工餐嗎",
        "新工作會用到英文嗎",
        "同事的小孩作業要我幫忙，這樣算加班嗎",
        "what's a 15% raise on my salary",
        "should I write a cover letter for every application",
        "how do I write a summary for my resume",
    ],
)
def test_new_words_used_about_work_are_not_booking_resume_or_offtopic(message: str) -> None:
    matched = match_rules(message)
    assert matched is None or matched.intent == "career", (message, matched.id)


def test_every_rule_has_cases_it_must_not_match() -> None:
    assert set(MUST_NOT_MATCH) == set(RULE_IDS)
    for rule_id, cases in MUST_NOT_MATCH.items():
        has_zh = any(_has_han(c) for c in cases)
        has_en = any(not _has_han(c) for c in cases)
        # a rule for one language gets its own language's cases; the others get both
        assert (".zh." in rule_id and has_zh) or (".en." in rule_id and has_en) or (has_zh and has_en), (
            rule_id
        )


def _has_han(text: str) -> bool:
    return any("\u4e00" <= ch <= "\u9fff" for ch in text)


@pytest.mark.parametrize(
    ("rule_id", "message"), [(rule_id, m) for rule_id, cases in MUST_NOT_MATCH.items() for m in cases]
)
def test_rule_does_not_fire_on_its_words_used_about_something_else(rule_id: str, message: str) -> None:
    rule = next(r for r in RULES if r.id == rule_id)
    assert not rule.applies(normalise(message)), f"{rule_id} fired on {message!r}"
    # and no other rule of the same intent takes it instead
    other = match_rules(message)
    assert other is None or other.intent != rule.intent, (other.id, message)


@pytest.mark.parametrize(
    ("message", "veto"),
    [
        ("面試時段可以改嗎", "面試"),
        ("how do I cancel my gym membership", "membership"),
        ("我們的員工諮詢是線上的嗎", "員工"),
        ("my boss wants me to book appointments for my clients", "for my clients"),
    ],
)
def test_layer_two_booking_is_vetoed_by_the_same_words(message: str, veto: str) -> None:
    from careerwise.routing.rules import vetoed

    assert vetoed("booking", message) == veto
    assert vetoed("career", message) is None  # only booking has words used about something else


@pytest.mark.parametrize(
    "message", ["想約一次模擬面試諮詢", "can I book a mock interview with you", "我想預約諮詢"]
)
def test_summers_own_sessions_are_not_vetoed(message: str) -> None:
    from careerwise.routing.rules import vetoed

    assert vetoed("booking", message) is None


@pytest.mark.parametrize(
    ("message", "rule_id"),
    [
        ("幫我寫一首關於海的詩", "offtopic.zh.request"),
        ("你好，講個笑話給我聽", "offtopic.zh.request"),  # a greeting in front does not make it small talk
        ("tell me a joke about cats", "offtopic.en.request"),
        ("幫我看履歷，順便講個笑話", "resume.zh.review"),  # resume wins over off-topic
        ("我想預約諮詢，然後講個笑話", "booking.zh.reserve"),  # booking wins over off-topic
    ],
)
def test_offtopic_rules_and_the_mixed_intent_order(message: str, rule_id: str) -> None:
    rule = match_rules(message)
    assert rule is not None and rule.id == rule_id


@pytest.mark.parametrize(
    ("message", "rule_id"),
    [
        ("can i resheduel", "booking.en.change"),  # a short, typo'd request: only Summer's session
        ("不好意思，想了解一對一的方式跟費用", "booking.zh.price"),
        ("my linkedin summary is so boring, can you rewrite it?", "resume.en.review"),
        ("自傳第一段這樣寫可以嗎：「我從小就喜歡和人相處」", "resume.zh.pasted"),
    ],
)
def test_short_typod_and_profile_requests(message: str, rule_id: str) -> None:
    rule = match_rules(message)
    assert rule is not None and rule.id == rule_id


@pytest.mark.parametrize(
    ("message", "rule_id"),
    [
        # booking words about a personal errand (the booking rules veto them, issue #25)
        ("我想預約下週的牙醫", "offtopic.zh.errand"),
        ("Netflix 會員要怎麼取消", "offtopic.zh.errand"),
        ("book me a table for four tonight", "offtopic.en.errand"),
        ("how do I cancel my gym membership", "offtopic.en.errand"),
        # a translation or a thesis abstract is not the user's job-search document
        ("幫我看一下論文摘要的英文有沒有錯", "offtopic.zh.request"),
        ("can you proofread my thesis abstract", "offtopic.en.request"),
        ("translate this paragraph into Japanese", "offtopic.en.request"),
        # a question about code itself, not about a job
        ("how do I center a div with flexbox", "offtopic.en.request"),
        ("useEffect 一直重跑怎麼辦", "offtopic.zh.request"),
        ("tell me a bedtime story", "offtopic.en.request"),
        # the user's own document stays with the resume rules, Summer's sessions with booking
        ("幫我把自傳翻成英文", "resume.zh.review"),
        ("取消我的諮詢", "booking.zh.change"),
        ("can I reschedule my appointment to friday", "booking.en.change"),
    ],
)
def test_errands_and_translations_are_offtopic(message: str, rule_id: str) -> None:
    rule = match_rules(message)
    assert rule is not None and rule.id == rule_id


@pytest.mark.parametrize(
    ("message", "veto"),
    [
        ("二面可以改時間嗎", "二面"),
        ("can you cancel my gym membership for me", "membership"),
        # the request is the last sentence: another sentence that names a session does not lift the veto
        ("HR 約我明天下午面試。可以改到後天嗎？", "面試"),
        ("我想約一對一。但 HR 約我明天面試，可以改嗎？", "面試"),
        # a story about interviews that ends by asking for one of Summer's sessions is not vetoed
        ("面試一直卡在二面，想不出哪裡有問題。請問一對一諮詢要怎麼報名？", None),
        ("I keep failing final-round interviews. How do I book a session with you?", None),
    ],
)
def test_a_booking_request_after_a_story_is_not_vetoed(message: str, veto: str | None) -> None:
    from careerwise.routing.rules import vetoed

    assert vetoed("booking", message) == veto


@pytest.mark.parametrize(
    ("message", "veto"),
    [
        ("履歷要寫幾頁才夠", "幾頁"),
        ("how many pages should a CV have for a PhD", "how many pages"),
        # a request to work on the user's own document is a resume request, whatever its length
        ("我的履歷太長了，可以幫我刪短一點嗎", None),
        ("my resume is two pages, can you help me cut it to one", None),
        ("review my resume please", None),
        # whether something belongs in a document at all is a general question too
        ("cover letter 要寫幾段", "幾段"),
        ("履歷要不要寫期望薪資", "要不要寫"),
        ("is it a good idea to mention a gap year in my cover letter?", "is it a good idea to mention"),
    ],
)
def test_a_question_about_a_documents_length_vetoes_a_resume_verdict(message: str, veto: str | None) -> None:
    from careerwise.routing.rules import vetoed

    found = vetoed("resume", message)
    assert (found.lower() if found else None) == veto


@pytest.mark.parametrize(
    ("message", "veto"),
    [
        ("Should I cancel my LinkedIn Premium subscription now that I have a job?", "linkedin"),
        ("工作好累，幫我寫首詩", "工作"),
        ("幫我寫一首關於海的詩", None),
        ("how do I center a div", None),
    ],
)
def test_a_word_of_work_vetoes_an_offtopic_verdict(message: str, veto: str | None) -> None:
    from careerwise.routing.rules import vetoed

    found = vetoed("offtopic", message)
    assert (found.lower() if found else None) == veto


# --- tiers: a decision without a listed decision word (issue #25) -----------------------------------


@pytest.mark.parametrize(
    ("message", "reason"),
    [
        ("真的不想幹了 每天上班都好痛苦", "想走人"),
        ("想閃人了啦 這間公司沒救", "想走人"),
        ("我想裸辭 先休息半年", "想走人"),
        ("緯創還是廣達", "A還是B"),
        ("外派越南加薪四成，但女友在台灣，我很掙扎", "兩難"),
        ("薪水多兩萬但要通勤兩小時，好兩難", "兩難"),
        ("Google or a startup for my first job", "A or B?"),
        ("PM or data analyst, which one fits someone from marketing", "which one"),
        ("would it be dumb to take a pay cut to switch into tech", "is it better"),
        ("higher pay vs shorter commute for my next job", "A vs B"),
        ("I'm on the fence about the offer from the bank", "a trade-off"),
        # structural cues: an A-not-A step, the coach asked to choose, a doubted plan, a step named
        ("新公司 offer 到了 薪水高但要外派 接不接", "接不接"),
        ("獵頭挖我去對手公司 加薪但降職 能接嗎", "能接嗎"),
        ("兩個 offer 一間外商一間本土 你會選哪一間", "選哪個"),
        ("換作是你會選哪個", "選哪個"),
        ("我要留在現職等年終嗎", "要…嗎"),
        ("現在辭職去讀研會太衝動嗎", "太…嗎"),
        ("想辭職去日本打工度假", "想走人"),
        ("轉行當 PM 好嗎", "…好嗎"),
        ("去外商或留在本土公司？", "A或B？"),
        ("兩邊都不錯，我心裡很拉扯", "兩難"),
        ("遠端但薪水低，進辦公室但多三成，我卡住了", "stuck between"),
        ("shoud I take the offer", "should I"),
        ("I can't choose, both teams seem great", "can't pick"),
        ("two offers on the table, help me think it through", "can't pick"),
        ("how do I even choose a team", "can't pick"),
        ("thinking about jumping ship to a competitor", "leaving"),
        ("what would you do in my shoes", "what would you do"),
        # a situation that ends in a feeling or an appeal, with a step or an offer in it
        ("新創找我去當技術長 股票很多但薪水砍半 老婆還在請育嬰假 我好迷惘", "a step weighed"),
        ("被調去台中分公司 升一級 可是爸媽年紀大了 最近都睡不著", "a step weighed"),
        ("兩家都錄取了 一家近一家薪水高 你覺得呢", "兩個選項"),
        ("我爸要我回家接工廠 我自己其實比較想留在台北做設計", "別人要我…"),
        ("不接這個外派的話 大概就升不上去了", "…的話"),
        ("已經答應人家了 現在反悔會不會很難看", "這步…嗎"),
        ("got an offer from a bank but my gut says stay at the startup", "a step weighed"),
        ("thinking of a sabbatical to travel, but a gap on my cv terrifies me", "a step weighed"),
        (
            "the safe option is to stay, the fun option is the startup offer, I keep going back and forth",
            "a step weighed",
        ),
        ("is taking a 15% cut for a remote job a sucker move", "what would you do"),
        ("the other company wants an answer tomorrow, do I stall them", "do I take"),
    ],
)
def test_a_decision_without_a_listed_word_is_complex(message: str, reason: str) -> None:
    result = classify_tier(message)
    assert result.tier == "complex" and reason in result.reasons[0], result.reasons


@pytest.mark.parametrize(
    ("message", "tier"),
    [
        ("老闆很機車 每天都要加班到十點 好想離職喔", "medium"),  # a vent names no step to decide on
        ("I work in sales or marketing, how do I write a good LinkedIn summary", "medium"),
        ("what if I arrive late or so", "simple"),  # "or so" names no option
        ("找工作找了半年，我有點卡住", "medium"),  # stuck, but nothing weighed against anything
        ("I'm stuck on my cover letter's first line", "simple"),
        ("或許我該先學 SQL", "simple"),  # 或許 is "perhaps", not "or"
        ("面試會太緊張嗎", "simple"),  # a worry, not a doubted plan
        ("I walked out of the interview early, how do I follow up", "medium"),  # told, not planned
        ("走不走得了要看主管同不同意", "medium"),  # 走不走得了 asks whether one can
        ("午安 請問勞保要怎麼轉出", "simple"),  # a greeting in front is not counted
        # a feeling without a step, or a practical question about a step, is not a decision
        ("今天被主管當眾罵 心很亂 不想說話", "medium"),
        ("下個月要離職了 但特休還有十天沒休完 怎麼辦", "medium"),
        ("離職後勞健保要怎麼接 我有點焦慮", "medium"),
        ("收到錄取通知了 好興奮 報到那天要帶什麼", "medium"),
        ("I'm anxious about my first day at the new job, any tips on what to wear", "medium"),
    ],
)
def test_an_or_or_a_complaint_alone_is_not_a_decision(message: str, tier: str) -> None:
    assert classify_tier(message).tier == tier
