"""classifyTier: how much work a career question deserves (seed 001).

* complex — a decision question (該不該, 要不要, 值得嗎, A還是B, should I, is it worth, A or B?) or more
  than one question: the parallel facets + three agents + merge flow;
* simple  — a short question: 10 units or fewer (a Han character or a Latin word is one unit, see
  ``_text.units``), no decision word: the streamed tool-use flow;
* medium  — anything longer on a single topic: the prompt chain.

A greeting or 請問-style opener is not counted («你好，我想問怎麼談薪水» is simple). The rule table with
the seed's examples is in docs/routing.md; every result says why.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from careerwise.routing._text import HAN, normalise, strip_opener, units

Tier = Literal["simple", "medium", "complex"]
SIMPLE_MAX_UNITS = 10

_H = r"[\u3400-\u9fff]"
# verbs of a step one takes or not (an offer, a job, a school): the objects of a decision
_STEP_CHAR = "[接去走留換辭跳轉簽讀念拿回等]"
_STEP = r"留|走|離職|辭|接|去|換|轉|跳|等|回|讀|念|答應|放棄|簽|繼續|考"

# (label, pattern): the label is what the reason shows
_DECISION_ZH: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (label, re.compile(p))
    for label, p in (
        ("該不該", r"該不[該改]|應不應該|應該不應該"),
        ("要不要", r"要[不部步]要"),
        ("值得嗎", r"值不值得|值得.{0,10}嗎"),
        ("划算嗎", r"划不划算|划算嗎"),
        # 還是 as "or" (留在台灣還是去新加坡), not as "still" (我還是找不到工作)
        ("A還是B", r"(?<![我你妳他她但可卻也都了然就])還是(?![很不沒覺])"),
        ("A還B", rf"{_H}還(?![是有要能在可會沒不很找得行])(?:{_H}{{0,3}}[^嗎呢啊吧\W])[?]"),
        ("選哪個", r"選哪|怎麼選|哪(?:一)?個(?:比較)?好|二選一"),
        ("應該…嗎", r"應該.{0,12}嗎|是不是(?:應)?該"),
        ("適合…嗎", r"適不適合|適合.{0,10}嗎"),
        ("要…嗎", r"(?:^|[,.!?;\s，。])要(?:先)?[^\s,.!?;，。什怎哪多幾]{1,6}嗎"),
        # 「我要留下來等升遷嗎」, 「要先去考 GCP 的證照嗎」: the same question about a step, after 我 or
        # with a Latin word inside; only with a verb of a step one takes or not
        ("要…嗎", rf"(?:^|[,.!?;\s，。]|我)要(?:先)?(?:{_STEP})[^,.!?;，。什怎哪多幾]{{0,12}}嗎"),
        # an A-not-A choice about a step: 接不接, 去不去, 留不留 (not 走不走得了: that asks if one can)
        ("接不接", rf"({_STEP_CHAR})不\1(?![得到了])|答不答應"),
        ("能接嗎", r"(?:能|可以|該)(?:接|答應|簽)(?:下來|下|受)?嗎"),
        # which of the named options the coach would take: 你會去哪一間, 選哪一家
        ("選哪個", r"(?:去|選|挑|接|進)哪一?(?:間|家|個|份|邊)"),
        # a plan the writer doubts: 現在走會太衝動嗎, 28 歲是不是太晚
        ("太…嗎", r"(?:會不會|會|是不是|算不算|算|現在|這樣)太(?:衝動?|冒險|草率|天真|任性|貪心|傻)"),
        # leaving with a step named (「想離職去澳洲打工度假」), or weighed (考慮離職); 「好想離職喔」 names none
        # the coach asked to choose in the writer's place: 換作是你會選哪個, 如果是妳會接嗎
        (
            "換作是你",
            r"(?:換作|換成|如果|要是)是?(?:你|妳)(?:的話)?[,，]?(?:會)?(?:選|去|接|留|走|怎麼選|怎麼做)",
        ),
        # a step and a doubt about it: 離職去讀研好嗎, 轉行當 PM 可以嗎
        (
            "…好嗎",
            r"(?:離職|辭職|轉職|跳槽|轉行|回鍋|讀研|出國)[^，。,？?]{0,10}(?:好嗎|好不好|可以嗎|ok嗎|對嗎)",
        ),
        (
            "想走人",
            r"(?:想|要|打算|準備)(?:要)?(?:離職|辭職|辭掉工作)(?:去|跑去|轉|改|回|出國|讀|念)|(?:考慮|在想要不要)(?:離職|辭職|跳槽)",
        ),
        # a decision without a decision word: slang about leaving (a vent such as 「好想離職喔」 is not
        # one: it names no step), a choice the writer is stuck on, a plan they doubt
        ("想走人", r"不想幹|不幹了|(?:想|要|準備)?閃人|裸辭|想走人|落跑|跑路"),
        (
            "兩難",
            r"猶豫|掙扎|兩難|糾結|拿不定|難以抉擇|難抉擇|取捨|不知道(?:該)?(?:怎麼)?(?:選|決定)"
            r"|拉扯|天人交戰|舉棋不定|左右為難|難選|選不出|(?:很|好|真的)難(?:決定|抉擇)|決定不了|下不了決定",
        ),
        # two options named side by side: 兩個 offer, 一個是…一個是…, 同時拿到, 兩邊都…
        (
            "兩個選項",
            r"(?:兩|2)\s?(?:個|份|家|間)\s?(?:offer|工作|選擇|機會|職缺)|一(?:個|家|間|份)是.{1,30}一(?:個|家|間|份)是"
            r"|兩邊(?:都|薪水|條件)|(?<![a-z])A\s?(?:公司|家|社|方案)[^。]{1,40}(?<![a-z])B\s?(?:公司|家|社|方案)"
            r"|兩個都(?:很)?(?:想|不錯|好)|(?:兩|2)(?:家|間|個)都(?:錄取|上了|給)|一(?:家|間)[^。，,]{1,12}一(?:家|間)|同時(?:拿到|錄取|上了|收到)|(?:offer|錄取)[^。]{0,30}(?:跟|和|同時)[^。]{0,20}(?:offer|錄取|正職|約聘)",
        ),
        # someone else wants one step, the writer another: 我媽叫我考公職 我自己想去當設計師
        (
            "別人要我…",
            r"(?:叫我|要我|找我|希望我|逼我)[^。]{0,24}(?:我)?(?:自己|其實)(?:比較|一直|很)?想"
            r"|(?:叫我|要我|希望我|逼我)(?:回去|回家|去|接|考|轉|換|留)[^。]{0,24}(?:但|可是|不過)(?:我|自己)",
        ),
        # a step weighed by what follows it: 不去的話…, 現在走的話…嗎, 是時候閃了吧, 這個時機 ok 嗎
        (
            "…的話",
            r"(?:不(?:去|接|簽|走|留|答應)[^。，,]{0,8}|現在(?:走|離職|辭職|跳槽)|(?:走|離職|辭職|跳槽|反悔|拒絕)(?:掉)?)的話"
            r"|是時候(?:該)?(?:走|閃|離開|換|離職|跳|轉)|時機[^。]{0,6}(?:ok|好|對|適合|恰當)\s?(?:嗎|吧)",
        ),
        # a step doubted: 反悔會不會…, 是不是在賭, 簽下去好像虧很大, 回頭好像很沒面子, 提了你覺得這個時機 ok 嗎
        (
            "這步…嗎",
            r"(?:反悔|毀約|違約|回頭|回鍋|跳槽|提離職|遞辭呈)[^。]{0,10}(?:會不會|是不是|好像|嗎)"
            r"|是不是在賭|賭一把|(?:簽|接|答應)下去[^。]{0,8}(?:虧|後悔|吃虧)"
            r"|(?:離職|辭職|跳槽|換工作|轉職|轉行|走人)(?:很|好|太|會|有點)?(?:虧|吃虧|可惜|划不來|不值)(?:吧|嗎|耶|啊)"
            r"|直接不(?:來|去)(?:了|上班)|閃了吧",
        ),
        # staying and leaving both on the table: 留下來… 自願離職…
        ("留或走", r"(?=.*留(?:下|任|著))(?=.*(?:離職|離開|走人|資遣))"),
    )
)

# A decision told as a situation that ends in a feeling or an appeal (「…但女友在台北 這幾天一直睡不著」,
# 「…可是現在團隊對我很好 有點捨不得 心很亂」): a step or an offer in the message and a feeling about it,
# or an appeal for a judgement, in a message long enough to tell a situation. A feeling alone (a vent
# about a bad day) names no step and stays medium.
_STEP_WORDS = re.compile(
    r"offer|錄取|職缺|離職|辭職|休學|轉職|轉行|轉做|轉去|跳槽|外派|挖角|調(?:我)?(?:過)?去|報到|留下|創業|開店|直升"
    r"|公職|正職|約聘|換工作|卡位|自願離職|去做|去當|辭掉|外面有(?:間|家|個)|另一(?:間|家|個)|獵頭|新創"
    # a step someone offers the writer or asks of them: 找我去, 升我當, 把我調過去, 希望我回去接手
    r"|(?:找|挖|邀|請|升|調|派)我(?:去|過去|加入|當|做|到)|把我調|(?:希望|要|叫|逼)我(?:回去|回家|去|接|考|轉|換|留)"
    r"|\boffer(?:s|ed)?\b|\bco-?found|\b(?:quit(?:ting)?|leav(?:e|ing)|career break|sabbatical|gap year|resign(?:ing)?|relocat(?:e|ing))\b",
    re.I,
)
_WEIGHED = re.compile(
    r"心很亂|好亂|很亂|亂了|迷惘|迷茫|徬徨|睡不著|捨不得|好痛苦|很痛苦|心癢|(?:很|好|有點|其實很)怕|害怕|不甘心"
    r"|沒面子|虧很大|焦慮|不知所措|卡在這|前景不明|(?:又|也|但|卻)怕|抗拒|不(?:知道|曉得)(?:該)?怎麼辦"
    # an obstacle the writer weighs: age, the family, or a plea after a "but"
    r"|已經\s?(?:\d+|[二三四五]十\S?)\s?歲?了|(?:但|可是|不過)[^。]{0,16}(?:老婆|太太|老公|女友|男友|小孩|家人|爸媽|家裡)"
    r"|想[^。]{0,16}(?:但|可是|不過)[^。]{0,24}怎麼辦"
    r"|幫我(?:想想|想一下|分析|評估|出主意)|想聽聽(?:你|妳)的?(?:看法|意見|建議)|可以考慮嗎|(?:你|妳)會怎麼做"
    r"|\bscares? me\b|\bterrif(?:ies|ied|ying)\b|\b(?:scared|afraid)\b|\bfreaking out\b|\bhelp me think\b|\bgut (?:says|tells)\b"
    r"|\bsure thing\b|\bsafe (?:bet|option|choice|route)\b|\bon paper\b|\bsucker\b"
    r"|\b(?:not sure|unsure|don'?t know|no idea) what to do\b"
    r"|\b(?:everyone|people|my (?:parents|family|friends)) (?:says?|tells? me|wants? me) (?:to )?(?:take|stay|leave|go|accept)\b",
    re.I,
)
# the writer's own wish set against the step with a "but": 可是我只想…, 但我其實比較想…, "but I love …"
_WISH_AGAINST = re.compile(
    r"(?:但|可是|不過|卻)(?:我)?(?:其實|真的|自己)?(?:只|比較|更|還是|一直)(?:想|喜歡|愛)"
    r"|\bbut i (?:really )?(?:love|prefer|(?:would )?rather|want to|enjoy)\b",
    re.I,
)
_SITUATION_MIN_UNITS = 12
# a practical question (how, what, how much) about a step is not a decision, whatever it feels like:
# 「離職後勞健保要怎麼接 我有點焦慮」 asks how, not whether
_HOW_TO = re.compile(
    r"怎麼(?!辦)|怎樣|如何|什麼|哪些|多少|從哪(?:裡)?(?:開始|下手|著手)|\b(?:how (?:do|can|should|to)|what (?:should|do|is|are))\b",
    re.I,
)

_WH = re.compile(r"\b(?:what|how|when|where|who|why)\b", re.I)
# with the usual typos: "shoud I", "shuold I"
_SHOULD = re.compile(r"\b(?:should|shoud|shuold|sould|shold|shud|shall) (?:i|we)\b", re.I)
_DECISION_EN: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (label, re.compile(p, re.I))
    for label, p in (
        ("if I should", r"\b(?:if|whether) (?:i|we) should\b|\bwhether to\b|\bor not\b"),
        (
            "is it worth",
            r"\bworth (?:it|the|a|my|doing|going|leaving|taking|getting)\b|\bis .{0,40}\bworth\b",
        ),
        (
            "is it better",
            r"\bwould it be (?:better|smarter|wiser|dumb|stupid|crazy|a mistake|a bad idea|a good idea)\b"
            r"|\bis it (?:better|wise|smart|a good idea|a mistake|crazy|dumb|stupid|too late)\b"
            r"|\bam i (?:crazy|dumb|stupid|wrong) (?:to|for)\b|\bdoes it make sense to\b",
        ),
        (
            "which one",
            r"\bwhich (?:one |option |offer |path )?(?:should|would)\b|\bwhich (?:one|option|offer|path)\b",
        ),
        (
            "a trade-off",
            r"\bon the fence\b|\bdilemma\b|\btrade-?offs?\b|\bcan'?t decide\b|\bcannot decide\b"
            r"|\bundecided\b|\bsecond thoughts\b|\bweighing (?:up )?(?:an? |the |two |my )?(?:offers?|options?)\b"
            r"|\b(?:keep|kept|keeps|been|i'?m|am) (?:going|flip-?flopping|switching) back and forth\b|\bflip-?flopping\b",
        ),
        (
            "torn between",
            r"\b(?:torn|deciding|choose|choosing|decide|pick) between\b|\bi'?m (?:so |really )?torn\b",
        ),
        (
            "can't pick",
            r"\bcan'?t (?:pick|choose)\b|\bcannot (?:pick|choose)\b|\bthink (?:this|it) (?:through|over)\b"
            r"|\bhelp me (?:decide|choose|pick)\b|\bhow (?:do|should|would|can) (?:i|we) (?:even )?(?:decide|choose|pick)\b",
        ),
        (
            "what would you do",
            r"\bwhat would you (?:do|pick|choose)\b|\bif you were me\b|\bin my shoes\b|\bpull the trigger\b"
            r"|\btake the (?:leap|plunge|jump)\b|\bworth the risk\b"
            r"|\b(?:a |the )?(?:good|bad|right|wrong|smart|dumb|sucker|rookie) (?:move|call)\b",
        ),
        # slang about leaving, as a plan: "thinking of dipping from my job", "thinking about walking out"
        (
            "leaving",
            r"\b(?:thinking|think|considering|contemplating|tempted|planning|gonna|wanna)(?: (?:of|about|to))? (?:quit(?:ting)?|"
            r"leav(?:e|ing)|dip(?:ping)?|walk(?:ing)? out|jump(?:ing)? ship|bounc(?:e|ing)|resign(?:ing)?|"
            r"call(?:ing)? it quits|peac(?:e|ing) out)\b",
        ),
        ("do I take", r"\bdo (?:i|we) (?:take|accept|stay|leave|quit|go|stall|wait|hold out|decline)\b"),
        # two offers named: "got offers from Shopee and a startup", "two job offers"
        (
            "two offers",
            r"\b(?:two|2|both|multiple|a couple of) (?:job )?offers\b|\boffers from\b[^.!?]{1,40}\band\b",
        ),
        # leaving, felt as due: "feels like it's time to move on"
        (
            "time to move on",
            r"\b(?:it'?s|it is|is it) (?:about )?time (?:for me )?to (?:move on|leave|go|quit|jump ship|look elsewhere|"
            r"switch jobs|find (?:a new|another) job)\b",
        ),
        ("A vs B", r"\b(?:vs\.?|versus)\s"),
    )
)
# stuck, when the message weighs one thing against another (「…很自由但薪水低，另一家…，我有點卡住」; "offered
# me team lead but I love coding, kinda stuck"); stuck alone («找工作找到卡住») is not a choice
_STUCK = re.compile(r"卡住|卡關|\bstuck\b", re.I)
_CONTRAST = re.compile(r"但|可是|不過|卻|\bbut\b|\bwhile\b|\bthough\b", re.I)
_OR_QUESTION = re.compile(r"\bor\b", re.I)
_OR_ZH = re.compile(r"(?<![或者])或(?:是|者)?(?![許多少])\S")
# an "or" that names no second option
_OR_FILLER = re.compile(r"\bor (?:so|something|more|less|anything|whatever|two|three|a few)\b", re.I)
_OPTIONS_MAX_UNITS = 14
# a question that asks which of the options: 哪邊, 哪一個, 哪間
_WHICH_ZH = re.compile(r"哪(?:一)?(?:邊|個|間|家|份|種|條)")

# a comma between digits («2,400») is a thousands separator, not a clause break
_CLAUSE_SPLIT = re.compile(r"[。!?；;，\n]|(?<!\d),|,(?!\d)|(?<=[a-z0-9)])\.(?:\s|$)", re.I)
_ZH_MARKER = re.compile(
    r"怎麼|怎樣|如何|什麼|啥|哪|(?<![了好這那十百千])幾|多少|多久|多長|為什麼|嗎|呢|是不是|有沒有|會不會|能不能|可不可以|要不要|該不該"
)
_REPORTED = re.compile(r"被問|問我|問到|問了|問說|問過")
_EN_QUESTION_START = re.compile(
    r"^(?:(?:and|but|so|also|btw|then|or)\s+)*(?:how|what|what's|whats|why|when|where|which|who|should|shall|"
    r"can|could|do|does|did|is|are|am|will|would|any|anyone)\b",
    re.I,
)


@dataclass(frozen=True)
class TierResult:
    tier: Tier
    reasons: list[str]
    units: int
    questions: int


def _clauses(text: str) -> list[tuple[str, str]]:
    """(clause, its terminator) pairs: "?" asked, "." stated, "" a comma or nothing. A space between Han
    characters separates clauses, as a comma would."""
    text = re.sub(rf"(?<={_H})\s+(?={_H})", "，", text)
    out: list[tuple[str, str]] = []
    pos = 0
    for m in _CLAUSE_SPLIT.finditer(text):
        clause = text[pos : m.start()].strip()
        if units(clause):
            mark = m.group().strip()
            out.append((clause, "?" if mark == "?" else "." if mark in ("。", ".", "!") else ""))
        pos = m.end()
    tail = text[pos:].strip()
    if units(tail):
        out.append((tail, ""))
    return out


def _is_question(clause: str, end: str) -> bool:
    if end == "?":
        return True
    if HAN.search(clause):
        if end == "." and not re.search(r"[嗎呢]\W*$", clause):
            return False  # 「寫了幾個小爬蟲。」 states, it does not ask
        m = _ZH_MARKER.search(clause)
        return m is not None and not _REPORTED.search(clause[: m.start() + 1])
    return end != "." and _EN_QUESTION_START.search(clause) is not None


def _decision(text: str, clauses: list[tuple[str, str]]) -> str | None:
    for label, pattern in _DECISION_ZH:
        if pattern.search(text):
            return label
    for label, pattern in _DECISION_EN:
        if pattern.search(text):
            return label
    if _STUCK.search(text) and _CONTRAST.search(text):
        return "stuck between"
    if units(text) >= _SITUATION_MIN_UNITS and _STEP_WORDS.search(text) and not _HOW_TO.search(text):
        weighed = _WEIGHED.search(text)
        if weighed is not None:
            return f"a step weighed («{weighed.group(0)}»)"
        # a step against what the writer wants: «主管說要升我當組長，可是我只想寫 code»
        wish = _WISH_AGAINST.search(text)
        if wish is not None:
            return f"a step against a wish («{wish.group(0)}»)"
    for i, (clause, end) in enumerate(clauses):
        # "should I …" is a decision; "what should I …" / "how much notice should I …" is not
        for m in _SHOULD.finditer(clause):
            if not _WH.search(clause[: m.start()]):
                return "should I"
        # "frontend or backend?": an "or" inside a question, or a short English message that names two
        # options ("Google or a startup for my first job")
        # 「去外商或留在本土公司？」: 或 between two options, inside a question (not 或許, 或多或少)
        # or 或 in a clause followed by a question that asks which: 「外商或本土公司，哪邊比較有利？」
        if HAN.search(clause) and _OR_ZH.search(clause):
            following = clauses[i + 1] if i + 1 < len(clauses) else None
            if _is_question(clause, end) or (
                following is not None and _WHICH_ZH.search(following[0]) and _is_question(*following)
            ):
                return "A或B？"
        names_options = (
            not HAN.search(clause)
            and _OR_QUESTION.search(clause) is not None
            and not _OR_FILLER.search(clause)
        )
        if names_options and (
            _is_question(clause, end) or (len(clauses) == 1 and units(clause) <= _OPTIONS_MAX_UNITS)
        ):
            return "A or B?"
    return None


def asks_a_question(text: str) -> bool:
    """Whether ``text`` has a clause that asks something (the clause rules of :func:`classify_tier`)."""
    return any(_is_question(clause, end) for clause, end in _clauses(normalise(text)))


def classify_tier(message: str) -> TierResult:
    """The tier of a career question, with the reasons (shown on the route event and the trace)."""
    text = normalise(message)
    core = strip_opener(text) or text
    clauses = _clauses(core)
    questions = sum(1 for clause, end in clauses if _is_question(clause, end))
    n = units(core)
    reasons: list[str] = []
    decision = _decision(core, clauses)
    if decision is not None:
        reasons.append(f"decision question ({decision})")
    if questions > 1:
        reasons.append(f"{questions} questions")
    if reasons:
        return TierResult("complex", [f"complex: {'; '.join(reasons)}"], n, questions)
    if n <= SIMPLE_MAX_UNITS:
        return TierResult(
            "simple", [f"simple: {n} units (≤ {SIMPLE_MAX_UNITS}), no decision word"], n, questions
        )
    return TierResult(
        "medium",
        [f"medium: {n} units (> {SIMPLE_MAX_UNITS}), at most one question, no decision word"],
        n,
        questions,
    )
