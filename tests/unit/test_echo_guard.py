"""The answer's opening that says the search instruction back is not shown (llm/echo.py)."""

from __future__ import annotations

import pytest

from careerwise.llm.echo import EchoGuard
from careerwise.tools.search_knowledge import ANSWER_FROM_PASSAGES

ZH, EN = ANSWER_FROM_PASSAGES


def _stream(guard: EchoGuard, text: str, step: int) -> str:
    shown = "".join(guard.push(text[i : i + step]) for i in range(0, len(text), step))
    return shown + guard.flush()


@pytest.mark.parametrize("step", [1, 3, 1000])
def test_an_acknowledgement_and_a_restated_instruction_are_dropped(step: int) -> None:
    answer = "1. 先弄清楚對方的預算範圍。\n2. 第一個數字比目標高 10% 到 15%。"
    text = "好的，我明白了。以下是根據 Summer 的說法、名稱和數字回答使用者的薪水相關問題：\n\n" + answer
    guard = EchoGuard(ZH)
    assert _stream(guard, text, step) == answer
    assert len(guard.dropped) == 2


@pytest.mark.parametrize("step", [1, 4, 1000])
def test_an_answer_that_opens_with_its_content_is_shown_whole(step: int) -> None:
    text = "根據 Summer 的「探、錨、換」三步談判法，第一步是先問預算。接著再開價：以下是作法。"
    guard = EchoGuard(ZH)
    assert _stream(guard, text, step) == text
    assert guard.dropped == []


def test_only_the_opening_is_looked_at() -> None:
    # the same words later in the answer are the answer's own
    text = "第一步是先問預算。好的。以下是根據段落裡 Summer 的說法、名稱和數字回答使用者："
    assert _stream(EchoGuard(ZH), text, 2) == text


def test_an_english_restatement_is_dropped() -> None:
    text = "Sure! Here is an answer from the passages above, keeping Summer's own terms, names and figures:\nAsk for the range first."
    assert _stream(EchoGuard(EN), text, 5) == "Ask for the range first."


def test_without_an_instruction_nothing_is_held() -> None:
    guard = EchoGuard("")
    assert guard.push("好的。") == "好的。"
    assert guard.dropped == []


def test_a_long_opening_without_an_end_is_shown_not_held_forever() -> None:
    guard = EchoGuard(ZH)
    long = "薪" * 130
    assert guard.push(long) == long
    assert guard.push("。好的。") == "。好的。"
