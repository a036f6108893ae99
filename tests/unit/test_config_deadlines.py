"""Deadlines follow the provider unless set: the embedded CPU model gets minutes, a remote one seconds."""

from __future__ import annotations

from careerwise.config import Settings


def settings(**values: object) -> Settings:
    return Settings(_env_file=None, **values)  # type: ignore[arg-type]


def test_remote_provider_defaults() -> None:
    s = settings(llm_base_url="http://127.0.0.1:9/v1")
    assert (s.resolved_turn_deadline, s.resolved_deep_step_timeout, s.resolved_deep_turn_timeout) == (
        120,
        30,
        75,
    )


def test_embedded_model_defaults_leave_room_for_its_measured_speed() -> None:
    s = settings()
    assert s.uses_local_model
    # measured here: one deep step 38-63 s, a whole medium or complex answer 99-261 s
    assert s.resolved_deep_step_timeout >= 63 * 2
    assert s.resolved_deep_turn_timeout >= 261 * 2
    assert s.resolved_turn_deadline > s.resolved_deep_turn_timeout


def test_a_set_value_wins() -> None:
    s = settings(turn_deadline=5, deep_step_timeout=2, deep_turn_timeout=4)
    assert (s.resolved_turn_deadline, s.resolved_deep_step_timeout, s.resolved_deep_turn_timeout) == (5, 2, 4)
