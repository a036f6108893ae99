"""Layer 1's booking rules, Traditional Chinese then English: booking, changing, cancelling or paying
for a consultation with Summer, and questions about the sessions themselves (format, length, what to
bring, when she is free). They come first in ``rules.RULES`` because a request to book is an action,
whatever else the message asks. Each rule vetoes the words that put its own words to another use (a job
interview's slot, someone else's appointment, an employer's counselling programme, a membership), so a
booking word about something else falls through to the off-topic errand rules or to layer 2.
"""

from __future__ import annotations

from careerwise.routing._rule_base import (
    _ASKED_BY_OTHERS_ZH,
    _INTERVIEW_ZH,
    _OTHERS_BOOKING_ZH,
    _OTHERS_EN,
    _SOMEONE_ELSES_COUNSELLING,
    SUMMERS_SESSION,
    Rule,
    _r,
)

BOOKING_RULES: tuple[Rule, ...] = (
    Rule(
        "booking.zh.reserve",
        "booking",
        _r(
            r"預[約越]|(?:^|我|想|要|以|能|麼|何|跟妳|跟你|和妳|和你)約(?:個|一個|一下)?(?:時間|諮詢|一對一|1對1|面談)"
            r"|可以約(?:嗎|\?)|(?:做|約|報名|安排)(?:一下|一次|個)?(?:下週的)?(?:職涯)?(?:諮詢|一對一|1對1)"
            # asking for Summer herself, whether she can still be booked, or a time named for her
            r"|(?:怎麼|如何|想|要|可以|能|我想)(?:直接|先|再|趕快)?約(?:到)?(?:妳|你|summer)|約得到|約的到|還(?:能|可以)約"
            # her session named as hers, by the user: 「想直接約妳的一對一諮詢」 (not 「主管說要約你的一對一」)
            r"|(?:想|我|我要|我想)(?:直接|先|再)?約(?:妳|你|summer)的?(?:一對一|1對1|諮詢)"
            # meeting her is a session with her: 「下週想跟妳見面聊一次」 (not 「你們」, a group of others)
            r"|(?:想|要|可以|能)(?:先|再)?(?:跟|和|與)(?:妳|你(?!們)|summer)(?:見個面|見一面|見面|當面聊)"
            r"|幫我約(?:在)?(?:這|下|本)?(?:週|禮拜|星期)[一二三四五六日天末]?|幫我約(?:明天|後天)"
            # signing up with words between: 「報名履歷健檢的一對一諮詢」; asking how: 「一對一諮詢要怎麼報名」
            r"|(?:報名|預約|安排)[^。，,?？]{0,8}(?:一對一|1對1)?(?:職涯)?諮詢"
            r"|(?:諮詢|一對一|1對1)[^。，,?？]{0,4}(?:要)?(?:怎麼|如何|在哪裡?)(?:報名|預約|約)"
            # a time held for the user: 「可以幫我保留禮拜五下午的位子嗎」
            r"|(?:保留|留|卡)(?:一個|個)?[^。，,?？]{0,10}(?:週|禮拜|星期|明天|後天|早上|上午|下午|晚上)[^。，,?？]{0,6}"
            r"(?:位子|位置|時段|名額|空檔)"
            # a time and nothing else to hold: 「幫我保留下週二晚上七點」
            r"|^(?:可以)?先?(?:幫我)?(?:保留|留|卡)(?:一下)?(?:這|下|本)?(?:週|禮拜|星期)[一二三四五六日天]"
            r"(?:早上|上午|中午|下午|晚上)?(?:[一二三四五六七八九十兩]{1,3}|\d{1,2})?(?:點|:\d\d)?半?(?:嗎)?$"
        ),
        "asks to book a consultation (預約, 約一對一, 報名諮詢)",
        (
            "我想預約諮詢",
            "想約一對一",
            "可以預越嗎",
            "下週三下午可以約嗎",
            "欸想約諮詢 怎麼弄",
            "請問怎麼約妳",
            "下個月還約得到嗎",
            "幫我約禮拜五早上十點",
            "想替我弟約一次職涯諮詢",
            "想報名下個月的職涯諮詢",
            "一對一諮詢在哪裡報名",
            "可以先幫我留下週三晚上的時段嗎",
            "還是想直接約妳的一對一，這週可以嗎",
            "先幫我保留禮拜四下午三點",
            "這週末可以跟妳見個面聊聊嗎",
        ),
        # booking for someone else or something else (a boss's meeting room, a client visit, a clinic,
        # a family member's check-up, a job interview), or someone else's counselling (an employer's
        # programme, the user's own clients) is not a session with Summer
        exclude=_r(
            rf"{_OTHERS_BOOKING_ZH}|{_INTERVIEW_ZH}|{_SOMEONE_ELSES_COUNSELLING}|{_ASKED_BY_OTHERS_ZH}"
            # someone at work booking the user: 「主管說下週要約你的一對一」
            r"|(?:主管|老闆|hr|人資|同事|客戶|面試官)[^。，,]{0,6}約(?:你|妳|我)"
        ),
        # a story of failed interviews that ends by asking for one of Summer's sessions is a booking
        final_request=SUMMERS_SESSION,
    ),
    Rule(
        "booking.zh.change",
        "booking",
        # 取銷: the usual typo of 取消
        _r(
            r"取[消銷][^，,。?？]{0,6}(?:預約|諮詢)|改期|改時間|換時段|(?:諮詢|預約).{0,8}(?:延後|改期|改時間|取[消銷])"
            # the session named as the one with Summer: 「取消明天跟妳的一對一」
            r"|(?:取[消銷]|延後|改)[^，,。?？]{0,10}(?:跟|和)(?:妳|你|summer)的?(?:一對一|1對1|諮詢|時段)"
            r"|(?:跟|和)(?:妳|你|summer)的?(?:一對一|1對1|諮詢)[^。]{0,8}(?:取[消銷]|延後|改期)"
            # moved to a day named: 「下週四的諮詢我要加班，可以改到週六嗎」
            r"|(?:諮詢|預約|一對一)[^。]{0,16}(?:改|換|挪|延)(?:到|成|在)(?:這|下|本)?"
            r"(?:週|禮拜|星期|明天|後天|早上|上午|下午|晚上|\d)"
        ),
        "changes or cancels a booking",
        (
            "取消我的諮詢",
            "可以改期嗎",
            "明天的諮詢可以延後嗎",
            "明天的諮詢想取銷",
            "禮拜二的諮詢可以挪到禮拜四嗎",
            "下週一晚上跟妳的一對一要取消了",
        ),
        # a job interview's date (面試, 二面, 複試 …), a membership or a subscription, someone else's
        # counselling is not a session
        exclude=_r(rf"{_INTERVIEW_ZH}|{_OTHERS_BOOKING_ZH}|{_SOMEONE_ELSES_COUNSELLING}|會員|訂閱|健身房"),
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
        _r(
            r"付款|刷卡|退費|退款|退錢|學生優惠|學生價|學生方案|轉帳|匯款|收據|發票"
            r"|學生[^，,。]{0,10}(?:便宜|優惠|折扣)|(?:比較)?便宜(?:一點)?的(?:方案|價格)"
        ),
        "asks about paying for a session: payment, refunds, discounts (short messages only)",
        (
            "付款可以刷卡嗎",
            "有學生優惠嗎",
            "沒辦法去的話可以退錢嗎",
            "諮詢可以開發票嗎",
            "我是學生 費用能算便宜一點嗎",
        ),
        max_units=20,
        # money that is not a session's: pay, the employer's or a client's invoices, insurance, shopping
        exclude=_r(
            r"薪|公司|客戶|廠商|老闆|勞保|健保|勞退|稅|房租|學費|保險|訂單|網購|蝦皮|會員|訂閱|健身房|軟體|電信|手機|門號|網路|機票|車票|實習|職缺|工作|午餐|餐廳"
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
            # a day and a time of day named: 「Summer 星期六早上有開放嗎」, 「妳禮拜三晚上有開嗎」
            r"|(?:summer|妳|你|老師)\s*(?:(?:這|下|本)?(?:週|禮拜|星期)[一二三四五六日天末]|平日|假日|週末)\s*"
            r"(?:早上|上午|中午|下午|晚上)?\s*(?:有空|有時間|有開放|有開|開放)"
            r"|(?:還有|有沒有|有)(?:週末|平日|晚上|下週|這週)?的?(?:時段|名額|空檔|空位)"
            # 「妳什麼時候方便？」, 「Summer 禮拜六早上還有位子嗎」
            r"|(?:summer|妳|你|老師)\s*(?:什麼時候|何時|哪天|哪時候)(?:比較)?方便"
            r"|(?:summer|妳|你|老師)\s*(?:(?:這|下|本)?(?:週|禮拜|星期)[一二三四五六日天末]|平日|假日|週末|明天|後天)\s*"
            r"(?:早上|上午|中午|下午|晚上)?\s*(?:還有|有沒有)(?:位子|空位|名額)"
        ),
        "asks when Summer is free",
        (
            "Summer 這週有空嗎",
            "還有週末的時段嗎",
            "老師禮拜天下午有開放嗎",
            "妳哪天比較方便？想跟妳聊聊轉職",
            "summer 下週三晚上還有空位嗎",
        ),
        # an interview's time slot, a job's or a course's openings; "do you have time to look at my
        # resume" asks for a review (the resume rules), not for a slot
        exclude=_r(
            rf"{_INTERVIEW_ZH}|{_ASKED_BY_OTHERS_ZH}|職缺|公司|實習|徵才|招募|課程|研究所|考試|(?:有空|有時間)(?:幫|看)"
            # someone at work asking the user when they are free: a meeting, not a session
            r"|(?:主管|老闆|hr|人資|同事|客戶|廠商|面試官)[^。，,]{0,4}問|開會|會議"
        ),
    ),
    Rule(
        "booking.zh.terms",
        "booking",
        _r(
            r"(?:[二三四五六十兩幾多]|\d+)\s?(?:次|堂)[^。，,]{0,4}(?:一起買|套裝|套票|組合價|一起付)"
            # several sessions bought at once for less: 「買三堂諮詢會比較便宜嗎」
            r"|(?:[二三四五六七八九十兩幾多]|\d+)\s?(?:次|堂)的?(?:諮詢|一對一|1對1)[^。]{0,8}(?:便宜|優惠|折扣|打折|划算)"
            r"|(?:諮詢|預約)[^。]{0,10}(?:遲到|晚到|會晚|晚\s?\d+\s?分)"
            r"|(?:諮詢|一對一|1對1)[^。]{0,6}(?:用|講|說)(?:中文|英文|台語|英語)"
            # a bundle named further on: 「諮詢有沒有買三次送一次那種套票」
            r"|(?:諮詢|一對一|1對1)[^。]{0,14}(?:套票|組合價|買\s?[一二三四五\d]\s?送\s?[一二\d])"
            r"|(?:一對一|1對1)[^。]{0,6}(?:跟|和|與|還是)[^。]{0,6}(?:團體|小團體|小班|團班|多人)"
        ),
        "the terms of the sessions: bundles of several, arriving late, the language, one-to-one or a group",
        (
            "有沒有五次一起買的套票",
            "一口氣報三次一對一會不會比較划算",
            "明天的諮詢我大概會晚十分鐘",
            "一對一可以買五送一嗎",
            "諮詢可以用英文嗎",
            "一對一和小班有什麼不同",
        ),
        exclude=_r(
            rf"{_SOMEONE_ELSES_COUNSELLING}|{_INTERVIEW_ZH}|{_OTHERS_BOOKING_ZH}"
            r"|健身|課程|上課|補習|家教|按摩|美甲|瑜珈|會員|主管|老闆|同事|客戶|會議|上班|打卡"
        ),
    ),
    Rule(
        "booking.zh.receipt",
        "booking",
        _r(
            r"(?:收據|發票|invoice|receipt)[^。，,]{0,8}(?:抬頭|統編|報帳)|(?:抬頭|統編)[^。，,]{0,8}(?:收據|發票|invoice)"
        ),
        "a receipt or an invoice for the session made out to the user's employer (抬頭, 統編, 報帳): the "
        "payment rule vetoes 公司, this one does not",
        ("收據可以開公司的抬頭嗎", "發票可以打我們公司的統編嗎", "可以開 receipt 讓我回公司報帳嗎"),
        max_units=20,
        # issuing invoices as one's job (accounting, clients, suppliers) is a work question
        exclude=_r(r"客戶|廠商|負責|會計|報稅|作廢|幫公司開|我們公司開|開給"),
    ),
    Rule(
        "booking.en.reserve",
        "booking",
        _r(
            r"\b(?:book|schedule|reserve|arrange|set up|sign up for)\b.{0,30}\b(?:sessions?|consultations?|"
            r"coaching|appointments?|1[-: ]?on[-: ]?1|one[- ]on[- ]one|1:1|slots?|mock interviews?)\b"
            r"|\b(?:book|schedule)\b.{0,15}\b(?:call|meeting|time|chat)\b.{0,10}\bwith (?:you|summer)\b"
            r"|\bbook (?:a|an) (?:call|session)\b|\b(?:book|squeeze|fit|pencil) me in\b|\bput me down for\b"
            # the usual typos: «bok a sesion», «bookk a sesson»
            r"|\bbo{1,2}k{1,2}\b.{0,12}\bse?s{1,2}i?on\b"
        ),
        "asks to book a session",
        (
            "book a session",
            "I want to book a consultation",
            "how do I book a call with you",
            "can you pencil me in for thursday morning",
            "bok me a sesion friday pls",
        ),
        # a 1:1 that the user's manager, HR or a recruiter sets up, or booking for someone else (clients,
        # a meeting room), is a workplace question (career); so is a job interview (not a mock one)
        exclude=_r(
            rf"\b(?:manager|boss|supervisor|team lead|hr|recruiter|hiring manager|interviewer)\b|{_OTHERS_EN}"
        ),
    ),
    Rule(
        "booking.en.with_summer",
        "booking",
        _r(
            r"\b(?:book|schedule|reserve|get|grab)\b.{0,20}\b(?:slot|session|call|time|appointment)\b.{0,6}"
            # not the season: "a call with summer interns"
            r"\bwith (?:you|u|summer)\b(?! (?:interns?|internships?|jobs?|break|school|camp|programs?|vacation))"
        ),
        "asks for a slot with Summer by name, whatever the session is for (a job interview to prepare "
        "for does not make it someone else's appointment)",
        ("book me a slot with summer before my interview", "can I grab a call with you this week"),
        # someone else booking the user, or the user booking for others
        exclude=_r(
            r"\b(?:manager|boss|supervisor|team lead|hr|recruiter|hiring manager|interviewer|clients?|customers?)\b"
            r"\s+(?:wants?|asked|booked|scheduled|is booking)|\bfor (?:my|his|her|their|our) (?:boss|manager|clients?|"
            r"customers?|team|friend|sister|brother|kids?)\b"
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
            # the session named first: «我的 session 能不能 reschedule», "my session, can we move it"
            r"|(?:\b(?:my|our)\s|我的\s?)(?:session|booking|appointment|consultation)s?\b.{0,20}"
            r"\b(?:re-?s[ck]?h?ed[a-z]{0,5}|cancel|cancle|postpone)\b"
        ),
        "changes or cancels a booking",
        (
            "can I reschedule my appointment to friday",
            "cancel my booking please",
            "pls reshedule my session",
            "我的 booking 可以 cancel 嗎",
        ),
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
            r"|\b(?:cheaper|discount(?:ed)?|lower|reduced|special) (?:rate|price)s? for (?:\w+ )?students\b"
            r"|\bwhat do (?:you|u) charge\b"
        ),
        "asks what a session costs",
        (
            "how much is a session?",
            "how much do you charge for career coaching",
            "how much do u charge",
            "is there a student discount",
            "any discounted rate for college students",
            "what do u charge for a mock interview",
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
            # the language of a session; a booking whose confirmation does not match
            r"|\b(?:sessions?|consultations?|coaching|calls?)\b.{0,10}\bin (?:chinese|english|mandarin|taiwanese)\b"
            r"|\bi (?:booked|reserved|paid for)\b.{0,60}\b(?:confirmation|reminder|calendar invite)\b"
            # when sessions are held: "do you do sessions on saturday mornings?"
            r"|\b(?:do|can|could) (?:you|u|we)\b.{0,20}\b(?:sessions?|calls?|consultations?|coaching)\b.{0,12}"
            r"\b(?:on |at )?(?:weekends?|saturdays?|sundays?|mondays?|tuesdays?|wednesdays?|thursdays?|fridays?|"
            r"evenings?|mornings?|afternoons?|nights?|lunch)\b"
            # arriving late for it: "running 10 min late for our call"
            r"|\blate\b.{0,12}\b(?:for|to) (?:our|my|the|your) (?:session|call|consultation|appointment)\b"
        ),
        "asks about the sessions themselves: payment state, refunds, format, what to bring, length",
        (
            "will I get a refund for the session I missed",
            "my booking shows paid but no confirmation email",
            "do you do video sessions",
            "is the consultation online or in person",
            "what should I prepare for our session",
            "how long does a session last",
            "can we do the call in mandarin",
            "I reserved monday 10am but the reminder says tuesday",
            "can we do the coaching call on a sunday",
            "gonna be a few minutes late to our session",
        ),
        exclude=_r(
            rf"{_OTHERS_EN}|\b(?:gym|therapy|therapist|trainer|yoga|pilates|dentist|doctor|class(?:es)?|course)\b"
            r"|\b(?:flight|hotel|airbnb|table|tickets?|concert|train|bus|car|tour|hostel)\b"
            # a call or a session at work: with a client, for the boss, the team's
            r"|\b(?:boss|manager|supervisor|clients?|customers?|coworkers?|colleagues?|team|recruiter|hr)\b"
        ),
    ),
    Rule(
        "booking.en.availability",
        "booking",
        _r(
            r"\b(?:are you|is summer|you'?re|you are|ur|u r) (?:free|available)\b|\byour (?:availability|calendar)\b"
            r"|\b(?:available|open) (?:slots?|times?|sessions?)\b|\bwhat times are (?:available|open)\b"
            # "is there still availability on thursday?", "what time slots are available next week"
            r"|\b(?:is there|are there|any|do you have|still have) (?:still |any )?(?:availability|slots?|spots?)\b"
            r"|\b(?:time )?slots? (?:are |is )?(?:still )?(?:available|open|free)\b"
            # "got anything free on thursday?": a time asked for, and nothing else named that could be open
            r"|\b(?:anything|something|any ?time)\s+(?:open|free|available)\b(?=.{0,25}\b(?:today|tonight|tomorrow|"
            r"this|next|weekends?|mondays?|tuesdays?|wednesdays?|thursdays?|fridays?|saturdays?|sundays?|mornings?|"
            r"afternoons?|evenings?)\b)"
        ),
        "asks when Summer is free",
        (
            "are you free next tuesday?",
            "any chance you're available thursday night",
            "what times are available this week",
            "any availability next monday",
            "which time slots are still open",
            "got anything free thursday evening?",
        ),
        # someone else asking the user (a boss: "are you free this weekend?"), an interview's slots, the
        # places of a course, an exam, a job or an outing
        exclude=_r(
            rf"\b(?:boss|manager|recruiter|hr|coworker|colleague|client|team lead)\b|{_OTHERS_EN}"
            r"|\b(?:class(?:es)?|course|bootcamp|workshop|exam|test|gym|flight|hotel|tickets?|concert|program(?:me)?"
            r"|school|university|internships?|jobs?|positions?|roles?|openings?|office|department|company|team"
            r"|headcount)\b"
        ),
    ),
)
