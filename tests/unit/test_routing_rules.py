"""Layer 1 (rules, by id): deterministic, no model. What each rule must not match is in
test_routing_must_not_match.py, classifyTier in test_routing_tier.py."""

from __future__ import annotations

import pytest

from careerwise.routing import RULES, RulesRouter, match_rules

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
        # other people's resumes in the user's hands: screening applicants is a question about work
        ("老闆要我幫忙看應徵者的履歷，要注意什麼", "要我幫"),
        ("my manager asked me to review the resumes for the new role", "asked me to review"),
        ("朋友說妳可以幫我看履歷，可以嗎", None),
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


@pytest.mark.parametrize(
    ("message", "vetoed_as_greeting"),
    [
        ("嗨～想問一下面試要穿什麼比較好？", True),
        ("hi Summer! how do I ask my manager for a raise?", True),
        ("你好呀，最近過得好嗎", False),  # small talk after the greeting
        ("哈囉 Summer，今天天氣真好", False),  # no question at all
        ("thanks Summer 你人真好", False),
        ("這個 app 是哪間公司做的啊", False),  # no opener: a question about Summer herself
    ],
)
def test_a_question_of_work_after_a_greeting_vetoes_a_greeting_verdict(
    message: str, vetoed_as_greeting: bool
) -> None:
    """The same veto for layer 2 and the LLM: a greeting in front of a question is labelled by the question."""
    from careerwise.routing.rules import vetoed

    assert (vetoed("greeting", message) is not None) == vetoed_as_greeting
