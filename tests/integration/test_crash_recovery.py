"""Start-up recovery (careerwise.store.recovery): what a process killed mid-work left behind is closed or
answered when the app starts again.

The dead process is a row in ``app_processes`` whose pid has exited (a child this test ran and waited
for) on this host: the rows it owns are exactly what a kill -9 leaves. Its replies and events are stamped
just now, so the age rule of old could not free them: only the owner's death does.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import select

from careerwise.channels.line import INTERRUPTED, WebhookEvent
from careerwise.services import Services
from careerwise.store import (
    AppProcess,
    Conversation,
    Database,
    LineEventRecord,
    LineUser,
    Message,
    Trace,
)
from careerwise.store.models import new_id
from careerwise.store.recovery import host_key, start_token
from tests.conftest import LiveServer, client, on_db
from tests.fakes.fake_line import FakeLine
from tests.fakes.fake_llm import FakeLLM, text
from tests.integration.test_line_webhook import (
    SECRET,
    TOKEN,
    USER,
    message_event,
    post_events,
    query,
    wait_until,
)

# --------------------------------------------------------------------------- a dead process


def exited_pid() -> int:
    """The pid of a process that has exited (and been reaped)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def process_row(*, pid: int, token: str | None, host: str | None = None, **times: Any) -> AppProcess:
    now = datetime.now(UTC)
    return AppProcess(
        id=new_id(),
        host=host or host_key(),
        pid=pid,
        start_token=token,
        started_at=times.get("started_at", now),
        heartbeat_at=times.get("heartbeat_at", now),
        stopped_at=times.get("stopped_at"),
    )


def dead_process() -> AppProcess:
    # its token cannot match anything running: even a pid reused meanwhile is another process
    return process_row(pid=exited_pid(), token="another-boot:1")


def live_process() -> AppProcess:
    """A row that names this test process: alive, as a process in another worker would be."""
    return process_row(pid=os.getpid(), token=start_token(os.getpid()))


async def _seed_turn(db: Database, owner: AppProcess) -> tuple[str, str]:
    """A web conversation with one answered turn and a second one cut off mid-reply, owned by ``owner``.
    Returns the conversation's id and the cut-off reply's id."""
    now = datetime.now(UTC)
    conv = Conversation(title="面試", channel="web")
    async with db.session() as s, s.begin():
        s.add_all([owner, conv])
        await s.flush()
        s.add_all(
            [
                Message(conversation_id=conv.id, role="user", content="面試怎麼準備", created_at=now),
                Message(conversation_id=conv.id, role="assistant", content="先準備故事。", created_at=now),
            ]
        )
        question = Message(conversation_id=conv.id, role="user", content="再多說一點", created_at=now)
        reply = Message(
            conversation_id=conv.id,
            role="assistant",
            status="pending",
            created_at=now + timedelta(microseconds=1),
            process_id=owner.id,
        )
        s.add_all([question, reply])
        await s.flush()
        trace = Trace(
            conversation_id=conv.id,
            user_message_id=question.id,
            assistant_message_id=reply.id,
            status="running",
        )
        s.add(trace)
        await s.flush()
        question.trace_id = reply.trace_id = trace.id
    return conv.id, reply.id


def seed_turn(
    make_server_services: Callable[..., Services], owner: AppProcess, **overrides: Any
) -> tuple[Services, str, str]:
    """Services whose database (not yet served) holds the cut-off turn."""
    services = make_server_services(**overrides)
    conv, reply = on_db(services.db.url, lambda db: _seed_turn(db, owner))
    return services, conv, reply


def c_metrics(server: LiveServer) -> str:
    with client(server) as c:
        return c.get("/metrics").text


@pytest.fixture
def serve() -> Iterator[Callable[[Services], LiveServer]]:
    servers: list[LiveServer] = []

    def start(services: Services) -> LiveServer:
        server = LiveServer(services).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


# --------------------------------------------------------------------------- web replies


def test_a_reply_left_pending_by_a_dead_process_is_closed_at_start_up(
    db_overrides: dict[str, Any],
    fake_llm: FakeLLM,
    make_server_services: Callable[..., Services],
    serve: Callable[[Services], LiveServer],
) -> None:
    services, conv, reply = seed_turn(make_server_services, dead_process(), **db_overrides)
    fake_llm.script(text("第三個回答。"))
    server = serve(services)
    with client(server) as c:
        r = c.post("/api/chat", json={"message": "還有呢？", "conversation_id": conv, "mode": "full"})
        assert r.status_code == 200, r.text  # no 409: the dead process's reply no longer holds it
        assert r.json()["answer"] == "第三個回答。"
        detail = c.get(f"/api/conversations/{conv}").json()
    [old] = [m for m in detail["messages"] if m["id"] == reply]
    assert old["status"] == "error"
    [notice] = old["notices"]
    assert notice["code"] == "interrupted" and "重新啟動" in notice["message"]
    [(status, code)] = query(
        server, select(Trace.status, Trace.error_code).where(Trace.assistant_message_id == reply)
    )
    assert (status, code) == ("error", "interrupted")
    metrics = c_metrics(server)
    assert 'careerwise_recovered_total{kind="reply"} 1.0' in metrics


