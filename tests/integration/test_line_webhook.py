"""The LINE bot over a real uvicorn server, answering through a fake LINE Messaging API."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import logging
import random
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select

from careerwise.channels.line import NOT_TEXT
from careerwise.store import Database, LineEventRecord, LineUser, Trace
from tests.conftest import LiveServer, client
from tests.fakes.fake_line import FakeLine
from tests.fakes.fake_llm import Call, FakeLLM, error, stall, text, tool_calls

SECRET = "line-test-channel-secret"
TOKEN = "line-test-access-token"
USER = "U" + "4af4980629" * 3 + "ab"


@pytest.fixture(scope="module")
def _line_api() -> Iterator[FakeLine]:
    with FakeLine(access_token=TOKEN) as fake:
        yield fake


@pytest.fixture
def fake_line(_line_api: FakeLine) -> Iterator[FakeLine]:
    _line_api.reset()
    yield _line_api
    _line_api.reset()


@pytest.fixture
def line_server(live_server: Callable[..., LiveServer], fake_line: FakeLine) -> Callable[..., LiveServer]:
    def factory(**overrides: Any) -> LiveServer:
        values: dict[str, Any] = {
            "line_channel_secret": SECRET,
            "line_channel_access_token": TOKEN,
            "line_api_base_url": fake_line.base_url,
        }
        values.update(overrides)
        return live_server(**values)

    return factory


def sign(body: bytes, secret: str = SECRET) -> str:
    return base64.b64encode(hmac.new(secret.encode(), body, hashlib.sha256).digest()).decode()


def message_event(
    text_: str | None = "怎麼談薪水？",
    *,
    event_id: str | None = None,
    user: str = USER,
    reply_token: str | None = None,
    redelivery: bool = False,
    message_type: str = "text",
) -> dict[str, Any]:
    message: dict[str, Any] = {"type": message_type, "id": uuid.uuid4().hex[:16], "quoteToken": "q"}
    if text_ is not None:
        message["text"] = text_
    return {
        "type": "message",
        "mode": "active",
        "timestamp": int(time.time() * 1000),
        "webhookEventId": event_id or uuid.uuid4().hex[:26].upper(),
        "deliveryContext": {"isRedelivery": redelivery},
        "replyToken": reply_token or uuid.uuid4().hex,
        "source": {"type": "user", "userId": user},
        "message": message,
    }


def post_events(c: httpx.Client, *events: dict[str, Any]) -> httpx.Response:
    body = json.dumps({"destination": "U" + "0" * 32, "events": list(events)}, ensure_ascii=False).encode()
    return c.post(
        "/line/webhook",
        content=body,
        headers={"X-Line-Signature": sign(body), "Content-Type": "application/json"},
    )


def query(server: LiveServer, statement: Any) -> list[Any]:
    """Read the server's database through a separate engine (the server's belongs to uvicorn's loop)."""
    db = Database(server.services.db.url)

    async def run() -> list[Any]:
        try:
            async with db.sessions() as s:
                return list((await s.execute(statement)).all())
        finally:
            await db.dispose()

    return asyncio.run(run())


def wait_until(condition: Callable[[], object], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.05)


def settled(server: LiveServer) -> bool:
    """Every stored event has its outcome."""
    rows = query(server, select(LineEventRecord.status))
    return all(status != "received" for (status,) in rows)


# ---------------------------------------------------------------- configuration and the console


def test_without_a_secret_the_webhook_says_line_is_not_configured(
    live_server: Callable[..., LiveServer],
) -> None:
    server = live_server()
    with client(server) as c:
        r = c.post("/line/webhook", content=b'{"events":[]}', headers={"X-Line-Signature": "x"})
    assert r.status_code == 503
    assert "LINE is not configured" in r.json()["error"]["message"]
    assert "CAREERWISE_LINE_CHANNEL_SECRET" in r.json()["error"]["message"]


