"""The process's LLM providers: built from the settings once per (name, model) and kept, each wrapped
the same way (output cleaning, the system-prompt canary), each server behind its own circuit breaker.
A provider the database names but this configuration lacks fails every call loudly (``llm_unavailable``)
instead of switching silently; closing closes every built provider even when one fails; a readiness
probe spends no tokens and runs once at a time per provider, its result kept for a configured time."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any

import httpx

from careerwise.assistant_settings import default_provider, provider_names
from careerwise.config import Settings
from careerwise.errors import LLMUnavailableError
from careerwise.llm.canary import CanaryGuard
from careerwise.llm.profile import (
    FULL_DESIGN_MIN_CONCURRENCY,
    SLOW_PASSAGE_BUDGET,
    ProviderProfile,
    ToolCalling,
)
from careerwise.llm.types import CompletionRequest, LLMProvider, StreamChunk
from careerwise.loadwatch import stream_pace

if TYPE_CHECKING:
    from careerwise.llm.resilience import CircuitBreaker

log = logging.getLogger(__name__)


def make_provider(settings: Settings) -> LLMProvider:
    """The configured default provider, as it ships: the primary server (with its fallback) or the
    embedded model. Turns get theirs from :class:`ProviderRegistry`, which builds these the same way."""
    return ProviderRegistry(settings).build(default_provider(settings), "")


class _Unconfigured:
    """Stands in for a provider the database names but this configuration does not have (the setting
    was stored on another machine, or the configuration changed): every call fails loudly, as an
    ``llm_unavailable`` error on the turn's trace and in the metrics, never a silent switch."""

    def __init__(self, name: str) -> None:
        self.name, self.model = name, "unconfigured"

    async def aclose(self) -> None:
        return None

    async def stream(self, request: CompletionRequest) -> AsyncIterator[StreamChunk]:
        err = LLMUnavailableError(f"the provider {self.name!r} is not configured in this process")
        err.retryable = False
        raise err
        yield  # pragma: no cover - makes this an async generator


