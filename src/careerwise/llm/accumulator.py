"""Accumulate streamed tool-call deltas into complete calls.

Providers differ: OpenAI sends the id and name once and the arguments in pieces; llama.cpp's server
repeats the id and the name in every delta; some start at index 1; parallel calls interleave by index;
some finish with ``stop`` although they streamed calls. We key by ``index`` and never by position.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from careerwise.llm.types import ToolCallDelta, ToolCallRequest


@dataclass
class _Partial:
    id: str = ""
    name: str = ""
    arguments: str = ""


class ToolCallAccumulator:
    def __init__(self) -> None:
        self._calls: dict[int, _Partial] = {}

    def __bool__(self) -> bool:
        return bool(self._calls)

    def add(self, delta: ToolCallDelta) -> None:
        part = self._calls.setdefault(delta.index, _Partial())
        if delta.id and not part.id:
            part.id = delta.id
        if delta.name:
            # A repeated full name (llama.cpp) is ignored; a genuinely split name is joined.
            if not part.name:
                part.name = delta.name
            elif delta.name != part.name and not part.name.endswith(delta.name):
                part.name += delta.name
        if delta.arguments:
            part.arguments += delta.arguments

    def calls(self) -> list[ToolCallRequest]:
        out: list[ToolCallRequest] = []
        for index in sorted(self._calls):
            part = self._calls[index]
            if not part.name:
                continue  # a delta with no function name cannot be executed; the flow logs it
            call_id = part.id or f"call_{uuid.uuid4().hex[:12]}"
            out.append(ToolCallRequest(id=call_id, name=part.name, arguments=part.arguments or "{}"))
        return out

    def nameless(self) -> int:
        return sum(1 for p in self._calls.values() if not p.name)
