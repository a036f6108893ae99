"""Layer 1: free, deterministic rules, each with an id, in Traditional Chinese and English."""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Rule:
    id: str
    intent: str
    pattern: re.Pattern[str]
    max_chars: int | None = None  # only short messages (a greeting inside a long question is not one)


def _r(p: str) -> re.Pattern[str]:
    return re.compile(p, re.I)


RULES: tuple[Rule, ...] = (
    Rule(
        "greet.zh",
        "greeting",
        _r(
            r"^\s*(你好|您好|哈囉|嗨|安安|早安|午安|晚安|hello|hi|hey)[\s!！~～。.,，呀啊]*(summer)?[\s!！~～。.]*$"
        ),
        20,
    ),
    Rule(
        "thanks.zh",
        "greeting",
        _r(r"^\s*(謝謝|感謝|多謝|3q|thx|thanks|thank you)[\s\w!！~～。.,，你妳您啦喔囉summer]*$"),
        24,
    ),
    Rule(
        "resume.review",
        "resume",
        _r(
            r"(履歷健檢|幫我(看|改|檢查)(一下)?(我的)?履歷|履歷(可以)?幫我看|review (my )?(resume|cv)|check my (resume|cv))"
        ),
    ),
    Rule(
        "booking.request",
        "booking",
        _r(
            r"(預約(諮詢|時段|一對一)|我想預約|約(一個)?諮詢|book (a )?(session|consultation|call)|schedule (a )?(session|consultation|call))"
        ),
    ),
)


def match_rules(message: str) -> Rule | None:
    text = message.strip()
    for rule in RULES:
        if rule.max_chars is not None and len(text) > rule.max_chars:
            continue
        if rule.pattern.search(text):
            return rule
    return None
