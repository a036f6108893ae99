"""Docs that must stay true: every setting is documented."""

from __future__ import annotations

from pathlib import Path

from careerwise.config import Settings

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_every_setting_is_in_configuration_md() -> None:
    text = (DOCS / "configuration.md").read_text(encoding="utf-8")
    missing = [
        f"CAREERWISE_{name.upper()}"
        for name in Settings.model_fields
        if f"`CAREERWISE_{name.upper()}`" not in text
    ]
    assert missing == []
