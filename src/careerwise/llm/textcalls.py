"""Tool calls written as text, recognised for every provider.

Small models and some OpenAI-compatible servers (llama.cpp's among them) return a tool call as text:
bare JSON, JSON in a ```json fence, inside ``<tool_call>`` tags, or the OpenAI ``{"function": ...}``
shape. :class:`ToolCallDetector` reads streamed text and separates what may be shown from what is a call;
what looks like raw model machinery (a call to a tool nobody offered, an echoed tool schema, chat-template
tokens) is never released as text (:class:`Suppressed`). The detector guarantees that text it releases
contains none of :data:`TEMPLATE_TOKENS` and does not start a JSON object with a ``"name"``, ``"function"``
or ``"type"`` key.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from careerwise.llm.types import ToolCallDelta

_FENCE = "```"
_TAG = "<tool_call>"
_TOOLS_TAG = "<tools>"  # an echoed tool schema, as llama.cpp's server has been seen to return
_MAX_HELD_CHARS = 4000  # a "tool call" longer than this is an answer that happens to start with {


def find_json_object_end(text: str, start: int) -> int | None:
    """Index just past the JSON object opening at ``text[start] == '{'``, or None while it is incomplete."""
    depth = 0
    in_string = False
    escaped = False
    for pos in range(start, len(text)):
        ch = text[pos]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return pos + 1
    return None


def _strip_wrapper(text: str) -> str:
    """Drop a leading ```json fence or <tool_call> tag (and whitespace) before the JSON object."""
    s = text.lstrip()
    if s.startswith(_TAG):
        s = s[len(_TAG) :].lstrip()
    elif s.startswith(_FENCE):
        s = s[len(_FENCE) :]
        s = re.sub(r"^[A-Za-z0-9_-]*", "", s, count=1).lstrip()  # the info string: json, JSON, ...
        if s.startswith(_TAG):
            s = s[len(_TAG) :].lstrip()
    return s


@dataclass(frozen=True)
class ParsedToolCall:
    name: str
    arguments: dict[str, Any]


def parse_tool_call(text: str, tool_names: Sequence[str] | set[str]) -> ParsedToolCall | None:
    """Parse a complete tool call from the start of ``text`` or return None.

    Accepts ``{"name": ..., "arguments": {...}}`` bare, in a ```json fence or in ``<tool_call>`` tags;
    also ``parameters`` for ``arguments``, arguments given as a JSON string, and the OpenAI shape
    ``{"function": {"name": ..., "arguments": ...}}``. The name must be one of ``tool_names``.
    """
    obj = _object_at_start(text, tools_tag=False)
    if obj is None:
        return None
    if isinstance(obj.get("function"), dict) and "name" not in obj:
        obj = obj["function"]
    name = obj.get("name")
    if not isinstance(name, str) or name not in tool_names:
        return None
    args: Any = obj.get("arguments", obj.get("parameters", {}))
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except json.JSONDecodeError:
            return None
    if args is None:
        args = {}
    if not isinstance(args, dict) or _is_schema(args):
        return None  # a tool's schema echoed back is not a call to it
    return ParsedToolCall(name=name, arguments=args)


def _is_schema(args: dict[str, Any]) -> bool:
    return args.get("type") == "object" and isinstance(args.get("properties"), dict)


@dataclass(frozen=True)
class TextOut:
    text: str


@dataclass(frozen=True)
class ToolOut:
    call: ParsedToolCall


@dataclass(frozen=True)
class Suppressed:
    """Raw model machinery that is never shown: a call to a tool nobody offered (``name`` set) or an
    echoed tool schema (``name`` None). ``text`` is what was held back, for the trace."""

    text: str
    name: str | None = None
    arguments: dict[str, Any] | None = None


DetectorEvent = TextOut | ToolOut | Suppressed


def _object_at_start(text: str, *, tools_tag: bool = True) -> dict[str, Any] | None:
    """The JSON object at the start of ``text`` (after a fence or ``<tool_call>`` tag, and with
    ``tools_tag`` a ``<tools>`` tag), or None while it is incomplete or is not one."""
    body = _strip_wrapper(text)
    if tools_tag and body.startswith(_TOOLS_TAG):
        body = body[len(_TOOLS_TAG) :].lstrip()
    end = find_json_object_end(body, 0) if body.startswith("{") else None
    if end is None:
        return None
    try:
        obj = json.loads(body[:end])
    except json.JSONDecodeError:
        return None
    return obj if isinstance(obj, dict) else None


def machinery(obj: dict[str, Any]) -> Suppressed | None:
    """A JSON object shaped like a tool call or a tool schema (what a model writes when it imitates its
    tool instructions), as a :class:`Suppressed` event; None for any other JSON (an example in an answer)."""
    function = obj.get("function")
    inner: dict[str, Any] = function if isinstance(function, dict) else obj
    name = inner.get("name")
    parameters = inner.get("parameters")
    if obj.get("type") == "function" or (isinstance(parameters, dict) and _is_schema(parameters)):
        return Suppressed(text=json.dumps(obj, ensure_ascii=False))
    if isinstance(name, str) and ("arguments" in inner or "parameters" in inner):
        args = inner.get("arguments", inner.get("parameters"))
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except json.JSONDecodeError:
                args = None
        return Suppressed(
            text=json.dumps(obj, ensure_ascii=False),
            name=name,
            arguments=args if isinstance(args, dict) else None,
        )
    return None


class ToolCallDetector:
    """Decide from the first non-whitespace output whether the model is writing a tool call.

    ``feed`` takes raw text pieces as they are generated and returns what may be shown now; text that might
    be a tool call is held until its JSON object is complete. After a :class:`ToolOut` the detector is done
    (generation should stop); a call to a tool that is not offered, or an echoed tool schema, ends it the
    same way with a :class:`Suppressed` event instead, so that text never reaches the user. With
    ``enabled=False`` everything passes straight through.
    """

    def __init__(self, tool_names: Sequence[str] | set[str], *, enabled: bool = True) -> None:
        self._names = set(tool_names)
        self._mode = "undecided" if enabled and self._names else "pass"
        self._held = ""
        self._tail = ""  # in text: the end of the text so far that may be the start of a call

    @property
    def holding(self) -> bool:
        return bool(self._held)

    @property
    def done(self) -> bool:
        return self._mode == "done"

    def feed(self, text: str) -> list[DetectorEvent]:
        if not text or self._mode == "done":
            return []
        if self._mode == "pass":
            return [TextOut(text)]
        if self._mode == "text":
            return self._scan(text)
        self._held += text
        if self._mode == "undecided":
            head = self._held.lstrip()
            if not head:
                return []  # only whitespace so far
            if head.startswith(("{", _FENCE, _TAG, _TOOLS_TAG)):
                self._mode = "holding"
            elif _FENCE.startswith(head) or _TAG.startswith(head) or _TOOLS_TAG.startswith(head):
                return []  # "`", "``", "<tool" ... cannot decide yet
            else:
                held, self._held = self._held, ""
                self._mode = "text"
                return self._scan(held)  # text, which may still go on to write a call
        return self._try_complete(final=False)

    def finish(self) -> list[DetectorEvent]:
        """The model stopped: parse what is held (a call without its closing fence is fine) or release it."""
        if self._mode == "text" and self._tail:
            tail, self._tail = self._tail, ""
            return [TextOut(tail)]
        if self._mode in ("holding", "undecided") and self._held:
            events = self._try_complete(final=True)
            if events:
                return events
            return self._release()
        return []

    def _scan(self, text: str) -> list[DetectorEvent]:
        """Text already showing: a call the model writes after it (``{"name": ...``, a fence, a tag) is
        held and parsed like one at the start, so it is never shown either."""
        buf, self._tail = self._tail + text, ""
        m = _MID_TRIGGER.search(buf)
        if m is None:
            k = _partial_trigger(buf)
            self._tail = buf[len(buf) - k :] if k else ""
            shown = buf[: len(buf) - k]
            return [TextOut(shown)] if shown else []
        before, self._held = buf[: m.start()], buf[m.start() :]
        self._mode = "holding"
        return ([TextOut(before)] if before else []) + self._try_complete(final=False)

    def _try_complete(self, *, final: bool) -> list[DetectorEvent]:
        body = _strip_wrapper(self._held)
        if body.startswith(_TOOLS_TAG):
            # an echoed schema block: everything up to its end is machinery; an unclosed one, all of it
            end = self._held.find("</tools>")
            if end < 0 and not final and len(self._held) <= _MAX_HELD_CHARS:
                return []
            self._mode = "done"
            held, self._held = self._held, ""
            return [Suppressed(text=held)]
        if body.startswith("{"):
            after = body[1:].lstrip()
            if after and after[0] != '"':
                return self._release()  # "{name} ..." or "{ 1, 2 }": not a JSON object with keys; show it now
            if find_json_object_end(body, 0) is None:
                if final and _CALL_START.match(body):
                    # a call the model never finished (it ran out of tokens): machinery all the same
                    self._mode = "done"
                    held, self._held = self._held, ""
                    return [Suppressed(text=held)]
                if final or len(self._held) > _MAX_HELD_CHARS:
                    return self._release()
                return []
            call = parse_tool_call(self._held, self._names)
            if call is not None:
                self._mode = "done"
                self._held = ""
                return [ToolOut(call)]
            obj = _object_at_start(self._held)
            junk = machinery(obj) if obj is not None else None
            if junk is not None:
                self._mode = "done"
                self._held = ""
                return [junk]
            return self._release()
        # A fence or tag whose body does not (yet) start with '{'.
        if final or len(self._held) > _MAX_HELD_CHARS:
            return self._release()
        stripped = self._held.strip()
        if stripped in (_TAG, _FENCE) or re.fullmatch(r"```[A-Za-z0-9_-]*", stripped):
            return []  # the wrapper itself is complete but its body has not started
        return self._release()

    def _release(self) -> list[DetectorEvent]:
        text, self._held = self._held, ""
        self._mode = "text"
        return [TextOut(text)] if text else []


_INVENTED_NAME = re.compile(r"[^A-Za-z0-9_.-]")
# what starts a call or machinery inside text that is already showing
_MID_TRIGGER = re.compile(r'\{\s*"(?:name|function|type)"|```|<tool_call>|<tools>')
_CALL_START = re.compile(r'\{\s*"(?:name|function)"\s*:')
_MID_LITERALS = ('{"name"', '{"function"', '{"type"', _FENCE, _TAG, _TOOLS_TAG)


def _partial_trigger(text: str) -> int:
    """Length of the longest end of ``text`` that may still grow into a mid-text trigger."""
    for k in range(min(len(text), 14), 0, -1):
        tail = text[len(text) - k :]
        compact = re.sub(r"\s+", "", tail) if tail.startswith("{") else tail
        if any(lit.startswith(compact) and len(compact) < len(lit) for lit in _MID_LITERALS):
            return k
    return 0


def call_delta(
    event: ToolOut | Suppressed, convert_args: Callable[[dict[str, Any]], dict[str, Any]] | None = None
) -> ToolCallDelta | None:
    """The tool-call delta for a recognised call, or for a call to a tool that was not offered (under its
    own name, clipped to 64 identifier characters, so the flow refuses it visibly); None for an echoed
    schema, which is only dropped."""
    if isinstance(event, ToolOut):
        name, args = event.call.name, event.call.arguments
    elif event.name:
        name, args = _INVENTED_NAME.sub("_", event.name)[:64] or "unnamed", event.arguments or {}
    else:
        return None
    if convert_args is not None:
        args = convert_args(args)
    return ToolCallDelta(
        index=0, id=f"call_{uuid.uuid4().hex[:24]}", name=name, arguments=json.dumps(args, ensure_ascii=False)
    )
