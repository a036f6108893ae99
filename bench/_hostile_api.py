"""``python -m bench hostile``, sections ``bookings`` and ``schemathesis``, against a real ``careerwise
serve`` (one process, SQLite, the fake provider).

``bookings``: 60 booking attempts, one after the other, from one IP for 60 free slots, as an anonymous
client would script them. Goal: at most the configured number accepted (the slots one IP may hold, and
the bookings it may make a day), every other attempt a 429.

``schemathesis``: generated requests over every operation of the OpenAPI schema, anonymous, as a user
and as an administrator (tests/fuzz.py, the code of the test in ``make test`` with more cases). Goal:
at least 3,000 cases, 0 server errors, 0 undocumented statuses.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

import httpx
import requests

from bench._serve import data_dir_with_corpus, serve_on_fake_llm
from bench.common import table
from careerwise.auth import AccountService
from careerwise.config import Settings
from careerwise.store import Database
from tests.booking_helpers import setup_database
from tests.fuzz import ROLES, fuzz

ATTEMPTS = 60
FUZZ_EXAMPLES = 15  # per operation, role and generation mode: past 3,000 cases over the schema
FUZZ_GOAL = 3000
PASSWORD = "bench-password-123"
ACCOUNTS = {"user": "bench-user@example.com", "admin": "bench-admin@example.com"}


async def accounts(data_dir: Path) -> None:
    """The bench's user and administrator, in the database of ``data_dir``."""
    db = Database(f"sqlite+aiosqlite:///{data_dir / 'careerwise.db'}")
    try:
        await asyncio.to_thread(db.migrate)
        accounts = AccountService(db, "x" * 40)
        await accounts.create_user(email=ACCOUNTS["user"], password=PASSWORD, role="user")
        await accounts.create_user(email=ACCOUNTS["admin"], password=PASSWORD, role="admin")
    finally:
        await db.dispose()


def bookings() -> list[str]:
    defaults = Settings(_env_file=None)  # type: ignore[call-arg]
    held, per_day = defaults.bookings_held, defaults.bookings_per_day
    data_dir = data_dir_with_corpus()
    asyncio.run(accounts(data_dir))
    slots = setup_database(f"sqlite+aiosqlite:///{data_dir / 'careerwise.db'}", n=ATTEMPTS)
    statuses: Counter[int] = Counter()
    codes: Counter[str] = Counter()
    with (
        serve_on_fake_llm(data_dir, log_prefix="cw-bench-bookings-") as server,
        httpx.Client(base_url=server.url, timeout=60) as client,
    ):
        for i, start in enumerate(slots):
            r = client.post(
                "/api/bookings",
                json={"slot_start": start.isoformat(), "name": f"訪客 {i}", "contact": f"v{i}@example.com"},
            )
            statuses[r.status_code] += 1
            if r.status_code >= 400:
                codes[r.json()["error"]["code"]] += 1
    accepted = statuses[201]
    limit = min(held, per_day)
    return [
        f"## Bookings: {ATTEMPTS} attempts from one IP, {accepted} accepted "
        f"(goal: at most {limit}; held {held}, per day {per_day})\n",
        table(
            ["status", "answers"],
            [[status, count] for status, count in sorted(statuses.items())],
        ),
        "",
        f"Refusals by code: {dict(codes)}.",
    ]


def schemathesis() -> list[str]:
    data_dir = data_dir_with_corpus()
    asyncio.run(accounts(data_dir))
    env = {
        # the fuzzer signs up and logs in from one IP; the roles must be able to log in again
        "CAREERWISE_LOGIN_PER_MINUTE": "0",
        "CAREERWISE_LOGIN_PER_ACCOUNT_PER_MINUTE": "0",
        "CAREERWISE_USER_CHAT_PER_MINUTE": "0",
        "CAREERWISE_YOUNG_ACCOUNTS_CHAT_PER_MINUTE": "0",
        # configured, so the webhook answers the unsigned bodies 400 (unconfigured: a deliberate 503);
        # nothing is sent to this address
        "CAREERWISE_LINE_CHANNEL_SECRET": "bench-channel-secret",
        "CAREERWISE_LINE_CHANNEL_ACCESS_TOKEN": "bench-token",
        "CAREERWISE_LINE_API_BASE_URL": "http://127.0.0.1:9",
    }
    with serve_on_fake_llm(data_dir, log_prefix="cw-bench-fuzz-", env=env) as server:

        def log_in(role: str, session: requests.Session) -> None:
            r = session.post(
                f"{server.url}/api/auth/login", json={"email": ACCOUNTS[role], "password": PASSWORD}
            )
            r.raise_for_status()

        sessions = {role: requests.Session() for role in ROLES}
        for role in ACCOUNTS:
            log_in(role, sessions[role])
        report = fuzz(server.url, sessions, examples=FUZZ_EXAMPLES, negative_roles=ROLES, log_in=log_in)
    lines = [
        f"## Schemathesis: {report.cases:,} cases over {len(report.operations)} operations "
        f"(goal at least {FUZZ_GOAL:,}): {len(report.server_errors)} server errors, "
        f"{len(report.undocumented)} undocumented statuses, {len(report.schema_mismatches)} bodies "
        "off the schema (goal 0, 0, 0)\n",
        table(["status", "answers"], [[s, n] for s, n in sorted(report.statuses.items())]),
    ]
    failures = report.failures()
    if failures:
        lines += ["", "First failures:", *(f"- {f}" for f in failures[:10])]
    return lines