def test_a_reply_of_a_live_process_is_left_alone(
    fake_llm: FakeLLM, make_server_services: Callable[..., Services], serve: Callable[[Services], LiveServer]
) -> None:
    """Another worker on this host is writing the reply: start-up must not close it, and the
    conversation stays busy until that worker ends its turn."""
    services, conv, reply = seed_turn(make_server_services, live_process())
    server = serve(services)
    with client(server) as c:
        r = c.post("/api/chat", json={"message": "還有呢？", "conversation_id": conv, "mode": "full"})
    assert r.status_code == 409 and r.json()["error"]["code"] == "conversation_busy"
    assert query(server, select(Message.status).where(Message.id == reply)) == [("pending",)]
    assert fake_llm.requests == []


@pytest.mark.parametrize(
    ("heartbeat_age", "closed"),
    [(timedelta(seconds=5), False), (timedelta(minutes=5), True)],
    ids=["beating", "silent"],
)
def test_a_process_on_another_host_is_dead_once_its_heartbeat_stops(
    fake_llm: FakeLLM,
    make_server_services: Callable[..., Services],
    serve: Callable[[Services], LiveServer],
    heartbeat_age: timedelta,
    closed: bool,
) -> None:
    """Its pids cannot be seen from here: only a heartbeat older than the lease tells it died."""
    then = datetime.now(UTC) - heartbeat_age
    owner = process_row(pid=1, token="elsewhere:1", host="another-host|pid:[1]", heartbeat_at=then)
    services, conv, reply = seed_turn(make_server_services, owner)
    fake_llm.script(text("好。"))
    server = serve(services)
    with client(server) as c:
        r = c.post("/api/chat", json={"message": "還有呢？", "conversation_id": conv, "mode": "full"})
    assert r.status_code == (200 if closed else 409), r.text
    assert query(server, select(Message.status).where(Message.id == reply)) == [
        ("error" if closed else "pending",)
    ]


def test_a_running_server_stamps_its_replies_and_marks_itself_stopped(
    fake_llm: FakeLLM, make_server_services: Callable[..., Services]
) -> None:
    fake_llm.script(text("好的。"))
    server = LiveServer(make_server_services()).start()
    try:
        with client(server) as c:
            r = c.post("/api/chat", json={"message": "面試怎麼準備", "mode": "full"})
        assert r.status_code == 200
        owner = server.services.process.owner
        assert owner is not None
        [(stamped,)] = query(server, select(Message.process_id).where(Message.role == "assistant"))
        assert stamped == owner
    finally:
        server.stop()
    [(pid, stopped)] = query(
        server, select(AppProcess.pid, AppProcess.stopped_at).where(AppProcess.id == owner)
    )
    assert pid == os.getpid() and stopped is not None


# --------------------------------------------------------------------------- LINE events


@pytest.fixture(scope="module")
def _line_api() -> Iterator[FakeLine]:
    with FakeLine(access_token=TOKEN) as fake:
        yield fake


@pytest.fixture
def fake_line(_line_api: FakeLine) -> Iterator[FakeLine]:
    _line_api.reset()
    yield _line_api
    _line_api.reset()


def line_services(
    make_server_services: Callable[..., Services], fake_line: FakeLine, **overrides: Any
) -> Services:
    return make_server_services(
        line_channel_secret=SECRET,
        line_channel_access_token=TOKEN,
        line_api_base_url=fake_line.base_url,
        **overrides,
    )


async def _seed_event(
    db: Database, owner: AppProcess | None, event: dict[str, Any], received: datetime
) -> None:
    parsed = WebhookEvent.model_validate(event)
    async with db.session() as s, s.begin():
        if owner is not None:
            s.add(owner)
        s.add(
            LineEventRecord(
                webhook_event_id=parsed.webhookEventId,
                event_type="message",
                chat_key=USER,
                status="received",
                received_at=received,
                process_id=owner.id if owner is not None else None,
                payload=parsed.model_dump(mode="json"),
            )
        )


def seed_event(
    url: str, owner: AppProcess | None, event: dict[str, Any], *, age: timedelta = timedelta(0)
) -> None:
    on_db(url, lambda db: _seed_event(db, owner, event, datetime.now(UTC) - age))


