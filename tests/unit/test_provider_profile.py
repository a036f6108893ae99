"""The provider profile's rules (llm/profile.py): the deep design it picks, a step's deadline from its
speeds, measurement from a call's timing, the settings that declare it, and the deep budget that reads it."""

from __future__ import annotations

from pathlib import Path

import pytest

from careerwise.config import Settings
from careerwise.errors import StepFailed
from careerwise.flows.deep_steps import Budget
from careerwise.llm.openai_provider import is_llama_cpp
from careerwise.llm.profile import (
    FULL_DESIGN_MIN_CONCURRENCY,
    FULL_DESIGN_MIN_GEN_TPS,
    MEASURE_MIN_SECONDS,
    MEASURE_MIN_TOKENS,
    STEP_DEADLINE_FLOOR_S,
    STEP_DEADLINE_SAFETY,
    ProviderProfile,
    measured,
    profile_of,
)
from careerwise.llm.types import ChatMessage
from careerwise.services import measures_speed, provider_profile


def test_the_full_design_needs_fast_generation_and_three_requests_at_once() -> None:
    fast = ProviderProfile(gen_tokens_per_s=FULL_DESIGN_MIN_GEN_TPS, concurrency=FULL_DESIGN_MIN_CONCURRENCY)
    assert fast.design == "full"
    assert ProviderProfile(gen_tokens_per_s=FULL_DESIGN_MIN_GEN_TPS - 1, concurrency=8).design == "compact"
    assert (
        ProviderProfile(gen_tokens_per_s=500, concurrency=FULL_DESIGN_MIN_CONCURRENCY - 1).design == "compact"
    )


def test_an_unknown_speed_counts_as_fast_unless_declared_slow() -> None:
    assert ProviderProfile().design == "full"
    assert ProviderProfile(slow=True).design == "compact"
    # a measured speed wins over the slow flag
    assert ProviderProfile(slow=True, gen_tokens_per_s=120).design == "full"


def test_a_step_deadline_is_reading_plus_writing_times_the_safety_factor_plus_the_floor() -> None:
    p = ProviderProfile(prompt_tokens_per_s=100, gen_tokens_per_s=10, concurrency=1)
    work = 1000 / 100 + 300 / 10
    assert p.step_deadline(1000, 300, ceiling=1e6) == pytest.approx(
        work * STEP_DEADLINE_SAFETY + STEP_DEADLINE_FLOOR_S
    )
    assert p.step_deadline(1000, 300, ceiling=42.0) == 42.0  # capped
    # more output planned, more time
    assert p.step_deadline(1000, 600, ceiling=1e6) > p.step_deadline(1000, 300, ceiling=1e6)
    # no prompt speed: reading counts as free
    assert ProviderProfile(gen_tokens_per_s=10).step_deadline(5000, 100, ceiling=1e6) == pytest.approx(
        10 * STEP_DEADLINE_SAFETY + STEP_DEADLINE_FLOOR_S
    )


def test_an_unknown_speed_gives_the_ceiling() -> None:
    assert ProviderProfile().step_deadline(1000, 300, ceiling=30.0) == 30.0
    assert ProviderProfile(prompt_tokens_per_s=100).step_deadline(1000, 300, ceiling=240.0) == 240.0


def test_measurement_folds_in_long_enough_calls_and_ignores_short_ones() -> None:
    base = ProviderProfile(concurrency=1)
    short = measured(
        base, prompt_tokens=MEASURE_MIN_TOKENS - 1, prompt_seconds=5, gen_tokens=500, gen_seconds=0.01
    )
    assert short is base  # too few prompt tokens, too short a generation: nothing learnt
    first = measured(base, prompt_tokens=400, prompt_seconds=4.0, gen_tokens=80, gen_seconds=10.0)
    assert (first.prompt_tokens_per_s, first.gen_tokens_per_s, first.source) == (100.0, 8.0, "measured")
    assert first.concurrency == 1  # only the speeds change
    second = measured(first, gen_tokens=MEASURE_MIN_TOKENS, gen_seconds=MEASURE_MIN_SECONDS * 4)
    assert first.gen_tokens_per_s is not None and second.gen_tokens_per_s is not None
    assert first.gen_tokens_per_s < second.gen_tokens_per_s < MEASURE_MIN_TOKENS / (MEASURE_MIN_SECONDS * 4)
    assert second.prompt_tokens_per_s == first.prompt_tokens_per_s


def test_the_profile_is_shown_with_its_design() -> None:
    shown = ProviderProfile(gen_tokens_per_s=8, concurrency=1, slow=True).as_dict()
    assert shown["design"] == "compact" and shown["concurrency"] == 1 and shown["source"] == "default"
    assert shown["stream_cuts"] == 0


def _settings(tmp_path: Path, **values: object) -> Settings:
    return Settings(_env_file=None, data_dir=tmp_path, **values)  # type: ignore[call-arg,arg-type]