def test_console_verification_request_gets_200(
    line_server: Callable[..., LiveServer], fake_line: FakeLine
) -> None:
    server = line_server()
    with client(server) as c:
        assert post_events(c).status_code == 200
        unsigned = c.post("/line/webhook", content=b'{"destination":"U0","events":[]}')
    assert unsigned.status_code == 400 and unsigned.json()["error"]["code"] == "invalid_signature"
    assert fake_line.calls == []


# ---------------------------------------------------------------- answering


def test_a_text_message_is_answered_with_the_reply_token(
    fake_llm: FakeLLM, line_server: Callable[..., LiveServer], fake_line: FakeLine
) -> None:
    fake_llm.script(
        tool_calls(Call("searchKnowledge", {"query": "薪水談判技巧"})),
        text("**先探再錨**：先問預算。\n\n- 再開價"),
    )
    server = line_server()
    event = message_event("怎麼談薪水？", reply_token="reply-token-1")
    with client(server) as c:
        r = post_events(c, event)
    assert r.status_code == 200
    fake_line.wait_for(lambda: fake_line.replies)
    reply = fake_line.replies[0]
    assert reply.json["replyToken"] == "reply-token-1"
    assert reply.headers["authorization"] == f"Bearer {TOKEN}"
    [answer] = reply.texts
    assert answer.startswith("先探再錨：先問預算。\n\n・再開價")  # plain text, no Markdown marks
    assert "\n\n參考資料：\n・" in answer  # the knowledge-base sources, as a short list
    assert fake_line.pushes == []
    wait_until(lambda: settled(server))
    [(status, delivery, trace_id)] = query(
        server, select(LineEventRecord.status, LineEventRecord.delivery, LineEventRecord.trace_id)
    )
    assert (status, delivery) == ("answered", "reply")
    [(channel, conversation_id)] = query(
        server, select(Trace.channel, Trace.conversation_id).where(Trace.id == trace_id)
    )
    assert channel == "line"
    assert query(server, select(LineUser.line_user_id, LineUser.conversation_id)) == [(USER, conversation_id)]


def test_history_carries_over_between_messages(
    fake_llm: FakeLLM, line_server: Callable[..., LiveServer], fake_line: FakeLine
) -> None:
    fake_llm.script(text("先準備三個故事。"), text("第二題的回答。"))
    server = line_server()
    with client(server) as c:
        post_events(c, message_event("面試要怎麼準備"))
        fake_line.wait_for(lambda: len(fake_line.replies) == 1)
        post_events(c, message_event("那薪水呢"))
        fake_line.wait_for(lambda: len(fake_line.replies) == 2)
    second = fake_llm.requests[-1]["messages"]
    contents = [(m["role"], m.get("content")) for m in second]
    assert ("user", "面試要怎麼準備") in contents
    assert ("assistant", "先準備三個故事。") in contents
    # the question as sent (a fast provider gets no coverage note by default)
    assert contents[-1] == ("user", "那薪水呢")
    assert len(query(server, select(LineUser.line_user_id))) == 1


def test_messages_of_one_user_are_answered_in_order_never_interleaved(
    fake_llm: FakeLLM, line_server: Callable[..., LiveServer], fake_line: FakeLine
) -> None:
    fake_llm.script(
        text("第一個回答。", first_token_delay=0.6),
        text("第二個回答。"),
        text("第三個回答。"),
    )
    server = line_server()
    with client(server) as c:
        post_events(c, message_event("第一個問題是面試"))
        post_events(c, message_event("第二個問題是薪水"), message_event("第三個問題是履歷"))
    fake_line.wait_for(lambda: len(fake_line.replies) == 3)
    assert [r.texts[0] for r in fake_line.replies] == ["第一個回答。", "第二個回答。", "第三個回答。"]
    assert fake_llm.max_open_streams == 1  # one turn at a time for this user
    # each turn saw the previous one: answered after it, not beside it
    third = [m.get("content") for m in fake_llm.requests[2]["messages"]]
    assert "第一個回答。" in third and "第二個回答。" in third


