"""A model's reply read as data: the JSON object in it, validated, and the schema's example values
told apart from content.

:func:`extract_json` finds the first JSON object in a reply, also inside a code fence or prose;
:func:`parse_model` validates it with a Pydantic model. Both raise ``ValueError`` with a short reason
(the reason a step sends back to the model), never anything else. :func:`is_placeholder` and
:func:`clean_items` keep a small model's copies of the prompt's examples and template phrases out of
what is shown.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import TypeVar

from pydantic import BaseModel, ValidationError

T = TypeVar("T", bound=BaseModel)

_FENCE = re.compile(r"```(?:json|JSON)?")


def extract_json(text: str) -> dict[str, object]:
    """The first JSON object in a reply, also when it is wrapped in a code fence or some prose."""
    cleaned = _FENCE.sub("", text)
    decoder = json.JSONDecoder()
    for i, ch in enumerate(cleaned):
        if ch != "{":
            continue
        try:
            value, _ = decoder.raw_decode(cleaned, i)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            return value
    raise ValueError("no JSON object found in the reply" if text.strip() else "the reply was empty")


def parse_model(model: type[T], text: str) -> T:
    """``text``'s JSON object validated by ``model``; ``ValueError`` with a short reason otherwise."""
    value = extract_json(text)
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'value'}: {err['msg']}" for err in exc.errors()[:5]
        )
        raise ValueError(f"the JSON does not follow the schema ({problems})") from exc


# a small model may copy the schema's example values instead of filling them in
_PLACEHOLDER = re.compile(
    r"^\s*(?:具體發現|關鍵洞察|concrete finding|key insight)\s*\d*\s*$|^[\s…．.·\-]*$", re.IGNORECASE
)
TEMPLATE_PHRASES = (
    "沒改就省略",
    "修正後的完整內容",
    "每項修正寫一句話",
    "omit if unchanged",
    "whole corrected content",
    "one sentence per fix",
)


def is_placeholder(text: str) -> bool:
    """An example value of a prompt's schema (具體發現1, …) or a template phrase, not content."""
    return bool(_PLACEHOLDER.match(text)) or any(p in text for p in TEMPLATE_PHRASES)


def clean_items(items: Iterable[object], limit: int) -> list[str]:
    """Non-empty strings that are not placeholders, stripped, at most ``limit`` of them."""
    out = [str(i).strip() for i in items if isinstance(i, str | int | float) and str(i).strip()]
    return [i for i in out if not is_placeholder(i)][:limit]
