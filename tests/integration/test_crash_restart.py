"""kill -9 for real: a `careerwise serve` process is killed while it writes a web reply and answers a
LINE message, then started again on the same data folder. After the restart the conversation takes a
new message at once (no 409) and the LINE message is answered; nothing here waits for a lease or an
age to run out."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from sqlalchemy import select

from careerwise.store import Database, LineEventRecord, Message
from tests.conftest import free_port, on_db, serve_env
from tests.fakes.fake_line import FakeLine
from tests.fakes.fake_llm import FakeLLM, text
from tests.integration.test_line_webhook import SECRET, TOKEN, message_event, post_events

START_GUARD = 240.0  # only stops a broken start from hanging the run: loading the embedder takes a while


@contextmanager
def serving(data_dir: Path, fake_llm: FakeLLM, fake_line: FakeLine, log: Path) -> Iterator[tuple[str, int]]:
    """`careerwise serve` in a process of its own; yields its URL and pid, kills what is left at the end."""
    port = free_port()
    env = serve_env(
        data_dir,
        fake_llm.base_url,
        CAREERWISE_LINE_CHANNEL_SECRET=SECRET,
        CAREERWISE_LINE_CHANNEL_ACCESS_TOKEN=TOKEN,
        CAREERWISE_LINE_API_BASE_URL=fake_line.base_url,
    )
    command = [sys.executable, "-m", "careerwise.cli", "serve", "--port", str(port)]
    with log.open("ab") as out:  # a file, not a pipe: a pipe nobody reads would block the server
        proc = subprocess.Popen(
            command, env=env, start_new_session=True, stdout=out, stderr=subprocess.STDOUT
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_GUARD
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"serve exited: {log.read_text(errors='replace')[-3000:]}")
            try:
                if httpx.get(url + "/healthz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass  # not listening yet
            if time.monotonic() > deadline:
                raise RuntimeError(f"serve did not start: {log.read_text(errors='replace')[-3000:]}")
            time.sleep(0.2)
        yield url, proc.pid
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)


@pytest.fixture
def fake_line() -> Iterator[FakeLine]:
    with FakeLine(access_token=TOKEN) as fake:
        yield fake


def wait_until(condition: object, what: str, guard: float = 60.0) -> None:
    # polling for an outcome; the guard only stops a broken test from hanging
    assert callable(condition)
    deadline = time.monotonic() + guard
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not reached: {what}")
        time.sleep(0.05)


@pytest.mark.timeout(900)  # two starts of a server that loads the embedder and the index
def test_kill_9_mid_turn_on_the_web_and_on_line_then_restart(
    tmp_path: Path, corpus_db: Path, fake_llm: FakeLLM, fake_line: FakeLine
) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    shutil.copy(corpus_db, data_dir / "careerwise.db")
    log = tmp_path / "serve.log"
    fake_llm.default = text("這是一段很長的回答。" * 200, chunk_size=2, delay=0.05)
    event = message_event("怎麼談薪水？")
    database = f"sqlite+aiosqlite:///{data_dir / 'careerwise.db'}"

    with (
        serving(data_dir, fake_llm, fake_line, log) as (url, pid),
        httpx.Client(base_url=url, timeout=30) as c,
    ):
        conv = c.post("/api/conversations", json={"title": "面試"}).json()["id"]
        assert post_events(c, event).status_code == 200  # LINE has its 200: it will not send it again
        # the web reply read to its end in a thread: a client that stops reading has left, and the
        # server would store its turn as cancelled
        reader = threading.Thread(target=_read_until_cut, args=(url, conv), daemon=True)
        reader.start()
        # both replies being written (the LINE turn's too), as stored: then the kill
        wait_until(lambda: on_db(database, _left_behind)[0] == ["pending", "pending"], "both turns open")
        os.kill(pid, signal.SIGKILL)
        reader.join(timeout=30)
    # what the kill left, the test's premise: the web reply and the LINE turn's reply pending, the
    # LINE event received and unanswered
    left = on_db(database, _left_behind)
    assert left == (["pending", "pending"], ["received"]), log.read_text(errors="replace")[-3000:]
    assert fake_line.delivered == []

    fake_llm.default = text("好的。")
    with serving(data_dir, fake_llm, fake_line, log) as (url, _), httpx.Client(base_url=url, timeout=30) as c:
        r = c.post("/api/chat", json={"message": "還在嗎？", "conversation_id": conv, "mode": "full"})
        assert r.status_code == 200, r.text  # at once: no 409 from the reply the killed process left
        fake_line.wait_for(lambda: fake_line.delivered)
        assert fake_line.delivered[0].texts[0].startswith("好的。")  # the message answered, not dropped
        wait_until(lambda: on_db(database, _left_behind)[1] == ["answered"], "the LINE event answered")
        replies, _ = on_db(database, _left_behind)
    assert replies == ["error", "error", "ok", "ok"]  # the two cut-off replies closed, two new answers


def _read_until_cut(url: str, conversation: str) -> None:
    body = {"message": "面試要怎麼準備", "conversation_id": conversation}
    try:
        with httpx.Client(base_url=url, timeout=60) as c, c.stream("POST", "/api/chat", json=body) as r:
            for _ in r.iter_lines():
                pass
    except httpx.HTTPError:
        pass  # the kill cut the stream: what this test does


async def _left_behind(db: Database) -> tuple[list[str], list[str]]:
    async with db.session() as s:
        replies = (await s.scalars(select(Message.status).where(Message.role == "assistant"))).all()
        events = (await s.scalars(select(LineEventRecord.status))).all()
    return sorted(replies), sorted(events)