def test_different_users_are_answered_concurrently(
    fake_llm: FakeLLM, line_server: Callable[..., LiveServer], fake_line: FakeLine
) -> None:
    fake_llm.default = text("好的。", first_token_delay=0.5)
    server = line_server()
    users = ["U" + f"{i:032x}" for i in range(3)]
    with client(server) as c:
        post_events(c, *(message_event("面試要怎麼準備", user=u) for u in users))
    fake_line.wait_for(lambda: len(fake_line.replies) == 3)
    assert fake_llm.max_open_streams >= 2
    assert len(query(server, select(LineUser.line_user_id))) == 3


@pytest.mark.parametrize("concurrent", [False, True], ids=["sequential", "concurrent"])
def test_an_event_delivered_three_times_is_answered_once(
    db_overrides: dict[str, Any],
    fake_llm: FakeLLM,
    line_server: Callable[..., LiveServer],
    fake_line: FakeLine,
    concurrent: bool,
) -> None:
    fake_llm.default = text("只回答一次。", first_token_delay=0.2)
    server = line_server(**db_overrides)  # SQLite and PostgreSQL
    event_id = "01J" + uuid.uuid4().hex[:23].upper()
    deliveries = [message_event("怎麼談薪水？", event_id=event_id, redelivery=i > 0) for i in range(3)]
    for d in deliveries[1:]:
        d["replyToken"] = deliveries[0]["replyToken"]
        d["message"] = deliveries[0]["message"]
    statuses: list[int] = []
    if concurrent:
        barrier = threading.Barrier(3)

        def deliver(event: dict[str, Any]) -> None:
            with client(server) as c:
                barrier.wait()
                statuses.append(post_events(c, event).status_code)

        threads = [threading.Thread(target=deliver, args=(d,)) for d in deliveries]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    else:
        with client(server) as c:
            statuses = [post_events(c, d).status_code for d in deliveries]
    assert statuses == [200, 200, 200]
    fake_line.wait_for(lambda: fake_line.delivered)
    # every delivery was stored or refused before its 200; once the chat queue is empty no answer is
    # still to come, so the counts below are final
    wait_until(lambda: settled(server) and not server.app.state.line_channel.busy)
    assert len(fake_llm.requests) == 1  # one engine run
    assert len(query(server, select(Trace.id))) == 1
    assert len(fake_line.delivered) == 1  # one reply
    assert query(server, select(func.count()).select_from(LineEventRecord)) == [(1,)]


def test_expired_reply_token_falls_back_to_a_push_with_a_retry_key(
    fake_llm: FakeLLM, line_server: Callable[..., LiveServer], fake_line: FakeLine
) -> None:
    fake_llm.script(text("用推播送到。"))
    fake_line.expire_reply_tokens = True
    fake_line.fail_pushes = 1  # the first push attempt fails: retried with the same key
    server = line_server()
    with client(server) as c:
        post_events(c, message_event("面試要怎麼準備"))
    fake_line.wait_for(lambda: fake_line.pushes)
    wait_until(lambda: settled(server))
    attempts = [c for c in fake_line.calls if c.path == "/v2/bot/message/push"]
    assert [a.status for a in attempts] == [500, 200]
    keys = {a.headers["x-line-retry-key"] for a in attempts}
    assert len(keys) == 1 and uuid.UUID(keys.pop())
    push = fake_line.pushes[0]
    assert push.json["to"] == USER and push.texts == ["用推播送到。"]
    assert fake_line.replies == []
    assert query(server, select(LineEventRecord.delivery)) == [("push",)]


def test_a_failed_delivery_is_logged_and_stored(
    fake_llm: FakeLLM,
    line_server: Callable[..., LiveServer],
    fake_line: FakeLine,
    caplog: pytest.LogCaptureFixture,
) -> None:
    fake_line.expire_reply_tokens = True
    fake_line.fail_pushes = 10
    server = line_server()
    with caplog.at_level(logging.ERROR, logger="careerwise.channels.line"), client(server) as c:
        post_events(c, message_event("面試要怎麼準備"))
        wait_until(lambda: settled(server))
    [(status, error_text)] = query(server, select(LineEventRecord.status, LineEventRecord.error))
    assert status == "failed" and "push failed 3 times" in error_text
    assert any("could not be answered" in r.getMessage() for r in caplog.records)
    assert server.app.state.line_channel.failures == 1


