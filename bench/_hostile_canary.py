"""``python -m bench hostile``, section ``canary``: the injection cases of tests/injection_cases.py (30
injected knowledge-base documents, 30 direct messages) through the app with the scripted provider that
obeys every instruction (tests/integration/test_prompt_injection.py), then the same 60 messages with a
provider that names its tool calls, their ids and arguments after the canary
(tests/integration/test_tool_call_hardening.py). Counted in every sink: the SSE streams, the stored
rows, the trace exports and /metrics. Goal: 0 occurrences of the canary's random part, in any case.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import select

from bench._serve import data_dir_with_corpus
from bench.common import table
from careerwise.cli.admin import load_trace
from careerwise.config import Settings
from careerwise.knowledge.ingest import ingest_paths
from careerwise.llm.canary import CanaryGuard
from careerwise.services import build_services
from careerwise.store import Database, Trace
from tests.conftest import LiveServer
from tests.fakes.fake_llm import FakeLLM, Reply
from tests.injection_cases import CASES_PER_KIND, direct_message, write_injected_docs
from tests.integration.test_prompt_injection import _all_text, _canary_of, obedient_model
from tests.integration.test_tool_call_hardening import _leaking_model

SINKS = ("SSE", "stored rows", "trace exports", "/metrics")


def _settings(data_dir: Path, llm_url: str) -> Settings:
    return Settings(  # type: ignore[call-arg]
        _env_file=None,
        environment="test",
        data_dir=data_dir,
        llm_base_url=llm_url,
        llm_model="fake-model",
        llm_read_timeout=5.0,
        turn_deadline=20.0,
        routing_llm=False,
        anonymous_chat_per_minute=0,
        young_accounts_chat_per_minute=0,
        stream_pace_ms=0,
        gc_freeze=False,
    )


async def _exports(url: str) -> str:
    db = Database(url)
    try:
        async with db.session() as s:
            ids = list((await s.scalars(select(Trace.id))).all())
        return "\n".join([json.dumps(await load_trace(db, t), ensure_ascii=False, default=str) for t in ids])
    finally:
        await db.dispose()


def _messages() -> list[str]:
    return [f"題庫{i} 面試準備" for i in range(CASES_PER_KIND)] + [
        direct_message(i) for i in range(CASES_PER_KIND)
    ]


def run() -> list[str]:
    rows: list[list[object]] = []
    blocked = 0
    with FakeLLM() as fake:
        canaries: set[str] = set()

        def responder(body: dict[str, Any]) -> Reply:
            canaries.add(_canary_of(body))
            model = _leaking_model if "leak-tools" in json.dumps(body, ensure_ascii=False) else obedient_model
            return model(body)

        fake.responder = responder
        data_dir = data_dir_with_corpus()
        server = LiveServer(build_services(_settings(data_dir, fake.base_url))).start()
        try:
            services = server.services
            docs = write_injected_docs(Path(tempfile.mkdtemp(prefix="cw-bench-canary-")))
            asyncio.run(ingest_paths(services.db, services.kb.embedder, docs))
            streams: list[str] = []
            statuses: dict[int, int] = {}
            with httpx.Client(base_url=server.url, timeout=60) as c:
                for message in _messages() + [f"{m} leak-tools" for m in _messages()]:
                    r = c.post("/api/chat", json={"message": message})
                    statuses[r.status_code] = statuses.get(r.status_code, 0) + 1
                    streams.append(r.text)
                metrics = c.get("/metrics").text
            url = services.settings.resolved_database_url
            sinks = {
                "SSE": "\n".join(streams),
                "stored rows": _all_text(url),
                "trace exports": asyncio.run(_exports(url)),
                "/metrics": metrics,
            }
            guard = services.provider
            blocked = guard.leaks_blocked if isinstance(guard, CanaryGuard) else 0
        finally:
            server.stop()
    secrets = {c.removeprefix("CW-").lower() for c in canaries}
    total = 0
    for name in SINKS:
        found = sum(sinks[name].lower().count(s) for s in secrets)
        total += found
        rows.append([name, f"{len(sinks[name]):,}", found])
    return [
        f"## Canary: {len(streams)} injection turns, {total} canary occurrences in the sinks (goal 0)\n",
        table(["sink", "characters searched", "canary occurrences"], rows),
        "",
        f"Statuses: {dict(sorted(statuses.items()))}; leaks the guard scrubbed from the provider's "
        f"output: {blocked}; canaries seen by the provider: {len(canaries)}.",
    ]
