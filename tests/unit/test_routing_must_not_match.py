"""What each layer-1 rule must not match: its words used about something else (issue #25), one case
list per rule id, in zh-TW and English; and the new wordings each rule must take."""

from __future__ import annotations

import pytest

from careerwise.routing import RULES, match_rules
from careerwise.routing._text import normalise

RULE_IDS = [r.id for r in RULES]

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