def test_slow_turns_show_the_loading_animation(
    fake_llm: FakeLLM, line_server: Callable[..., LiveServer], fake_line: FakeLine
) -> None:
    server = line_server()
    channel = server.app.state.line_channel
    fake_llm.script(text("快。"), text("慢慢來。", first_token_delay=1.5))
    with client(server) as c:
        channel.loading_after = 3.0  # generous: a loaded test machine is slow too
        post_events(c, message_event("面試要怎麼準備"))
        fake_line.wait_for(lambda: len(fake_line.replies) == 1)
        assert fake_line.loadings == []  # a fast turn shows nothing
        channel.loading_after = 0.3
        post_events(c, message_event("那薪水呢"))
        fake_line.wait_for(lambda: len(fake_line.replies) == 2)
    [loading] = fake_line.loadings
    assert loading.json == {"chatId": USER, "loadingSeconds": 60}
    assert loading.at < fake_line.replies[1].at


def test_long_answers_are_split_into_messages_that_fit(
    fake_llm: FakeLLM, line_server: Callable[..., LiveServer], fake_line: FakeLine
) -> None:
    paragraphs = [f"第{i}段" + "長" * 2996 for i in range(4)]  # 3,000 characters each
    fake_llm.script(text("\n\n".join(paragraphs), chunk_size=500))
    server = line_server()
    with client(server) as c:
        post_events(c, message_event("面試要怎麼準備"))
    fake_line.wait_for(lambda: fake_line.replies)
    assert fake_line.replies[0].texts == paragraphs  # one paragraph per message: 2 would not fit in 5,000


def test_non_text_messages_and_other_events(
    fake_llm: FakeLLM, line_server: Callable[..., LiveServer], fake_line: FakeLine
) -> None:
    server = line_server()
    sticker = message_event(None, message_type="sticker")
    follow = {
        "type": "follow",
        "mode": "active",
        "timestamp": 1,
        "webhookEventId": "01FOLLOW" + uuid.uuid4().hex[:18].upper(),
        "deliveryContext": {"isRedelivery": False},
        "replyToken": "follow-token",
        "source": {"type": "user", "userId": USER},
    }
    standby = message_event("在嗎") | {"mode": "standby"}
    with client(server) as c:
        assert post_events(c, sticker, follow, standby).status_code == 200
    fake_line.wait_for(lambda: fake_line.replies)
    wait_until(lambda: settled(server))
    assert [r.texts for r in fake_line.replies] == [[NOT_TEXT]]
    assert fake_llm.requests == []
    rows = query(
        server, select(LineEventRecord.event_type, LineEventRecord.status).order_by(LineEventRecord.id)
    )
    assert rows == [("message", "answered"), ("follow", "ignored"), ("message", "ignored")]


def test_a_message_over_the_limit_gets_a_clear_answer(
    fake_llm: FakeLLM, line_server: Callable[..., LiveServer], fake_line: FakeLine
) -> None:
    server = line_server()
    with client(server) as c:
        post_events(c, message_event("長" * 4500))
    fake_line.wait_for(lambda: fake_line.replies)
    assert "4000" in fake_line.replies[0].texts[0]
    assert fake_llm.requests == []


def test_shutdown_waits_for_answers_still_being_written(
    fake_llm: FakeLLM, line_server: Callable[..., LiveServer], fake_line: FakeLine
) -> None:
    fake_llm.script(text("收尾前送出。", first_token_delay=1.5))
    server = line_server()
    with client(server) as c:
        assert post_events(c, message_event("面試要怎麼準備")).status_code == 200
        assert fake_line.replies == []  # LINE has its 200 before the turn is done
    wait_until(lambda: fake_llm.open_streams == 1)
    server.stop()  # graceful: the lifespan waits for the background turn
    assert [r.texts for r in fake_line.replies] == [["收尾前送出。"]]