class ProviderRegistry:
    """The configured providers by name, each built once per (name, model) and kept for the process.

    The database picks one per assistant (settings ``llm_provider`` and ``llm_model``) and the engine
    asks here at the start of every turn, so a change applies from the next turn, in every process,
    without a restart. Addresses and API keys come from the configuration only. The circuit breakers
    belong to the provider, not the model: a server that is down is down for every model name.
    """

    def __init__(self, settings: Settings, *, default: LLMProvider | None = None) -> None:
        self._settings = settings
        self.default_name = default_provider(settings)
        self._built: dict[tuple[str, str], LLMProvider] = {}
        self._breakers: dict[str, CircuitBreaker] = {}
        self._given = default  # a provider passed in (tests, benchmarks) serves the default selection
        self._probes: dict[str, tuple[float, dict[str, Any]]] = {}
        self._probing: dict[str, asyncio.Lock] = {}
        self.stream_pace = stream_pace(settings)  # one per process: every remote provider reads it

    @property
    def default(self) -> LLMProvider:
        """The configured default provider (built on first use; the router and /readyz use it too)."""
        key = (self.default_name, "")
        if key not in self._built:
            # every provider carries the system-prompt canary; every answer is scrubbed of it (llm/canary.py)
            self._built[key] = CanaryGuard(self._clean(self._given or self.build(self.default_name, "")))
        return self._built[key]

    def names(self) -> tuple[str, ...]:
        return provider_names(self._settings)

    def get(self, name: str, model: str = "") -> LLMProvider:
        """The provider for a turn; ``model`` empty = the provider's configured model."""
        if name == "embedded" or model == self._configured_model(name):
            model = ""  # one embedded model per process; the configured name is the provider's default
        key = (name, model)
        if key == (self.default_name, ""):
            return self.default
        found = self._built.get(key)
        if found is None:
            if name not in self.names():
                log.error("llm: the settings name the provider %r, which is not configured here", name)
                return CanaryGuard(_Unconfigured(name))
            found = self._built[key] = CanaryGuard(self._clean(self.build(name, model)))
            log.info("llm: provider %s with model %s ready", name, found.model)
        return found

    def _clean(self, provider: LLMProvider) -> LLMProvider:
        """Every provider's output cleaned the same way: text tool calls, Taiwan Chinese, usage
        (llm/clean.py)."""
        from careerwise.llm.clean import CleanOutput

        return CleanOutput(provider, convert_zh=self._settings.zh_variant_conversion)

    def _configured_model(self, name: str) -> str:
        s = self._settings
        return (s.llm_fallback_model or s.llm_model) if name == "fallback" else s.llm_model

    def _breaker(self, name: str) -> CircuitBreaker:
        from careerwise.llm.resilience import CircuitBreaker

        if name not in self._breakers:
            s = self._settings
            self._breakers[name] = CircuitBreaker(
                name, threshold=s.llm_breaker_threshold, reset_after=s.llm_breaker_reset_seconds
            )
        return self._breakers[name]

    def _remote(self, name: str, model: str) -> LLMProvider:
        from careerwise.llm.openai_provider import OpenAIProvider

        s = self._settings
        base_url, key = (
            (s.llm_fallback_base_url, s.llm_fallback_api_key)
            if name == "fallback"
            else (s.llm_base_url, s.llm_api_key)
        )
        assert base_url is not None
        return OpenAIProvider(
            base_url=base_url,
            api_key=key.get_secret_value(),
            model=model or self._configured_model(name),
            connect_timeout=s.llm_connect_timeout,
            read_timeout=s.llm_read_timeout,
            http_client=s.llm_http_client,
            stream_pace=self.stream_pace,
            profile=provider_profile(s, slow=s.llm_slow, tool_calling="native", declared=name != "fallback"),
            measure_speed=measures_speed(s, declared=name != "fallback"),
            detect_concurrency=name == "fallback" or s.llm_concurrency is None,
            detect_grammar=True,
        )

    def build(self, name: str, model: str) -> LLMProvider:
        """A new, unguarded provider (the caller owns it)."""
        from careerwise.llm.resilience import ResilientProvider

        s = self._settings
        if name == "primary":
            fallback = self._remote("fallback", "") if s.llm_fallback_base_url else None
            fallback_breaker = self._breaker("fallback") if fallback is not None else None
            return ResilientProvider(
                self._remote("primary", model),
                breaker=self._breaker("primary"),
                fallback=fallback,
                fallback_breaker=fallback_breaker,
            )
        if name == "fallback":
            return ResilientProvider(self._remote("fallback", model), breaker=self._breaker("fallback"))
        from careerwise.llm.local import LocalProvider, ensure_model_file

        path = s.local_model_path or ensure_model_file(s.data_dir / "models")
        return LocalProvider(
            model_path=path,
            n_ctx=s.local_n_ctx,
            n_threads=s.local_n_threads,
            convert_zh=False,  # CleanOutput converts every provider's text (_clean)
            repack_weights=s.local_repack_weights,
            profile=provider_profile(s, slow=True, tool_calling=s.local_tool_calling, embedded=True),
            measure_speed=measures_speed(s),
            prefix_dir=s.data_dir / "cache" / "llm" if s.local_prefix_cache else None,
            decision_temperature=s.local_decision_temperature,
            call_threshold=s.local_call_threshold,
            prompt_lookup=s.local_prompt_lookup,
        )

    async def aclose(self) -> None:
        """Every provider is closed even if closing another failed; the first failure is raised after."""
        failure: BaseException | None = None
        closers: list[Callable[[], Awaitable[None]]] = [p.aclose for p in self._built.values()]
        closers.append(self.stream_pace.aclose)  # the loop-lag probe's task, if one runs
        for close in closers:
            try:
                await close()
            except Exception as exc:  # logged here, the first one raised below
                log.error("closing %r failed: %r", close, exc, exc_info=exc)
                failure = failure or exc
        if failure is not None:
            raise failure

    async def probe(self, name: str, *, seconds: float) -> dict[str, Any]:
        """Whether the provider answers, cheaply: ``GET {base_url}/models`` (no tokens spent) for a server,
        loaded-or-not for the embedded model. The result is kept ``readyz_llm_cache_seconds`` and one
        probe at a time runs per provider, so a readiness poller cannot hammer the provider."""
        ttl = self._settings.readyz_llm_cache_seconds
        lock = self._probing.setdefault(name, asyncio.Lock())
        async with lock:
            kept = self._probes.get(name)
            age = time.monotonic() - kept[0] if kept else 0.0
            if kept is not None and age < ttl:
                return kept[1] | {"cached": True, "age_s": round(age, 2)}
            result = await self._probe_now(name, seconds)
            self._probes[name] = (time.monotonic(), result)
        return result | {"cached": False, "age_s": 0.0}

    async def _probe_now(self, name: str, seconds: float) -> dict[str, Any]:
        if name == "embedded":
            local = _innermost(self.default) if self.default_name == "embedded" else None
            if bool(getattr(local, "loaded", False)):
                return {"state": "ok", "loaded": True}
            error = getattr(local, "load_error", None)
            if error:
                return {"state": "failed", "loaded": False, "error": error}
            # start-up loads it in the background (app lifespan): not ready to answer until it is in memory
            return {"state": "loading", "loaded": False, "error": "the embedded model is still loading"}
        s = self._settings
        base_url, key = (
            (s.llm_fallback_base_url, s.llm_fallback_api_key)
            if name == "fallback"
            else (s.llm_base_url, s.llm_api_key)
        )
        if not base_url:
            return {"state": "failed", "error": f"the provider {name!r} is not configured"}
        started = time.perf_counter()
        try:
            async with httpx.AsyncClient(timeout=seconds) as http:
                r = await http.get(
                    base_url.rstrip("/") + "/models",
                    headers={"Authorization": f"Bearer {key.get_secret_value()}"},
                )
        except httpx.HTTPError as exc:
            log.warning("readyz: the LLM provider %s did not answer: %s: %s", name, type(exc).__name__, exc)
            return {"state": "failed", "error": f"{type(exc).__name__}: {exc}"}
        ms = round(1000 * (time.perf_counter() - started), 2)
        # 401/403: the key is refused, every turn would be too; 5xx: the server is failing. A 404 (a
        # server without the listing) still proves the server is up and answering.
        if r.status_code in (401, 403) or r.status_code >= 500:
            log.warning("readyz: the LLM provider %s answered GET /models with %d", name, r.status_code)
            return {
                "state": "failed",
                "status": r.status_code,
                "ms": ms,
                "error": f"GET /models: {r.status_code}",
            }
        return {"state": "ok", "status": r.status_code, "ms": ms}