def test_declared_figures_make_the_profile_and_turn_measuring_off(tmp_path: Path) -> None:
    s = _settings(
        tmp_path,
        llm_base_url="http://127.0.0.1:9/v1",
        llm_concurrency=2,
        llm_prompt_tps=300.0,
        llm_gen_tps=25.0,
        llm_context_tokens=8192,
    )
    p = provider_profile(s, slow=False, tool_calling="native")
    assert (p.concurrency, p.prompt_tokens_per_s, p.gen_tokens_per_s, p.context_tokens, p.source) == (
        2,
        300.0,
        25.0,
        8192,
        "declared",
    )
    assert p.design == "compact" and not measures_speed(s)
    # a fallback server is not what the figures describe: defaults, measured
    fallback = provider_profile(s, slow=False, tool_calling="native", declared=False)
    assert (fallback.concurrency, fallback.gen_tokens_per_s, fallback.source) == (3, None, "default")
    assert measures_speed(s, declared=False)


def test_the_embedded_model_serves_one_request_at_a_time_with_its_context(tmp_path: Path) -> None:
    s = _settings(tmp_path, local_n_ctx=4096)
    p = provider_profile(s, slow=True, tool_calling="constrained", embedded=True)
    assert (p.concurrency, p.context_tokens, p.design, p.source) == (1, 4096, "compact", "default")
    assert measures_speed(s)
    assert (
        provider_profile(
            _settings(tmp_path, llm_concurrency=4), slow=True, tool_calling="text", embedded=True
        ).concurrency
        == 4
    )


def test_a_llama_cpp_server_is_told_apart_by_its_model_listing_or_server_header() -> None:
    assert is_llama_cpp({"data": [{"id": "m", "owned_by": "llamacpp"}]}, "")
    assert is_llama_cpp(
        {"object": "list", "data": [{"id": "m", "owned_by": "me", "permissions": []}]}, "uvicorn"
    )
    assert is_llama_cpp({}, "llama.cpp")
    assert not is_llama_cpp({"data": [{"id": "gpt", "owned_by": "openai"}]}, "cloudflare")
    assert not is_llama_cpp({"data": [{"id": "m", "owned_by": "me"}]}, "")  # no permissions list
    assert not is_llama_cpp(["not", "a", "listing"], "")


class _Wrapper:
    def __init__(self, inner: object) -> None:
        self.inner = inner


class _Provider:
    def __init__(self, profile: ProviderProfile) -> None:
        self.profile = profile


def test_profile_of_sees_a_profile_replaced_after_measurement() -> None:
    inner = _Provider(ProviderProfile())
    wrapped = _Wrapper(inner)
    inner.profile = measured(inner.profile, gen_tokens=100, gen_seconds=2.0)
    assert profile_of(wrapped).gen_tokens_per_s == 50.0


def test_the_deep_budget_sizes_a_step_from_the_speed_and_its_planned_output() -> None:
    messages = [ChatMessage(role="system", content="x" * 400), ChatMessage(role="user", content="轉職" * 50)]
    slow = ProviderProfile(prompt_tokens_per_s=100, gen_tokens_per_s=8, concurrency=1)
    budget = Budget(30.0, 10_000.0, slow)
    small, large = budget.step_timeout(messages, 100), budget.step_timeout(messages, 400)
    assert small > 30.0  # a slow provider is not held to the fixed step timeout
    assert large > small
    assert small == pytest.approx(slow.step_deadline(100 + 100, 100, ceiling=1e6))
    # capped by what is left of the attempt
    assert Budget(30.0, 50.0, slow).step_timeout(messages, 400) <= 50.0
    # unknown speed, or no planned output: the fixed step timeout
    assert Budget(30.0, 10_000.0).step_timeout(messages, 400) == 30.0
    assert Budget(30.0, 10_000.0, slow).step_timeout() == 30.0


def test_a_spent_budget_fails_the_step_as_a_turn_deadline() -> None:
    with pytest.raises(StepFailed) as failed:
        Budget(30.0, -1.0, ProviderProfile(gen_tokens_per_s=8)).step_timeout([], 100)
    assert failed.value.code == "turn_deadline"


def test_writing_slowly_follows_the_speed_once_known_and_the_slow_flag_before() -> None:
    """Issue #24: the medium question's flow follows the measured speed, as the deep design does."""
    assert ProviderProfile(slow=True).writes_slowly and not ProviderProfile().writes_slowly
    assert ProviderProfile(gen_tokens_per_s=8).writes_slowly  # a remote server found slow, never declared
    assert not ProviderProfile(slow=True, gen_tokens_per_s=120).writes_slowly
    for tps in (8, 39.9, 40, 120):
        p = ProviderProfile(gen_tokens_per_s=tps)
        assert (p.design == "compact") == p.writes_slowly
