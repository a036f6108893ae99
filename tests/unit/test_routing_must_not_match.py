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
        "主管叫我保留下週三下午",
        "主管說下週要約你的一對一，我該準備什麼",
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
        # signing up for someone else's counselling, a haircut, a table; a story whose last clause is
        # not a request for Summer's session
        "公司的員工諮詢要怎麼報名",
        "想報名勞工局的就業諮詢，要帶什麼",
        "想燙頭髮 幫我約下禮拜二",
        "幫我保留週五晚上火鍋店的位子",
        "面試一直被刷掉，HR 說可以報名公司提供的職涯諮詢，要怎麼報名",
        "報名了學校職涯中心的諮詢，還是很迷惘",
        "主管的一對一要怎麼約比較好",
        # meeting someone other than Summer: a recruiter, the team, a manager who wants to meet the user
        "獵頭說想跟你們見面，要準備什麼",
        "主管說想跟你見面談調薪，我該怎麼回",
        "新公司的主管想先跟我見面，要穿正式嗎",
    ),
    "booking.zh.change": (
        "主管又取消跟我的一對一，是不是不重視我",
        "二面可以改期嗎？會不會扣分",
        "我想把複試改時間，要怎麼跟 HR 開口",
        "健身房會員可以取消嗎",
        "幫老闆把客戶會議改期，結果被罵",
        "下週四的二面可以改到週六嗎",
        "公司的心理諮詢可以改到下禮拜嗎",
        "跟主管的一對一改到週五，要準備什麼",
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
        "客戶問你哪天比較方便開會，要怎麼回",
        "HR 問妳什麼時候方便面試",
        "面試官問我下週哪個時段有空，要怎麼回比較好",
        "這家公司的實習還有名額嗎",
        "你有時間幫我看一下履歷嗎",
    ),
    "booking.en.reserve": (
        "my boss wants to book a sesion with the client",
        "my boss asked me to book appointments for his clients, is that part of my job?",
        "how do I book a meeting with my skip-level manager",
        "should I schedule my interview in the morning or afternoon",
        "how do I book a conference room for my team's offsite",
    ),
    "booking.en.change": (
        "my session with the recruiter got cancelled, what now",
        "can I cancel my interview",
        "can I reschedule my second-round interview without looking bad",
        "how do I cancel my gym membership",
        "I had to reschedule a client appointment twice, will my boss be mad",
    ),
    "booking.en.price": (
        "is there a cheaper rate for students at the gym",
        "how much should I charge per session as a freelance designer",
        "what's a fair price for my tutoring sessions",
        "how much do therapy sessions cost in Taipei",
    ),
    "booking.en.session": (
        "my gym won't refund the personal training sessions I missed",
        "is my company's counselling programme online or in person",
        "what should I prepare for the interview session with the hiring manager",
        "the gym runs sessions on saturday mornings, should I skip them before a job interview",
        "I'm running late for the call with my client, how do I tell my boss",
    ),
    "booking.en.availability": (
        "anything open in marketing right now?",
        "is anything open at the office on saturday",
        "my boss texted 'are you free this weekend?' should I answer",
        "the recruiter sent me available slots for the interview",
        "are there any slots left in the AWS bootcamp",
        "is there availability in the Tokyo office for transfers",
        "my boss asked if I have any availability on saturday",
    ),
    "resume.zh.review": (
        "救救我 HR 叫我幫忙篩履歷",
        "請問履歷要放照片嗎",
        "可以在履歷上寫離職原因嗎",
        "HR 說會幫我把履歷轉給主管，要等多久",
        "幫我看一下論文摘要的英文有沒有錯",
        # the user handling other people's resumes: screening at work, helping at someone's request
        "老闆要我幫忙看應徵者的履歷，要注意什麼",
        "我負責篩履歷，要怎麼判斷誰適合",
        "學弟請我幫他看履歷，要怎麼給建議比較好",
        "104 的自我介紹要寫多長",
        # someone else's document: by a pronoun or a person, or written for a character
        "學妹想請我看一下她的履歷，我該怎麼回她",
        "我同事的履歷要怎麼幫他改比較好",
        "幫海綿寶寶寫一份搞笑履歷，尾牙表演要用",
    ),
    "resume.zh.pasted": (
        "履歷這樣寫可以嗎",
        "這是履歷常見的錯誤嗎",
        "以下是履歷範本的問題：要用哪一種",
        "證照影本要放在履歷下面還是另外附",
        "履歷放這邊的平台會被 HR 看到嗎",
    ),
    "resume.en.review": (
        "my resume or my portfolio, which one is better?",
        "how do I turn my internship into a resume bullet",
        "how do I trim my resume down to one page",
        "how do I write a good linkedin summary",
        "how do I make my resume stand out",
        "should I send my resume as a PDF or a Word file",
        "the recruiter said they would review my resume this week, how long should I wait",
        "can you proofread my thesis abstract",
        "my manager asked me to review the resumes for the new analyst role",
        "I'm screening applicants for my team, any red flags in a resume I should look for",
        # the document's gap, length or help desk is not the document: a general question
        "I need help with my resume gap in interviews, what do I say",
        "thoughts on my resume being 3 pages? is that too long",
        "my resume help center at uni is closed, where else can I go",
        "my friend needs help with her resume, how can I help",
        "recruiters are harsh about my cv gap, how do I explain it",
    ),
    "resume.pasted": (
        "I have a CS education, three years of experience in QA, and skills in Python and SQL. Should I move "
        "into data science now or wait until I finish the online course I started last month?",
        "我的學歷是普通大學，工作經歷三年行政，技能只有 Office，想轉行做數據分析，現在開始學 Python 和 SQL "
        "來得及嗎？還是應該先去上補習班，或是直接找相關的助理職缺，從基層慢慢往上爬比較實際呢？",
    ),
    "offtopic.zh.request": (
        "寫一首關於加班的 rap",
        "工作壓力大到失眠怎麼辦",
        "被炒魷魚之後要怎麼做",
        "炒股要怎麼做才不會賠",
        "面試官叫我講個笑話，要怎麼接",
        "幫我把這封給主管的信翻成英文",
        "面試會考 abstract class 嗎",
        "前端工程師要會 useEffect 嗎",
        "尾牙要上台表演，有推薦的工作場合笑話嗎",
        "我是天氣預報主播，想轉職當公關可以嗎",
        "Python 面試常考 KeyError 嗎",
        "公司新人訓要交讀後感，算工作時數嗎",
    ),
    "offtopic.en.request": (
        "any jokes for my team's year-end party?",
        "my history essay won a prize, should I list it on my CV",
        "my boss asked me to write a poem for the company party, is that part of my job?",
        "how do I translate my job title on my resume",
        "will interviewers ask me to center a div",
        "I'm a chef, how do I move from cooking into a food-tech career",
        "what is a ValueError and will interviewers ask about it",
        "I want to work as a weather forecaster, what degree do I need",
    ),
    "offtopic.zh.errand": (
        "老闆叫我幫忙訂尾牙的餐廳",
        "想預約眼科醫師的職缺面試",
        "HR 幫我預約了面試，要準備什麼",
        "請病假要先預約門診證明嗎",
        "公司尾牙要訂餐廳，行政可以報加班嗎",
        "主管要我幫客戶訂十個人的燒肉，算加班嗎",
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
        "thx 妳人真好 那薪水怎麼談",
        "謝謝！那如果對方要我先開價怎麼辦",
        "thanks, one more thing: should I accept the counter offer",
    ),
    "greet.bye": (
        "那先這樣吧，我要辭職了",
        "掰掰之前最後一個問題：要不要接這個 offer",
        "bye for now, but how do I follow up after an interview",
    ),
    "greet.ack": (
        "好，那我要準備什麼作品集",
        "ok so what should I do next about the layoff",
    ),
    "booking.zh.terms": (
        "健身房一對一教練課有買五送一嗎",
        "教練說買十堂一對一健身課比較划算",
        "健身房十堂一起買比較便宜嗎",
        "主管說一對一和團體會議要分開排，我該怎麼安排",
        "上班打卡常常會晚到五分鐘，會被記過嗎",
        "公司的員工諮詢可以用英文嗎",
    ),
    "booking.zh.receipt": (
        "客戶要我開 invoice 給他們報帳",
        "我在會計部負責開發票，抬頭一直打錯會被扣薪嗎",
        "客戶要求發票抬頭改成新公司，業務要怎麼回",
    ),
    "booking.en.with_summer": (
        "my manager wants to book a call with you? no, with the whole team, how do I prep",
        "how do I schedule time with my skip-level for my team's review",
        "can we grab a call with summer interns about the return offers",
    ),
    "resume.zh.passage": (
        "自我介紹那段我寫「大家好我是小王」，面試時講會不會太短",
        "面試的自我介紹我是這樣寫的：「大家好，我叫小明，畢業於政大」，會太長嗎",
        "學歷欄要寫高中嗎",
        "技能要怎麼寫比較好",
        # a line addressed to someone, or from an email, is a message, not a resume bullet
        "幫我把這句改得委婉一點：負責這案子的是你，不是我",
        "這句幫我改客氣一點：「負責窗口下週會回覆您」，要寄給客戶的信",
    ),
    "resume.en.passage": (
        "can you rewrite this summary of the quarterly report for my boss",
        "how do I write a strong summary section",
        "I updated my slide deck summary, is it better?",
        'my boss wrote "Led the project poorly" in my appraisal, is that fair or should I rewrite my goals',
        'I\'ll post "Launched the new build, please test" in the team chat, does it sound ok?',
        "Quick question: managed services or product company, which is better?",
        "Managed to get an offer of 80k, is it better to accept now?",
    ),
    "resume.inline": (
        "學歷：政大企管 經歷：業務三年 技能：英文，這樣的背景適合轉 PM 嗎",
        "Education: BA history, Experience: 2 years retail, Skills: Excel. Should I move into data?",
        "學歷：要寫到高中嗎？",
    ),
    "greet.thanks_after": (
        "跟妳聊完我決定接 offer 了，謝謝妳",
        "下週一下午 謝謝",
        "聊完好多了，可以再幫我看一次履歷嗎 謝謝",
        "that helped a lot, can you also check my cover letter? thanks",
        "I'd like a haiku about cats, thanks",
    ),
    "greet.about": (
        "你喜歡前端還是後端",
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
        # issue #25, part 5: booking after a story of interviews, signing up with words between, a time
        # held, a session moved to a day, sessions on a day, running late, availability asked
        ("面試連續被刷，想請妳幫忙看看問題在哪，一對一諮詢在哪裡報名？", "booking.zh.reserve"),
        ("我想報名一次履歷健檢的諮詢", "booking.zh.reserve"),
        ("可以幫我保留下週二晚上的時段嗎", "booking.zh.reserve"),
        ("週三的諮詢我要出差，可以換到下週一嗎", "booking.zh.change"),
        ("do you hold sessions in the evening?", "booking.en.session"),
        ("I'll be 5 minutes late to our session, sorry", "booking.en.session"),
        ("any availability for a call next friday?", "booking.en.availability"),
        # resume: a request after the story, a job site's self-introduction, a bullet to rewrite, a
        # resume pasted with inline headings, a review asked for loosely in English
        ("應徵了半年都沒消息，可能是簡歷寫得不好，可以幫我看看嗎", "resume.zh.review"),
        ("1111 上的自介幫我改一下", "resume.zh.review"),
        ("這段幫我改順一點：規劃新人訓練課程，離職率下降一半", "resume.zh.passage"),
        ("林大同 學歷：中央大學 經歷：門市店長 技能：排班、庫存", "resume.inline"),
        ("does this sound ok: «Reduced onboarding time from 3 weeks to 5 days»", "resume.en.passage"),
        ("my resume gets zero callbacks, would you mind having a look at it", "resume.en.review"),
        ("thoughts on my cv?", "resume.en.review"),
        ("cover letter help pls", "resume.en.review"),
        ("履歷幫看", "resume.zh.review"),
        ("自傳寫得好爛 救命", "resume.zh.review"),
        # off-topic: a personal service with the booking word after it, a table for a number of people,
        # one's own homework
        ("想去按摩 幫我約明天晚上", "offtopic.zh.errand"),
        ("幫我訂今晚八位的位子", "offtopic.zh.errand"),
        ("報告寫不完了，幫我寫一篇讀後感", "offtopic.zh.request"),
        # greeting: how the talk went, then the thanks
        ("聊一聊心情輕鬆多了 謝謝妳", "greet.thanks_after"),
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