def event_status(server: LiveServer, event_id: str) -> tuple[str, str | None, object]:
    [row] = query(
        server,
        select(LineEventRecord.status, LineEventRecord.delivery, LineEventRecord.payload).where(
            LineEventRecord.webhook_event_id == event_id
        ),
    )
    return row[0], row[1], row[2]


def wait_for_status(server: LiveServer, event_id: str, wanted: str) -> None:
    wait_until(lambda: event_status(server, event_id)[0] == wanted)


def test_a_received_line_message_of_a_dead_process_is_answered_at_start_up(
    db_overrides: dict[str, Any],
    fake_llm: FakeLLM,
    make_server_services: Callable[..., Services],
    serve: Callable[[Services], LiveServer],
    fake_line: FakeLine,
) -> None:
    services = line_services(make_server_services, fake_line, **db_overrides)
    event = message_event("怎麼談薪水？", reply_token="token-before-the-crash")
    seed_event(services.db.url, dead_process(), event)
    fake_llm.script(text("先問預算，再開價。"))
    server = serve(services)
    fake_line.wait_for(lambda: fake_line.delivered)
    [sent] = fake_line.delivered
    assert sent.texts[0].startswith("先問預算，再開價。")
    wait_for_status(server, event["webhookEventId"], "answered")
    assert event_status(server, event["webhookEventId"])[2] is None  # the stored event is cleared
    assert query(server, select(LineUser.line_user_id)) == [(USER,)]  # answered through the engine
    assert 'careerwise_recovered_total{kind="line_requeued"} 1.0' in c_metrics(server)


def test_an_old_received_line_message_gets_an_apology_pushed(
    fake_llm: FakeLLM,
    make_server_services: Callable[..., Services],
    serve: Callable[[Services], LiveServer],
    fake_line: FakeLine,
) -> None:
    """Older than the re-answer window: an answer would come out of the blue, so the chat is asked to
    send it again, by push (the reply token expired long ago)."""
    services = line_services(make_server_services, fake_line)
    event = message_event("怎麼談薪水？")
    seed_event(services.db.url, dead_process(), event, age=timedelta(hours=3))
    server = serve(services)
    fake_line.wait_for(lambda: fake_line.pushes)
    [push] = fake_line.pushes
    assert push.json["to"] == USER and push.texts == [INTERRUPTED]
    assert fake_line.replies == [] and fake_llm.requests == []
    wait_for_status(server, event["webhookEventId"], "apologised")
    assert event_status(server, event["webhookEventId"])[1] == "push"


def test_a_redelivery_of_a_message_still_received_by_a_dead_process_is_answered(
    fake_llm: FakeLLM,
    make_server_services: Callable[..., Services],
    serve: Callable[[Services], LiveServer],
    fake_line: FakeLine,
) -> None:
    """The event is stored after this server started (so its start-up did not see it): LINE's
    redelivery is the only way it comes back, and it must not be dropped as a duplicate."""
    server = serve(line_services(make_server_services, fake_line))
    event = message_event("怎麼談薪水？", reply_token="token-of-the-first-delivery")
    seed_event(server.services.db.url, dead_process(), event)
    fake_llm.script(text("先問預算。"))
    redelivered = event | {"replyToken": "token-of-the-redelivery", "deliveryContext": {"isRedelivery": True}}
    with client(server) as c:
        assert post_events(c, redelivered).status_code == 200
    fake_line.wait_for(lambda: fake_line.replies)
    [reply] = fake_line.replies
    assert reply.json["replyToken"] == "token-of-the-redelivery"
    wait_for_status(server, event["webhookEventId"], "answered")
    assert 'careerwise_recovered_total{kind="line_taken_over"} 1.0' in c_metrics(server)


def test_a_redelivery_of_a_message_a_live_process_is_answering_is_dropped(
    fake_llm: FakeLLM,
    make_server_services: Callable[..., Services],
    serve: Callable[[Services], LiveServer],
    fake_line: FakeLine,
) -> None:
    server = serve(line_services(make_server_services, fake_line))
    event = message_event("怎麼談薪水？")
    seed_event(server.services.db.url, live_process(), event)
    with client(server) as c:
        assert post_events(c, event | {"deliveryContext": {"isRedelivery": True}}).status_code == 200
        # a later message of the same chat is answered: the queue ran past the dropped one
        fake_llm.script(text("好。"))
        post_events(c, message_event("還有呢？"))
    fake_line.wait_for(lambda: fake_line.replies)
    [answer] = fake_line.delivered
    assert answer.texts[0].startswith("好。")
    assert event_status(server, event["webhookEventId"])[0] == "received"