def test_an_llm_failure_is_answered_with_the_error_line(
    fake_llm: FakeLLM, line_server: Callable[..., LiveServer], fake_line: FakeLine
) -> None:
    fake_llm.script(error(500), error(500), error(500))
    server = line_server(llm_retries=0)
    with client(server) as c:
        post_events(c, message_event("面試要怎麼準備"))
    fake_line.wait_for(lambda: fake_line.replies)
    assert "Summer" in fake_line.replies[0].texts[0]


# ---------------------------------------------------------------- forged and malformed requests

FUZZ_REQUESTS = 1000


def _random_body(rng: random.Random) -> bytes:
    kind = rng.randrange(6)
    if kind == 0:
        return rng.randbytes(rng.randrange(0, 400))
    if kind == 1:
        return b""
    if kind == 2:
        return ("{" * rng.randrange(1, 3000)).encode()
    if kind == 3:
        return json.dumps(rng.choice([[], 1, "x", None, {"events": "no"}, {"events": [1, 2]}])).encode()
    event = message_event("偽造的訊息", event_id="FORGED" + uuid.UUID(int=rng.getrandbits(128)).hex[:20])
    if kind == 4:
        event["message"]["text"] = "".join(
            chr(rng.randrange(32, 0x2FFF)) for _ in range(rng.randrange(1, 50))
        )
    return json.dumps({"destination": "U0", "events": [event]}, ensure_ascii=rng.random() < 0.5).encode()


def _forged_signature(rng: random.Random, body: bytes) -> bytes | None:
    """Anything but the right signature for this body."""
    good = sign(body).encode()
    match rng.randrange(9):
        case 0:
            return None
        case 1:
            return b""
        case 2:
            return sign(body, "not-the-secret").encode()
        case 3:
            return sign(body + b" ").encode()
        case 4:
            i = rng.randrange(len(good))
            return good[:i] + bytes([good[i] ^ 0x01]) + good[i + 1 :]
        case 5:
            return good[: rng.randrange(len(good))]
        case 6:
            return good + b"="
        case 7:
            junk = bytes(
                rng.choice(b"abcdefABCDEF0123456789+/=\xff\xe9\x80 \t") for _ in range(rng.randrange(1, 90))
            )
            return junk.strip(b" \t") or b"\xff"  # HTTP forbids whitespace at either end of a value
        case _:
            return base64.b64encode(rng.randbytes(32))


def test_a_thousand_forged_or_malformed_requests_give_no_server_error_and_no_accepted_forgery(
    fake_llm: FakeLLM, line_server: Callable[..., LiveServer], fake_line: FakeLine
) -> None:
    rng = random.Random(20261201)
    server = line_server()
    requests: list[tuple[bool, bytes, dict[str, bytes | str]]] = []
    for i in range(FUZZ_REQUESTS):
        body = _random_body(rng)
        headers: dict[str, bytes | str] = {}
        if rng.random() < 0.7:
            headers["Content-Type"] = rng.choice([b"application/json", b"text/plain", b"x/\xff", b""])
        for _ in range(rng.randrange(3)):
            headers[f"X-Junk-{rng.randrange(99)}"] = rng.randbytes(8).hex()
        # one in ten is signed with the real secret but is not a usable webhook: not a forgery, still no 5xx
        signed_malformed = i % 10 == 0 and not body.startswith(b'{"destination"')
        signature_value = sign(body).encode() if signed_malformed else _forged_signature(rng, body)
        if signature_value is not None:
            headers[rng.choice(["X-Line-Signature", "x-line-signature", "X-LINE-SIGNATURE"])] = (
                signature_value
            )
        requests.append((signed_malformed, body, headers))

    local = threading.local()
    clients: list[httpx.Client] = []

    def send(request: tuple[bool, bytes, dict[str, bytes | str]]) -> tuple[str, int]:
        signed_malformed, body, headers = request
        if not hasattr(local, "client"):
            local.client = client(server)
            clients.append(local.client)
        r = local.client.post("/line/webhook", content=body, headers=headers)
        return ("signed-malformed" if signed_malformed else "forged"), r.status_code

    statuses: dict[str, list[int]] = {"forged": [], "signed-malformed": []}
    try:
        with ThreadPoolExecutor(max_workers=8) as pool:
            for kind, status in pool.map(send, requests):
                statuses[kind].append(status)
    finally:
        for c in clients:
            c.close()
    every = statuses["forged"] + statuses["signed-malformed"]
    assert len(every) == FUZZ_REQUESTS
    server_errors = [s for s in every if s >= 500]
    accepted_forgeries = [s for s in statuses["forged"] if s < 300]
    assert (len(server_errors), len(accepted_forgeries)) == (0, 0)
    assert set(statuses["forged"]) == {400}
    assert set(statuses["signed-malformed"]) <= {200, 400}
    # refused before anything was stored or queued: the channel has no chat queue to drain
    assert not server.app.state.line_channel.busy
    assert fake_llm.requests == [] and fake_line.calls == []
    forged_rows = query(
        server, select(LineEventRecord.id).where(LineEventRecord.webhook_event_id.like("FORGED%"))
    )
    assert forged_rows == []


