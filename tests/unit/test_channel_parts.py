"""The LINE signature, webhook parsing, and the text rendering and splitting both channels use."""

from __future__ import annotations

import json

import pytest

from careerwise.channels.line import (
    InvalidWebhookError,
    WebhookEvent,
    parse_webhook,
    signature,
    verify_signature,
)
from careerwise.channels.text import plain, reply_plain_text, split_messages, utf16_len
from careerwise.events import (
    DegradedEvent,
    DeltaEvent,
    DoneEvent,
    ReportEvent,
    ReportSection,
    Source,
    ToolResultEvent,
)
from careerwise.reply import TurnReply

# ---------------------------------------------------------------- signature


def test_signature_known_answer() -> None:
    assert signature("channel_secret", b"bodybodybodybody") == "/gg9a+LvFevTH1sd7XCQycD7tsWclCsInj7MhBHxN7k="


@pytest.mark.parametrize(
    ("header", "ok"),
    [
        ("/gg9a+LvFevTH1sd7XCQycD7tsWclCsInj7MhBHxN7k=", True),
        ("/gg9a+LvFevTH1sd7XCQycD7tsWclCsInj7MhBHxN7k", False),  # truncated
        ("/gg9a+LvFevTH1sd7XCQycD7tsWclCsInj7MhBHxN7K=", False),  # one letter's case
        (" /gg9a+LvFevTH1sd7XCQycD7tsWclCsInj7MhBHxN7k=", False),
        ("", False),
        (None, False),
        ("簽章", False),  # not even latin-1: refused, never an exception
        ("ÿ" * 44, False),
    ],
)
def test_verify_signature(header: str | None, ok: bool) -> None:
    assert verify_signature("channel_secret", b"bodybodybodybody", header) is ok


def test_signature_covers_every_byte() -> None:
    good = signature("s3cret", b'{"events":[]}')
    assert not verify_signature("s3cret", b'{"events":[] }', good)
    assert not verify_signature("other", b'{"events":[]}', good)


# ---------------------------------------------------------------- webhook bodies


def _event(**over: object) -> dict[str, object]:
    event: dict[str, object] = {
        "type": "message",
        "mode": "active",
        "timestamp": 1,
        "webhookEventId": "01HZZZZZZZZZZZZZZZZZZZZZZZ",
        "deliveryContext": {"isRedelivery": False},
        "replyToken": "r1",
        "source": {"type": "user", "userId": "U" + "a" * 32},
        "message": {"type": "text", "id": "1", "text": "hi"},
    }
    event.update(over)
    return event


def test_console_verification_body_has_no_events() -> None:
    assert parse_webhook(b'{"destination":"U0","events":[]}') == []


@pytest.mark.parametrize(
    "body",
    [b"", b"not json", b"[]", b'{"events": {}}', b'{"destination": "x"}', b"[" * 100_000, b"\xff\xfe"],
)
def test_bodies_that_are_not_webhooks(body: bytes) -> None:
    with pytest.raises(InvalidWebhookError):
        parse_webhook(body)


def test_events_that_do_not_parse_are_skipped() -> None:
    body = {
        "events": [
            _event(),
            {"type": "message"},  # no webhookEventId
            42,
            _event(webhookEventId="x" * 65),
            _event(source={"type": "user", "userId": "U'; DROP TABLE--"}),
        ]
    }
    events = parse_webhook(json.dumps(body).encode())
    assert [e.webhookEventId for e in events] == ["01HZZZZZZZZZZZZZZZZZZZZZZZ"]


def test_chat_key_is_the_user_group_or_room() -> None:
    assert WebhookEvent.model_validate(_event()).source.chat_key == "U" + "a" * 32  # type: ignore[union-attr]
    group = _event(source={"type": "group", "groupId": "C1", "userId": "U2"})
    assert WebhookEvent.model_validate(group).source.chat_key == "C1"  # type: ignore[union-attr]


# ---------------------------------------------------------------- plain text


def test_markdown_becomes_plain_text() -> None:
    md = "## 結論\n\n**先查行情**，再開價。\n\n- 第一點\n* 第二點\n\n見 [文章](https://x.tw/a) 與 `top_k`。\n\n---"
    assert (
        plain(md) == "結論\n\n先查行情，再開價。\n\n・第一點\n・第二點\n\n見 文章 (https://x.tw/a) 與 top_k。"
    )


def test_reply_text_has_notices_answer_report_and_sources() -> None:
    src = Source(id="a-offer", title="談 offer 三步驟", section="先探", score=0.9)
    reply = TurnReply.from_events(
        [
            ToolResultEvent(call_id="1", name="searchKnowledge", ok=True, returned=2, sources=[src, src]),
            DegradedEvent(reason="tool_failed", message="查詢失敗。"),
            DeltaEvent(text="先探再錨。", phase=3),
            ReportEvent(
                title="轉職評估",
                sections=[ReportSection(heading="財務", body="**存款**夠六個月。", risk_level="high")],
            ),
            DoneEvent(trace_id="t", conversation_id="c", message_id="m", status="ok", path="A"),
        ]
    )
    assert reply.sources() == [src]
    assert reply_plain_text(reply, zh=True) == (
        "查詢失敗。\n\n先探再錨。\n\n轉職評估\n\n【財務（風險：高）】\n存款夠六個月。\n\n參考資料：\n・談 offer 三步驟 — 先探"
    )


# ---------------------------------------------------------------- splitting


def test_short_text_is_one_message() -> None:
    assert split_messages("一\n\n二") == ["一\n\n二"]
    assert split_messages("   ") == []


def test_split_on_paragraph_boundaries() -> None:
    paragraphs = [f"{i}" + "字" * 1999 for i in range(6)]  # 2,000 characters each
    messages = split_messages("\n\n".join(paragraphs))
    assert messages == [
        "\n\n".join(paragraphs[0:2]),
        "\n\n".join(paragraphs[2:4]),
        "\n\n".join(paragraphs[4:6]),
    ]
    assert all(utf16_len(m) <= 5000 for m in messages)


def test_emoji_count_twice() -> None:
    text = "😀" * 2600  # 5,200 UTF-16 units in one line: must be cut
    messages = split_messages(text)
    assert [utf16_len(m) for m in messages] == [5000, 200]
    assert "".join(messages) == text


def test_at_most_five_messages_and_the_cut_is_said() -> None:
    text = "\n\n".join("段" * 4000 for _ in range(8))
    messages = split_messages(text, overflow_note="（其餘已省略）")
    assert len(messages) == 5
    assert all(utf16_len(m) <= 5000 for m in messages)
    assert messages[-1].endswith("（其餘已省略）")


def test_a_long_paragraph_is_cut_between_lines() -> None:
    lines = ["行" * 3000, "列" * 3000]
    assert split_messages("\n".join(lines)) == lines
