"""Migration 0019 on SQLite and PostgreSQL: ``messages.report`` is added empty beside the messages stored
before it (their reports are read from their text), and goes away again on the way down."""

from __future__ import annotations

from pathlib import Path

import pytest
from alembic import command
from alembic.config import Config
from sqlalchemy import create_engine, inspect, text

from careerwise.store import db as store_db
from careerwise.store.db import sync_url

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
