"""SQLite has one writer: a process's write transactions queue in its event loop (one at a time) instead
of piling up inside SQLite, where under load they waited past busy_timeout ("database is locked")."""

from __future__ import annotations

import asyncio
from pathlib import Path

from sqlalchemy import func, select

from careerwise.store import Conversation, Database


async def test_write_transactions_of_one_process_run_one_at_a_time(tmp_path: Path) -> None:
    db = Database(f"sqlite+aiosqlite:///{tmp_path / 'w.db'}")
    db.migrate()
    open_now = 0
    most = 0

    async def write(i: int) -> None:
        nonlocal open_now, most
        async with db.session() as s, s.begin():
            open_now += 1
            most = max(most, open_now)
            s.add(Conversation(title=f"c{i}"))
            await s.flush()
            await asyncio.sleep(0.01)  # other tasks run meanwhile; they must not open a write
            open_now -= 1

    try:
        await asyncio.gather(*(write(i) for i in range(80)))
        async with db.session() as s:
            count = await s.scalar(select(func.count()).select_from(Conversation))
    finally:
        await db.dispose()
    assert count == 80 and most == 1


async def test_a_write_inside_a_write_of_the_same_task_does_not_wait_for_itself(tmp_path: Path) -> None:
    db = Database(f"sqlite+aiosqlite:///{tmp_path / 'w.db'}")
    db.migrate()
    try:
        async with db.session() as outer, outer.begin():
            outer.add(Conversation(title="outer"))
            async with db.session() as inner:  # a read while the write is open
                assert await inner.scalar(select(func.count()).select_from(Conversation)) == 0
        async with db.session() as s:
            assert await s.scalar(select(func.count()).select_from(Conversation)) == 1
    finally:
        await db.dispose()


async def test_postgresql_urls_take_no_process_lock() -> None:
    db = Database("postgresql://u:p@127.0.0.1:1/none")
    try:
        async with db.session() as s:
            assert "write_locks" not in s.info
    finally:
        await db.dispose()
