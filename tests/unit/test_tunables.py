"""Each per-turn tunable is declared once (``careerwise/tunables.py``): the configuration, an assistant's
stored settings and the flows' options read the same bounds and defaults. An assistant changes a turn's
options only where it set a value itself; every other value stays the configured one."""

from __future__ import annotations

from dataclasses import fields, replace
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from careerwise.assistant_settings import KEYS, AssistantSettings
from careerwise.config import Settings
from careerwise.flows.base import FLOW_TUNABLES, FlowOptions
from careerwise.tunables import DEADLINE_KEYS, TUNABLE_KEYS, Deadlines, Tunables

BOUND_WORDS = ("type", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")


def bounds(model: type[BaseModel], key: str) -> dict[str, Any]:
    """The JSON schema's type and bounds of one field; an optional field's are those of its value."""
    prop = model.model_json_schema()["properties"][key]
    branches = [b for b in prop.get("anyOf", [prop]) if b.get("type") != "null"]
    assert len(branches) == 1, prop
    return {word: branches[0][word] for word in BOUND_WORDS if word in branches[0]}


def declared_in(key: str) -> type[BaseModel]:
    return Tunables if key in TUNABLE_KEYS else Deadlines


@pytest.mark.parametrize("key", TUNABLE_KEYS + DEADLINE_KEYS)
def test_the_configuration_and_an_assistant_check_a_tunable_against_the_same_bounds(key: str) -> None:
    declared = bounds(declared_in(key), key)
    assert bounds(Settings, key) == declared
    assert bounds(AssistantSettings, key) == declared
    assert key in KEYS  # every tunable can be stored for an assistant (careerwise settings set)


def test_the_declared_bounds_are_the_ones_the_issue_found_apart() -> None:
    assert bounds(Tunables, "phase1_max_tokens") == {"type": "integer", "minimum": 16, "maximum": 8192}
    assert bounds(Tunables, "buffer_guard_chunks") == {"type": "integer", "minimum": 0, "maximum": 20}
    assert bounds(Deadlines, "turn_deadline") == {"type": "number", "exclusiveMinimum": 0, "maximum": 3600}


def test_a_value_an_assistant_could_not_store_is_refused_by_the_configuration_too() -> None:
    for values in ({"phase1_max_tokens": 8}, {"buffer_guard_chunks": 21}, {"deep_turn_timeout": 7200}):
        with pytest.raises(ValidationError):
            Settings(_env_file=None, **values)  # type: ignore[call-arg]
        with pytest.raises(ValidationError):
            AssistantSettings(**values)
    unset = Settings(_env_file=None)  # type: ignore[call-arg]
    assert unset.deep_step_timeout is None and unset.resolved_deep_step_timeout > 0


def test_the_flow_options_take_their_defaults_from_the_one_declaration() -> None:
    assert FLOW_TUNABLES == (
        "buffer_guard_chunks",
        "phase1_max_tokens",
        "phase1_temperature",
        "phase3_max_tokens",
        "phase3_temperature",
        "max_tool_rounds",
        "deep_step_timeout",
        "deep_turn_timeout",
    )
    defaults = {f.name: f.default for f in fields(FlowOptions)}
    for key in FLOW_TUNABLES:
        assert defaults[key] == declared_in(key).model_fields[key].default, key


CONFIGURED = FlowOptions(
    buffer_guard_chunks=0,
    phase1_max_tokens=100,
    phase1_temperature=0.2,
    phase3_max_tokens=90,
    phase3_temperature=0.1,
    max_tool_rounds=1,
    deep_step_timeout=240.0,
    deep_turn_timeout=600.0,
)


def test_an_assistant_that_sets_nothing_leaves_the_configured_options_alone() -> None:
    # its values are the built-in defaults, all different from the configured ones: none of them may win
    assert all(getattr(CONFIGURED, k) != getattr(AssistantSettings(), k) for k in FLOW_TUNABLES)
    assert CONFIGURED.with_assistant(AssistantSettings()) == CONFIGURED


def test_an_assistants_own_values_win_and_only_those() -> None:
    configured = {k: getattr(CONFIGURED, k) for k in FLOW_TUNABLES}
    assistant = AssistantSettings.with_overrides(
        configured | {"phase1_max_tokens": 512},  # a configured value the options do not share
        {"phase3_max_tokens": 200, "deep_step_timeout": 45.0},
    )
    assert assistant.overridden == {"phase3_max_tokens", "deep_step_timeout"}
    assert CONFIGURED.with_assistant(assistant) == replace(
        CONFIGURED, phase3_max_tokens=200, deep_step_timeout=45.0
    )


def test_a_stored_value_is_checked_against_the_declared_bounds() -> None:
    with pytest.raises(ValidationError):
        AssistantSettings.with_overrides({}, {"phase1_max_tokens": 8})
