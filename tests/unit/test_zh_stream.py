"""zh-TW conversion while streaming: only what a later character could still change is held back."""

from __future__ import annotations

import random

import pytest

from careerwise.llm import zh
from careerwise.llm.zh import ZhStreamConverter, opencc_converter
from careerwise.tracing import background


@pytest.fixture(scope="module")
def convert() -> zh.TaiwanConverter:
    converter = opencc_converter()
    assert converter.wait_ready(60)  # the phrase tables were read
    return converter


def stream(convert: zh.TaiwanConverter, pieces: list[str]) -> list[str]:
    conv = ZhStreamConverter(convert)
    return [conv.feed(p) for p in pieces] + [conv.flush()]


def test_text_before_a_possible_phrase_is_shown_at_once(convert: zh.TaiwanConverter) -> None:
    out = stream(convert, ["我是软", "件工程师。"])
    assert out[0] == "我是"  # 软 may begin 软件: held; 我是 cannot join anything after it
    assert out[1] == "軟體工程師。"  # 软件 -> 軟體 (a split 软|件 would give 軟件)


def test_a_whole_phrase_that_may_grow_is_held_until_it_cannot(convert: zh.TaiwanConverter) -> None:
    out = stream(convert, ["负责数", "据", "库", "和"])
    assert out[:3] == [
        "負責",
        "",
        "資料庫",
    ]  # 数据 is a phrase but begins 数据库: held; 数据库 begins nothing
    assert "".join(out) == "負責資料庫和"


def test_traditional_text_keeps_its_characters_across_any_cut(convert: zh.TaiwanConverter) -> None:
    # 頭髮 round-trips through Simplified 头发; cut between the two it would come back as 頭發
    assert "".join(stream(convert, ["她的頭", "髮很長。"])) == "她的頭髮很長。"


@pytest.mark.parametrize(
    "text",
    [
        "我是软件工程师，负责数据库和信息系统的项目管理。头发很长。",
        "談薪水時，先做功課：查清楚同職位在市場上的薪資範圍，再根據自己的經驗與成果定出目標數字。",
        "他說“我們的項目用的是數據庫”，然後用 Python 3.11 寫了視頻網站的後台。",
    ],
)
def test_any_chunking_gives_the_whole_text_conversion(convert: zh.TaiwanConverter, text: str) -> None:
    rng = random.Random(7)
    for _ in range(40):
        cuts = sorted(rng.sample(range(1, len(text)), rng.randint(1, 12)))
        pieces = [text[i:j] for i, j in zip([0, *cuts], [*cuts, len(text)], strict=True)]
        assert "".join(stream(convert, pieces)) == convert(text), pieces


def test_a_curly_quote_alone_is_written_the_taiwan_way_once_there_was_chinese(
    convert: zh.TaiwanConverter,
) -> None:
    assert "".join(stream(convert, ["他說", "“", "好", "”", ", ok"])) == "他說「好」, ok"
    assert "".join(stream(convert, ["He said “ok”"])) == "He said “ok”"  # English keeps its quotes


def test_without_tables_a_han_run_is_held_whole() -> None:
    def fake(text: str) -> str:
        return text

    conv = ZhStreamConverter(fake, holdback=2, max_run=4)
    assert conv.feed("一二三") == ""
    assert conv.feed("四五") == "一二三"  # a run of 5 > 4: all but the last 2 go
    assert conv.feed("六") == ""
    assert conv.feed("。") == "四五六。"  # a non-Han character ends the run
    assert conv.flush() == ""
    assert conv.feed("七") == ""
    assert conv.flush() == "七"
    assert conv.flush() == ""


def test_english_is_not_converted() -> None:
    calls: list[str] = []

    def fake(text: str) -> str:
        calls.append(text)
        return text.upper()

    conv = ZhStreamConverter(fake)
    assert conv.feed("Use Python 3.11, ") == "Use Python 3.11, "
    assert conv.feed("then git.") == "then git."
    assert calls == []


def test_opencc_converter_writes_taiwan_usage(convert: zh.TaiwanConverter) -> None:
    assert convert("台湾的软件工程师看视频") == "台灣的軟體工程師看影片"
    assert convert("面試要穿什麼？") == "面試要穿什麼？"  # already Traditional: unchanged


def test_unreadable_tables_are_logged_counted_and_safe(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(zh, "_TABLES", ("NoSuchTable",))
    before = background.failure_counts()[background.ZH_PHRASES]
    with caplog.at_level("WARNING", logger="careerwise.llm.zh"):
        assert zh._read_phrase_table() is None
    assert background.failure_counts()[background.ZH_PHRASES] == before + 1
    assert "phrase tables could not be read" in caplog.text
