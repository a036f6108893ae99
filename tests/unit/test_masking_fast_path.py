"""``mask_text`` returns a string untouched after one scan when no pattern could match; that quick exit
must never let personal data through: on every string below it gives what the nine patterns give."""

from __future__ import annotations

import random

import pytest

from careerwise.tracing.masking import _mask_all, mask_text

PERSONAL = [
    "信箱是abc@gmail.com謝謝",
    "call 0912-345-678 now",
    "手機0912345678",
    "+886 912 345 678",
    "(02)2345-6789",
    "02-2345-6789 分機 12",
    "+44 20 7946 0958",
    "(415) 555-0100",
    "415.555.0100",
    "身分證 A123456789",
    "LINE ID abc_123",
    "line id: summer.tw",
    "賴：myline99",
    "Line: @coach",
    "地址：台北市信義區",
    "- Email: me@example.org",
    "電話 (07)123-4567",
]
PLAIN = [
    "面試怎麼準備",
    "embedding: career 0.912 (threshold 0.800), greeting 0.301, margin 0.611",
    "2025-2026 salary 45,000 to 1200000, up 12 %",
    "the opening line: keep it short",
    "v1.2.3 build 4f3a9c",
    "０９１２３４５６７８",  # full-width digits: the patterns leave them (the quick exit must agree)
    "",
]


@pytest.mark.parametrize("text", PERSONAL + PLAIN)
def test_the_quick_exit_agrees_with_every_pattern(text: str) -> None:
    assert mask_text(text) == _mask_all(text)


def test_personal_data_still_gets_masked() -> None:
    for text in PERSONAL:
        assert mask_text(text) != text, text


def test_random_strings_agree() -> None:
    rng = random.Random(20261130)
    alphabet = "0123456789０９ -.()+#:：@賴lineLINEidID信箱電話 abcxyzA中文，。?"
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 40)))
        assert mask_text(text) == _mask_all(text), text