def test_a_message_reaching_another_process_waits_for_the_running_turn(
    fake_llm: FakeLLM, line_server: Callable[..., LiveServer], fake_line: FakeLine
) -> None:
    """LINE spreads webhooks over the app's processes: two servers on one database here. The second
    message reaches the other process while the first is being answered; it is answered after it, in
    order and with it in its history, never beside it and never with a "busy" reply."""
    fake_llm.script(text("歡迎。"), text("第一個回答。", first_token_delay=1.0), text("第二個回答。"))
    one, two = line_server(), line_server()  # same test, same data folder: the same database
    with client(one) as c:
        post_events(c, message_event("你好，我想問面試"))
    fake_line.wait_for(lambda: len(fake_line.replies) == 1)
    with client(one) as c1, client(two) as c2:
        post_events(c1, message_event("第一個問題是面試"))
        wait_until(lambda: fake_llm.open_streams == 1)  # the first process is answering
        post_events(c2, message_event("第二個問題是薪水"))
    fake_line.wait_for(lambda: len(fake_line.replies) == 3, timeout=30)
    assert [r.texts[0] for r in fake_line.replies] == ["歡迎。", "第一個回答。", "第二個回答。"]
    assert fake_llm.max_open_streams == 1
    last = [m.get("content") for m in fake_llm.requests[2]["messages"]]
    assert "第一個回答。" in last


def test_a_turn_deadline_mid_answer_is_replied_with_the_answer_so_far_and_the_apology(
    fake_llm: FakeLLM, line_server: Callable[..., LiveServer], fake_line: FakeLine
) -> None:
    """The provider stalls mid-answer past the turn's deadline: the chat still gets its reply, with the
    apology for the timeout after what was written (issue #24: every turn ends, on every channel)."""
    fake_llm.script(stall(60, after_chunks=["先", "查", "清", "楚", "同", "職", "位", "的"]))
    server = line_server(turn_deadline=10.0)
    with client(server) as c:
        assert post_events(c, message_event("怎麼談薪水？", reply_token="reply-deadline")).status_code == 200
    fake_line.wait_for(lambda: fake_line.replies, timeout=60)
    [answer] = fake_line.replies[0].texts
    assert answer.startswith("先查清楚")
    assert answer.rstrip().endswith("Summer 回應逾時，請稍後再試。")
    wait_until(lambda: settled(server), timeout=60)
    [(status, trace_id)] = query(server, select(LineEventRecord.status, LineEventRecord.trace_id))
    assert status == "answered"
    [(trace_status,)] = query(server, select(Trace.status).where(Trace.id == trace_id))
    assert trace_status == "error"
