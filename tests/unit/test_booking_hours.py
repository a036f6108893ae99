"""The shipped default consultation hours: CAREERWISE_DEFAULT_HOURS parsed, refused when it does not
parse (at start, not silently as "no hours"), and written back in the same form."""

from __future__ import annotations

import pytest

from careerwise.booking.hours import describe, parse_hours
from careerwise.config import Settings

WEEKDAYS_10_18 = {d: ((600, 1080),) for d in range(5)}


def test_the_default_is_weekdays_ten_to_six() -> None:
    settings = Settings(_env_file=None)
    assert settings.default_hours == "mon-fri 10:00-18:00"
    assert parse_hours(settings.default_hours) == WEEKDAYS_10_18


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("Mon-Fri 10:00-18:00", WEEKDAYS_10_18),
        (
            "mon-fri 10:00-12:00,14:00-18:00; sat 09:30-12:00",
            {**{d: ((600, 720), (840, 1080)) for d in range(5)}, 5: ((570, 720),)},
        ),
        ("mon,wed 19:00-24:00", {0: ((1140, 1440),), 2: ((1140, 1440),)}),
        ("sunday 14:00-16:00 10:00-12:00", {6: ((600, 720), (840, 960))}),
        ("", {}),
        ("none", {}),
    ],
)
def test_values_that_parse(value: str, expected: dict[int, tuple[tuple[int, int], ...]]) -> None:
    assert parse_hours(value) == expected
    assert parse_hours(describe(expected)) == expected


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("weekdays 10:00-18:00", "unknown weekday"),
        ("mon-fri", "no hours"),
        ("mon-fri 18:00-10:00", "ends before it starts"),
        ("mon-fri 10-18", "not a range"),
        ("fri-mon 10:00-18:00", "runs backwards"),
        ("mon 10:00-12:00,11:00-13:00", "overlap"),
        ("mon 10:00-25:00", "not a range"),
    ],
)
def test_values_that_do_not(value: str, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        parse_hours(value)


def test_settings_refuse_hours_that_do_not_parse() -> None:
    with pytest.raises(ValueError, match="CAREERWISE_DEFAULT_HOURS"):
        Settings(_env_file=None, default_hours="weekdays 10-18")
