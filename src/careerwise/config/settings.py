"""The one settings object: the only reader of the ``CAREERWISE_*`` variables.

Every field maps to an environment variable with the ``CAREERWISE_`` prefix
(``llm_base_url`` -> ``CAREERWISE_LLM_BASE_URL``); docs/configuration.md lists them all. The fields are
declared once each, in groups (:mod:`.provider`, :mod:`.knowledge`, :mod:`.serving`, :mod:`.uploads`,
:mod:`.access`, and the per-turn :class:`careerwise.tunables.Tunables`); :class:`Settings` inherits
them, reads them from the environment, refuses unsafe values in production and resolves the deadlines
left to the provider.

The rest of the package touches ``os.environ`` in four modules, none of them to read a setting:
``cli/__init__.py`` and ``llm/local/weights.py`` default ``OMP_WAIT_POLICY`` before an OpenMP library
loads; ``cli/root.py`` (``careerwise serve``) hands its workers ``CAREERWISE_SERVE_WORKERS`` and
prometheus_client's ``PROMETHEUS_MULTIPROC_DIR``, which ``tracing/metrics.py`` reads at a scrape
(tests/unit/test_environment_readers.py keeps this list true).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from careerwise.config.access import AccessSettings
from careerwise.config.knowledge import KnowledgeSettings
from careerwise.config.provider import ProviderSettings
from careerwise.config.serving import ServingSettings
from careerwise.config.uploads import UploadSettings
from careerwise.tunables import Deadlines, Tunables

_REMOTE = Deadlines()  # a remote provider's deadlines: the defaults of a resolved turn


class Settings(
    ProviderSettings,
    KnowledgeSettings,
    ServingSettings,
    UploadSettings,
    AccessSettings,
    Tunables,
    BaseSettings,
):
    model_config = SettingsConfigDict(env_prefix="CAREERWISE_", env_file=".env", extra="ignore")

    environment: Literal["development", "production", "test"] = "development"
    data_dir: Path = Field(default=Path("data"), description="Where the SQLite file and model cache live.")
    database_url: str | None = Field(default=None, description="SQLAlchemy URL; default sqlite in data_dir.")
    database_pool_size: int = Field(
        default=5, ge=1, le=1000, description="PostgreSQL: connections each process keeps open."
    )
    database_max_overflow: int = Field(
        default=10, ge=0, le=1000, description="PostgreSQL: extra connections a process may open at a peak."
    )
    database_search_connections: int = Field(
        default=4,
        ge=1,
        le=64,
        description="PostgreSQL: connections each process keeps for knowledge searches in pgvector (and "
        "ingest's vector upkeep); a search beyond them waits for one.",
    )
    database_writer_threads: int = Field(
        default=6,
        ge=1,
        le=32,
        description="PostgreSQL: threads (one connection each) that run a turn's writes off the event loop.",
    )
    database_writer_batch: bool = Field(
        default=True,
        description="PostgreSQL: the writer threads send a turn's statements together, as one query of "
        "several statements with their values bound in the client: a round trip per answer the turn needs.",
    )

    @model_validator(mode="after")
    def _refuse_unsafe(self) -> Settings:
        if self.environment == "production" and self.llm_base_url and not self.llm_api_key.get_secret_value():
            raise ValueError("CAREERWISE_LLM_API_KEY must be set in production when a remote LLM is used")
        if self.environment == "production" and (
            self.session_secret is None or len(self.session_secret.get_secret_value()) < 32
        ):
            raise ValueError("CAREERWISE_SESSION_SECRET must be set (32+ characters) in production")
        # imported here: the booking package imports the store, which must not be needed to read settings
        from careerwise.booking.hours import parse_hours

        try:
            parse_hours(self.default_hours)
        except ValueError as exc:
            raise ValueError(f"CAREERWISE_DEFAULT_HOURS: {exc}") from None
        return self

    @property
    def resolved_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite+aiosqlite:///{(self.data_dir / 'careerwise.db').resolve()}"

    @property
    def uses_local_model(self) -> bool:
        return not self.llm_base_url

    # Deadlines follow the provider's speed: the embedded model on a CPU needs minutes for what a remote
    # provider does in seconds (docs/benchmarks.md). Unset = the provider's default; a value set wins.
    @property
    def resolved_turn_deadline(self) -> float:
        return self.turn_deadline or (900.0 if self.uses_local_model else _REMOTE.turn_deadline)

    @property
    def resolved_deep_step_timeout(self) -> float:
        return self.deep_step_timeout or (240.0 if self.uses_local_model else _REMOTE.deep_step_timeout)

    @property
    def resolved_deep_turn_timeout(self) -> float:
        return self.deep_turn_timeout or (600.0 if self.uses_local_model else _REMOTE.deep_turn_timeout)


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
