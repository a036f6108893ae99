"""``python -m bench hostile``, section ``recovery``: kill -9 mid-turn on the web and on LINE, then restart.

One ``careerwise serve`` (one process, SQLite, the fake provider streaming slowly, LINE pointed at the
fake LINE API of tests/fakes/fake_line.py) per round. In each round a web reply is being streamed and a
LINE message is being answered when the server is killed with SIGKILL; the next server starts on the same
data folder. After each restart the figures are

* the seconds the cut-off conversation answered 409 before it took a new message (goal: 0, its first
  message is taken), and how many 409s it gave;
* whether the LINE message the killed process had taken (LINE had its 200 and will not send it again)
  was answered or apologised for (goal: every one).

Start-up recovery (careerwise.store.recovery) is what makes them so; without it each conversation stays
busy for the turn deadline + 60 s and each LINE message goes unanswered.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import tempfile
import threading
import time
import uuid
from pathlib import Path

import httpx

from bench._serve import data_dir_with_corpus, serve
from bench.common import fake_llm, process, table
from tests.conftest import free_port
from tests.fakes.fake_line import FakeLine
from tests.integration.test_line_webhook import SECRET, TOKEN, message_event, post_events

ROUNDS = 10
WAIT_GUARD = 120.0  # how long an answer to the LINE message is waited for after a restart


def _pending(data_dir: Path) -> int:
    with sqlite3.connect(data_dir / "careerwise.db") as db:
        return int(db.execute("SELECT count(*) FROM messages WHERE status = 'pending'").fetchone()[0])


def _stream_until_first_text(url: str, conversation: str, started: threading.Event) -> None:
    """A web turn whose reply is being written when the server dies (the read then fails: expected)."""
    try:
        with (
            httpx.Client(base_url=url, timeout=60) as c,
            c.stream(
                "POST", "/api/chat", json={"message": "面試要怎麼準備", "conversation_id": conversation}
            ) as r,
        ):
            for line in r.iter_lines():
                if line.startswith("event: delta"):
                    started.set()
    except httpx.HTTPError:
        started.set()  # the kill cut the stream, as intended


def _seconds_of_409(url: str, conversation: str) -> tuple[float, int]:
    """Send a message to the cut-off conversation until it is taken: the seconds spent on 409s, and
    how many there were. The status arrives with the stream's headers; the answer is not waited for."""
    first = time.perf_counter()
    refused = 0
    with httpx.Client(base_url=url, timeout=60) as c:
        while True:
            body = {"message": "還在嗎？", "conversation_id": conversation}
            with c.stream("POST", "/api/chat", json=body) as r:
                if r.status_code != 409:
                    if refused == 0:
                        return 0.0, 0
                    return time.perf_counter() - first, refused
            refused += 1
            time.sleep(0.5)


def _answered(line: FakeLine, user: str, reply_token: str) -> bool:
    return any(
        call.json.get("to") == user or call.json.get("replyToken") == reply_token for call in line.delivered
    )


def _kill_mid_turn(url: str, pid: int, data_dir: Path, line: FakeLine, round_: int) -> tuple[str, str, str]:
    """Start a web turn and a LINE turn, and SIGKILL the server while both are being written.
    Returns the conversation, the LINE user and the reply token of the message."""
    user, reply_token = "U" + uuid.uuid4().hex, f"bench-token-{round_}-{uuid.uuid4().hex[:8]}"
    with httpx.Client(base_url=url, timeout=60) as c:
        conversation = c.post("/api/conversations", json={"title": f"round {round_}"}).json()["id"]
        if post_events(c, message_event(user=user, reply_token=reply_token)).status_code != 200:
            raise RuntimeError("the webhook did not take the LINE message")
    started = threading.Event()
    web = threading.Thread(target=_stream_until_first_text, args=(url, conversation, started), daemon=True)
    web.start()
    deadline = time.monotonic() + 60
    while not (started.is_set() and _pending(data_dir) >= 2):
        if time.monotonic() > deadline:
            raise RuntimeError("the two turns did not start")
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    web.join(timeout=30)
    return conversation, user, reply_token


def run(rounds: int = ROUNDS) -> list[str]:
    """The ``recovery`` section: ``rounds`` kills, each followed by a restart; returns its table."""
    llm_port = free_port()
    logs = Path(tempfile.mkdtemp(prefix="cw-bench-recovery-"))
    data_dir = data_dir_with_corpus()
    stats_url = f"http://127.0.0.1:{llm_port}/_fake/stats"
    rows: list[list[object]] = []
    zero_409 = answered = 0
    with (
        process(fake_llm(llm_port, mode="text", first_token_delay=1.0, delay=0.2), ready_url=stats_url),
        FakeLine(access_token=TOKEN) as line,
    ):
        env = {
            "CAREERWISE_LINE_CHANNEL_SECRET": SECRET,
            "CAREERWISE_LINE_CHANNEL_ACCESS_TOKEN": TOKEN,
            "CAREERWISE_LINE_API_BASE_URL": line.base_url,
        }
        cut: tuple[str, str, str] | None = None
        for round_ in range(rounds + 1):
            port = free_port()
            log = logs / f"serve-{round_}.log"
            with serve(
                data_dir=data_dir, llm_port=llm_port, port=port, workers=1, log=log, env=env
            ) as server:
                if cut is not None:  # this server is the restart after the previous kill
                    conversation, user, reply_token = cut
                    seconds, refused = _seconds_of_409(server.url, conversation)
                    deadline = time.monotonic() + WAIT_GUARD
                    while not _answered(line, user, reply_token) and time.monotonic() < deadline:
                        time.sleep(0.1)
                    ok = _answered(line, user, reply_token)
                    zero_409 += seconds == 0.0
                    answered += ok
                    rows.append([round_, f"{seconds:.1f}", refused, "yes" if ok else "NO"])
                if round_ < rounds:
                    cut = _kill_mid_turn(server.url, server.proc.pid, data_dir, line, round_ + 1)
    return [
        f"## Crash recovery: kill -9 mid-turn, {rounds} times on the web and on LINE\n",
        table(["restart", "s of 409", "409s", "LINE message answered or apologised for"], rows),
        "",
        f"After a restart: {zero_409} of {rounds} conversations took a new message at once (goal: all, 0 s "
        f"of 409); {answered} of {rounds} LINE messages taken by the killed process were answered or "
        "apologised for (goal: all). Server logs: " + str(logs),
    ]