# the embedded model's layer-3 verdicts that are taken: not "greeting", which on messages layer 2 is unsure
# of is wrong more often than right, so career (the default when unsure) is the better answer there
# (the figures: docs/routing.md, "Evaluation", part 8)
EMBEDDED_ROUTE_LABELS = ("career", "resume", "booking", "offtopic")


def provider_profile(
    settings: Settings,
    *,
    slow: bool,
    tool_calling: ToolCalling,
    embedded: bool = False,
    declared: bool = True,
) -> ProviderProfile:
    """A provider's profile from the settings: the passage budget is the configured one, or on a slow
    provider :data:`SLOW_PASSAGE_BUDGET` tokens (a few seconds of prompt reading on two cores).

    With ``declared`` (the configured provider: the ``llm_base_url`` server or the embedded model) the
    declared speeds, concurrency and context size apply; a fallback server starts from the defaults.
    Concurrency defaults to 1 for the ``embedded`` model (one request at a time) and to
    :data:`FULL_DESIGN_MIN_CONCURRENCY` for a server, which finds out at first use whether it is a
    llama.cpp server (``llm/openai_provider.py``)."""
    budget = settings.passage_budget_tokens
    if budget is None:
        budget = SLOW_PASSAGE_BUDGET if slow else 0
    prompt_tps = settings.llm_prompt_tps if declared else None
    gen_tps = settings.llm_gen_tps if declared else None
    concurrency = settings.llm_concurrency if declared else None
    context = settings.llm_context_tokens if declared else None
    labels = settings.llm_route_labels if declared else None
    return ProviderProfile(
        tool_calling=tool_calling,
        passage_budget_tokens=budget or None,
        slow=slow,
        answer_quotes=settings.answer_quotes == "on" or (settings.answer_quotes == "auto" and slow),
        coverage_hint=settings.search_coverage_hint is True
        or (settings.search_coverage_hint == "auto" and slow),
        prompt_tokens_per_s=prompt_tps,
        gen_tokens_per_s=gen_tps,
        concurrency=concurrency or (1 if embedded else FULL_DESIGN_MIN_CONCURRENCY),
        context_tokens=context or (settings.local_n_ctx if embedded else None),
        source="declared" if prompt_tps is not None or gen_tps is not None else "default",
        route_labels=tuple(labels) if labels else (EMBEDDED_ROUTE_LABELS if embedded else None),
    )


def measures_speed(settings: Settings, *, declared: bool = True) -> bool:
    """Whether a provider measures its speeds from its calls: not when they are declared (or turned off)."""
    return settings.llm_measure_speed and not (
        declared and (settings.llm_prompt_tps is not None or settings.llm_gen_tps is not None)
    )


def _innermost(provider: object) -> object:
    """The provider inside its wrappers (canary guard, breaker): each keeps it as ``inner``/``primary``."""
    for _ in range(8):
        inner = getattr(provider, "inner", None) or getattr(provider, "primary", None)
        if inner is None:
            return provider
        provider = inner
    return provider
