"""Reading the user's side of a chat booking dialogue: commands, yes / no, a picked slot. Pure functions.

The words are Traditional Chinese and English, as users type them on the web and on LINE.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from datetime import datetime
from typing import Literal
from zoneinfo import ZoneInfo

Command = Literal["list", "cancel", "reschedule"]
STEPS = ("pick", "name", "contact", "confirm", "choose", "confirm_cancel", "done")


def _r(p: str) -> re.Pattern[str]:
    return re.compile(p, re.I)


_LIST = _r(
    r"我的預約|(?:查|看)(?:詢|看|一下)?(?:我的)?(?:預約|諮詢)|預約(?:紀錄|記錄|清單|狀態)|有(?:哪些|什麼)預約"
    r"|\bmy (?:bookings?|appointments?|sessions?)\b|\b(?:list|show|see|view)\b.{0,10}\b(?:bookings?|appointments?)\b"
)
_CANCEL = _r(
    r"取消(?:我的|這個|那個)?(?:預約|諮詢|時段)|(?:預約|諮詢).{0,6}取消"
    r"|\bcancel\b.{0,15}\b(?:bookings?|appointments?|sessions?|consultations?)\b"
)
_RESCHEDULE = _r(
    r"改期|改時間|換時段|換時間|改(?:到|成)別的時間|(?:預約|諮詢).{0,8}延後"
    r"|\b(?:reschedule|re-schedule|postpone)\b|\b(?:move|change)\b.{0,15}\b(?:bookings?|appointments?|sessions?)\b"
)
_ABORT = _r(
    r"^(?:取消|算了|不用了|不要了|先不用|先不要|放棄|停止|結束|cancel|stop|quit|exit|never ?mind|forget it)"
    r"(?:了|吧|啦)?[\s。!！.~]*$"
)
_YES = _r(
    r"^(?:確認|確定|是|是的|對|好|好的|可以|沒問題|ok|okay|yes|y|yep|sure|confirm|確認預約|確定預約)"
    r"(?:了|喔|哦|吧|啦)?[\s。!！.~]*$"
)
_NO = _r(r"^(?:不|不要|否|不是|no|n|nope|不用)(?:了|喔|吧|啦)?[\s。!！.~]*$")
_MORE = _r(r"^(?:更多|其他時段|其他時間|下一頁|還有嗎|more|next|other times?|show more)[\s。!！.?？~]*$")
_NUMBER = _r(r"^\s*(?:第\s*|no\.?\s*|#)?(\d{1,2})\s*(?:個|號|号|個時段)?\s*[。.!！]?\s*$")
_DATE_TIME = _r(
    r"(?:(\d{4})\s*[-/年]\s*)?(\d{1,2})\s*[-/月]\s*(\d{1,2})\s*[日號号]?\s*(?:[(（][^)）]{0,3}[)）])?\s*"
    r"(?:(上午|早上|下午|晚上)\s*)?(\d{1,2})\s*(?:[:：點点]\s*(\d{2})?)"
)
_TIME = _r(r"(?:(上午|早上|下午|晚上)\s*)?(\d{1,2})\s*(?:[:：]\s*(\d{2})|[點点]\s*(\d{2})?(?:分)?)")


def normalise(text: str) -> str:
    return unicodedata.normalize("NFKC", text).strip()


def command(text: str) -> Command | None:
    t = normalise(text)
    if _CANCEL.search(t):
        return "cancel"
    if _RESCHEDULE.search(t):
        return "reschedule"
    if _LIST.search(t):
        return "list"
    return None


def is_abort(text: str) -> bool:
    return _ABORT.match(normalise(text)) is not None


def is_yes(text: str) -> bool:
    return _YES.match(normalise(text)) is not None


def is_no(text: str) -> bool:
    return _NO.match(normalise(text)) is not None


def wants_more(text: str) -> bool:
    return _MORE.match(normalise(text)) is not None


def number(text: str) -> int | None:
    m = _NUMBER.match(normalise(text))
    return int(m.group(1)) if m else None


def _hour(period: str | None, hour: int) -> int:
    if period in ("下午", "晚上") and hour < 12:
        return hour + 12
    return hour


def pick(text: str, offered: Sequence[datetime], tz: ZoneInfo) -> datetime | None:
    """The offered slot the user means: its number ("2", "第2個"), a date and time ("12/02 14:00",
    "12月2日 下午2點"), or a time alone when exactly one offered slot is at that time."""
    t = normalise(text)
    n = number(t)
    if n is not None:
        return offered[n - 1] if 1 <= n <= len(offered) else None
    local = [(s, s.astimezone(tz)) for s in offered]
    m = _DATE_TIME.search(t)
    if m:
        year, month, day = m.group(1), int(m.group(2)), int(m.group(3))
        hour, minute = _hour(m.group(4), int(m.group(5))), int(m.group(6) or 0)
        for s, loc in local:
            if (loc.month, loc.day, loc.hour, loc.minute) == (month, day, hour, minute) and (
                year is None or int(year) == loc.year
            ):
                return s
        return None
    m = _TIME.search(t)
    if m:
        hour = _hour(m.group(1), int(m.group(2)))
        minute = int(m.group(3) or m.group(4) or 0)
        hits = [s for s, loc in local if (loc.hour, loc.minute) == (hour, minute)]
        return hits[0] if len(hits) == 1 else None
    return None


def looks_like_answer(step: str, text: str) -> bool:
    """Whether a message plausibly answers ``step`` (the engine then keeps it in the booking flow).
    A question ("怎麼談薪水？") or a long message is not an answer: it is routed as usual."""
    t = normalise(text)
    if is_abort(t) or command(t) is not None:
        return True
    question = "?" in t or "？" in t
    if step == "pick":
        return number(t) is not None or wants_more(t) or (len(t) <= 30 and any(c.isdigit() for c in t))
    if step == "choose":
        return number(t) is not None
    if step == "name":
        return len(t) <= 40 and not question
    if step == "contact":
        return len(t) <= 120 and not question
    if step in ("confirm", "confirm_cancel"):
        return is_yes(t) or is_no(t) or (len(t) <= 12 and not question)
    if step == "done":
        return is_yes(t)
    return False
