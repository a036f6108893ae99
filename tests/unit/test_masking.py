"""Personal data masking: what must go (zh and en), what must stay, logs, JSON values."""

from __future__ import annotations

import io
import logging

import pytest

from careerwise.tracing.masking import MaskingFilter, install_log_masking, mask_json, mask_text

MASKED = [
    # e-mail
    ("我的信箱是 mei.lin@gmail.com，謝謝", "我的信箱是 [email]，謝謝"),
    ("我的信箱是abc.def@gmail.com謝謝", "我的信箱是[email]謝謝"),
    ("Reach me at john_doe+jobs@example.co.uk.", "Reach me at [email]."),
    ("寄到 HR@Company.COM.TW 就好", "寄到 [email] 就好"),
    ("two: a@b.io, c.d@e-f.org", "two: [email], [email]"),
    # Taiwan mobiles
    ("手機 0912-345-678", "手機 [phone]"),
    ("手機0912345678", "手機[phone]"),
    ("call 0912 345 678 tonight", "call [phone] tonight"),
    ("0912-345678", "[phone]"),
    ("+886 912 345 678", "[phone]"),
    ("+886-912-345-678", "[phone]"),
    ("(+886) 912-345-678", "[phone]"),
    ("886912345678", "[phone]"),
    ("+886912345678 是我的號碼", "[phone] 是我的號碼"),
    # Taiwan landlines
    ("公司電話(02)2345-6789", "公司電話[phone]"),
    ("02-2345-6789", "[phone]"),
    ("04-2234-5678 分機 123", "[phone]"),
    ("呼叫 07-123-4567", "呼叫 [phone]"),
    ("+886-2-2345-6789", "[phone]"),
    ("+886 2 2345 6789", "[phone]"),
    # international and North American
    ("office +1 415 555 0100", "office [phone]"),
    ("+44 20 7946 0958", "[phone]"),
    ("+81-3-1234-5678", "[phone]"),
    ("+65 6123 4567", "[phone]"),
    ("(415) 555-0100", "[phone]"),
    ("cell 415-555-0100", "cell [phone]"),
    # LINE ids
    ("LINE: ming_88", "LINE: [line-id]"),  # the id only: "LINE: event 42 failed" in a log keeps its words
    ("加我 LINE: ming_88 喔", "加我 LINE: [line-id] 喔"),
    ("我的 LINE ID 是 summer_tw", "我的 LINE ID 是 [line-id]"),
    ("line id is abc123", "line id is [line-id]"),
    ("請加 Line ID：@coach.mei", "請加 Line ID：[line-id]"),
    ("加我賴：peter.w", "加我賴：[line-id]"),
    ("ping me, line: john_doe88", "ping me, line: [line-id]"),
    ("LINE帳號：wang1990", "LINE帳號：[line-id]"),
    # national id
    ("身分證 A123456789 要附嗎", "身分證 [id-number] 要附嗎"),
    ("ARC number F812345678", "ARC number [id-number]"),
    # resume contact lines
    ("地址：台北市信義區松仁路100號", "地址： [contact]"),
    ("- 手機：0912345678", "- 手機： [contact]"),
    ("Email: x@y.com", "Email: [contact]"),
    ("Address: 221B Baker Street, London", "Address: [contact]"),
    ("生日：1995/03/02", "生日： [contact]"),
    ("Date of birth: 2 March 1995", "Date of birth: [contact]"),
    ("王小明\n電話：02-2345-6789\n經歷：五年前端", "王小明\n電話： [contact]\n經歷：五年前端"),
    ("  • Phone: +1 415 555 0100", "  • Phone: [contact]"),
]

KEPT = [
    "2025-2026 薪資調查",
    "面試在 2024-03-15 下午",
    "月薪 45,000，年薪 1,200,000",
    "年薪1200000",
    "加薪 +15% 算合理",
    "top_k 12, rerank 12 candidates",
    "trace 5f2a9c0e1b2d4c6e8f0a1b2c3d4e5f60",
    "version 1.2.3 of the app",
    "03-15 會議",
    "LINE Pay 很方便",
    "我們用 LINE 聯絡",
    "the opening line: keep it short",
    "First line: state the role you want.",
    "工作 3 年，換過 2 次",
    "請看第 12-15 頁",
    "Python 3.11 and FastAPI 0.115",
    "score 0.8734 and margin 0.0412",
    "電話面試該怎麼準備？",
    "Email etiquette for recruiters",
    "my email is private",
    "在 104 人力銀行投了 30 封履歷",
    "期望薪資 60K-70K",
]


@pytest.mark.parametrize(("raw", "masked"), MASKED)
def test_personal_data_is_masked(raw: str, masked: str) -> None:
    assert mask_text(raw) == masked


@pytest.mark.parametrize("raw", KEPT)
def test_ordinary_text_is_left_alone(raw: str) -> None:
    assert mask_text(raw) == raw


@pytest.mark.parametrize(("raw", "masked"), MASKED)
def test_masking_twice_changes_nothing_more(raw: str, masked: str) -> None:
    assert mask_text(mask_text(raw)) == masked


def test_json_values_are_masked_keys_and_numbers_kept() -> None:
    value = {
        "query": "聯絡 mei@gmail.com 0912-345-678",
        "top_k": 5,
        "nested": [{"note": "LINE: ming_88"}, 3.5, None, True],
        "mei@gmail.com": "the key stays",
    }
    assert mask_json(value) == {
        "query": "聯絡 [email] [phone]",
        "top_k": 5,
        "nested": [{"note": "LINE: [line-id]"}, 3.5, None, True],
        "mei@gmail.com": "the key stays",
    }


def _logger_with_stream() -> tuple[logging.Logger, logging.Handler, io.StringIO]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    logger = logging.getLogger("careerwise.test_masking")
    logger.propagate = False
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    return logger, handler, stream


def test_log_lines_and_tracebacks_are_masked() -> None:
    logger, handler, stream = _logger_with_stream()
    try:
        assert install_log_masking([handler]) == 1
        assert install_log_masking([handler]) == 0  # once per handler
        logger.warning("turn %s: user wrote %r", "t1", "call me at 0912-345-678 or a@b.io")
        try:
            raise ValueError("bad input from mei@gmail.com")
        except ValueError:
            logger.exception("failed for %s", "LINE: ming_88")
    finally:
        logger.removeHandler(handler)
    out = stream.getvalue()
    assert "0912" not in out and "a@b.io" not in out and "mei@gmail.com" not in out and "ming_88" not in out
    assert "user wrote 'call me at [phone] or [email]'" in out
    assert "ValueError: bad input from [email]" in out
    assert "failed for LINE: [line-id]" in out


def test_a_bad_format_string_is_still_logged_masked() -> None:
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "only %s and %s", ("a@b.io",), None)
    assert MaskingFilter().filter(record) is True
    assert record.getMessage() == "only %s and %s ('[email]',)"
