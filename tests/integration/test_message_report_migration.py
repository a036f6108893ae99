"""``messages.report`` on SQLite and PostgreSQL: a report turn stores its structure there through the
turn's closing write, and migration 0019 adds the column empty beside the messages stored before it
(their reports are read from their text) and takes it away again on the way down."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from alembic import command
from alembic.config import Config
from sqlalchemy import create_engine, func, inspect, select, text

from careerwise.events import DoneEvent
from careerwise.reports import StoredReport, message_markdown
from careerwise.services import Services
from careerwise.store import Message
from careerwise.store import db as store_db
from careerwise.store.db import sync_url
from tests.fakes.fake_llm import FakeLLM
from tests.integration.test_deep_answers import COMPLEX, report_of, responder, run_turn, services_for

REPORT_TEXT = "# 轉職評估\n\n## 市場分析\n需求穩定。\n\n## 行動建議\n先做一個作品。"


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_migration_0019_adds_an_empty_report_beside_old_messages(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = (
        f"sqlite:///{tmp_path / 'm.db'}"
        if backend == "sqlite"
        else sync_url(request.getfixturevalue("pg_empty_database"))
    )
    cfg = Config()
    cfg.set_main_option("script_location", str(Path(store_db.__file__).parent / "migrations"))
    cfg.set_main_option("sqlalchemy.url", sync_url(url).replace("%", "%%"))
    engine = create_engine(url)
    try:
        command.upgrade(cfg, "0018")
        with engine.begin() as conn:
            conn.execute(
                text(
                    "INSERT INTO conversations (id, title, channel, assistant_id, created_at, updated_at) "
                    "VALUES ('c1', '', 'web', 'summer', CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)"
                )
            )
            conn.execute(
                text(
                    "INSERT INTO messages (id, conversation_id, role, content, status, created_at) "
                    "VALUES ('m1', 'c1', 'assistant', :content, 'ok', CURRENT_TIMESTAMP)"
                ),
                {"content": REPORT_TEXT},
            )
        command.upgrade(cfg, "head")
        assert "report" in {c["name"] for c in inspect(engine).get_columns("messages")}
        with engine.connect() as conn:
            row = conn.execute(text("SELECT content, report FROM messages WHERE id = 'm1'")).one()
        assert tuple(row) == (REPORT_TEXT, None)
        command.downgrade(cfg, "0018")
        assert "report" not in {c["name"] for c in inspect(engine).get_columns("messages")}
        with engine.connect() as conn:
            assert conn.scalar(text("SELECT content FROM messages WHERE id = 'm1'")) == REPORT_TEXT
    finally:
        engine.dispose()


async def test_a_report_turn_stores_its_structure_beside_its_text(
    db_overrides: dict[str, Any], fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    fake_llm.responder = responder({})
    services = services_for(make_services, "complex", **db_overrides)
    events = await run_turn(services, COMPLEX)
    report, done = report_of(events), events[-1]
    assert isinstance(done, DoneEvent) and done.status == "ok"
    async with services.db.session() as s:
        rows = (await s.execute(select(Message.role, Message.content, Message.report))).all()
    assert [tuple(r) for r in rows if r.role == "assistant"] == [
        ("assistant", message_markdown(report), StoredReport.of(report).to_json())
    ]
    async with services.db.session() as s:  # the user's message: SQL NULL, not a JSON 'null'
        empty = await s.scalar(select(func.count()).where(Message.role == "user", Message.report.is_(None)))
    assert empty == 1
