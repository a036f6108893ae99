"""A model's tool arguments checked against the tool's JSON schema, the same way in every round.

Refused (``ToolArgumentsError``, whose message the model reads as the tool's result): a key the schema
does not name, a missing required key, a value of another type than the schema's (a boolean, a fraction,
a number too large for a float, a list where an integer belongs; anything but a string where a string
belongs). Tolerated: an integral float (``3.0``) and a quoted whole number (``"3"``), which small
models write for integers; the call's requested and effective arguments show both forms. A value outside ``minimum`` /
``maximum`` is not refused here: the tool clamps it and says so (requested, effective, reason).
"""

from __future__ import annotations

import math
import re
from typing import Any

from careerwise.errors import ToolArgumentsError
from careerwise.llm.types import ToolSpec

# a quoted whole number; more digits than this is no count of anything a tool returns
_QUOTED_WHOLE = re.compile(r"\s*[+-]?\d{1,12}\s*")


def whole_number(name: str, value: object) -> int:
    """``value`` as an integer argument, or ToolArgumentsError with what was wrong with it."""
    if isinstance(value, bool):  # before int: a bool is an int in Python, not in JSON
        raise ToolArgumentsError(f"`{name}` must be an integer, not a boolean ({str(value).lower()})")
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ToolArgumentsError(f"`{name}` must be a finite integer, got {value!r}")
        if not value.is_integer():
            raise ToolArgumentsError(f"`{name}` must be an integer, not a fraction ({value!r})")
        return int(value)
    if isinstance(value, str) and _QUOTED_WHOLE.fullmatch(value):
        return int(value)
    raise ToolArgumentsError(f"`{name}` must be an integer, got {value!r}")


def check_arguments(spec: ToolSpec, arguments: dict[str, Any]) -> None:
    """Raise ToolArgumentsError unless ``arguments`` fit ``spec.parameters`` (see the module docstring).
    A ``null`` value counts as not given."""
    properties: dict[str, dict[str, Any]] = spec.parameters.get("properties", {})
    unknown = sorted(k for k in arguments if k not in properties)
    if unknown:
        raise ToolArgumentsError(
            f"unknown argument(s) {', '.join(f'`{k}`' for k in unknown)}; "
            f"{spec.name} takes only {', '.join(f'`{k}`' for k in properties)}"
        )
    for key in spec.parameters.get("required", []):
        if arguments.get(key) is None:
            raise ToolArgumentsError(f"`{key}` is required")
    for key, value in arguments.items():
        if value is None:
            continue
        kind = properties[key].get("type")
        if kind == "integer":
            whole_number(key, value)
        elif kind == "string" and not isinstance(value, str):
            raise ToolArgumentsError(f"`{key}` must be a string, got {value!r}")
