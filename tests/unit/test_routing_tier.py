"""classifyTier: the seed's table (docs/routing.md) and the decisions phrased without a decision word
(issue #25). Deterministic, no model."""

from __future__ import annotations

import pytest

from careerwise.routing import classify_tier
from careerwise.routing._text import normalise, strip_opener, units

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
        ("the safe option is to stay, the fun option is the startup offer", "a step weighed"),
        ("is taking a 15% cut for a remote job a sucker move", "what would you do"),
        ("the other company wants an answer tomorrow, do I stall them", "do I take"),
        # issue #25, part 5: a choice between named options, a step against the writer's wish or
        # urged by someone else, a step weighed by its cost, leaving felt as due, indecision in English
        ("面談了兩間，一間是新創正職，一間是大廠派遣，兩邊都在等我回覆", "兩個選項"),
        ("A 公司離家近但薪水低，B 公司薪水高但要輪班", "兩個選項"),
        ("這兩個職缺待遇跟發展都差不多，好難選", "兩難"),
        ("新創或大公司，哪個對轉職的人比較好？", "A或B？"),
        ("快發年終了，現在離職很虧吧", "這步…嗎"),
        ("爸媽希望我回去考公職，但我在台北做設計做得很開心", "別人要我…"),
        ("老闆要升我當主管，可是我只想做技術，不過薪水真的多很多", "a step against a wish"),
        ("獵頭找我去一間新創，薪水多三成，但又怕公司撐不久", "a step weighed"),
        ("公司想把我調過去新部門，待遇一樣，其實有點心癢", "a step weighed"),
        ("got offers from a bank and a game studio, the bank pays more", "two offers"),
        ("feels like it's time to move on from this team", "time to move on"),
        (
            "a recruiter offered me a senior role at a competitor, honestly not sure what to do",
            "a step weighed",
        ),
        ("I keep going back and forth about the remote job", "a trade-off"),
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
        # 幾 after a numeral says "some" (二十幾家), so this is one question, not two
        ("投了二十幾家都沒回，大家都怎麼寫自傳比較好", "medium"),
        # a step done, with a "but" that is no wish of the writer's; a step and a practical question
        ("離職手續好麻煩，可是公司一直拖，但我下週就要報到了", "medium"),
        ("主管要我幫客戶訂會議室，可是我不是行政，這算我的工作嗎", "medium"),
        ("想轉職，但我真的不想再做帳了，該從哪裡開始準備比較實際", "medium"),
        # 或 in a clause followed by a question that is not "which": not a choice
        ("履歷或作品集，通常 HR 會先看完才決定嗎", "medium"),
        ("my boss offered me a raise, how do I respond politely", "medium"),
        ("it's time to update my resume, any tips on the summary", "medium"),
    ],
)
def test_an_or_or_a_complaint_alone_is_not_a_decision(message: str, tier: str) -> None:
    assert classify_tier(message).tier == tier
