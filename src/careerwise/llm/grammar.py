"""A GBNF grammar for a first answer that is either a tool call or plain text: both branches open.

A small model asked to write its tool calls as JSON sometimes writes them wrong: a tool nobody offered
(``poemAboutCat``), the tool schema itself, a fenced or tagged call. Constraining the first output with
this grammar (llama.cpp's GBNF; a llama.cpp server takes the same text as ``grammar``) leaves the model's
choice where it was, call or answer, and only shapes each branch:

- ``call``: ``{"name": "<an offered tool>", "arguments": {...}}``, any JSON object as arguments;
- ``text``: anything whose first character is not ``{``, ``<``, a backtick or white space, so an answer
  can never start as a call, a schema, a tag or a fence.

The grammar never asks for a call: nothing in it is required of the text branch but its first character.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

_JSON = r"""
args ::= "{" ws ( pair ( ws "," ws pair )* )? ws "}"
pair ::= string ws ":" ws value
value ::= string | number | "true" | "false" | "null" | args | array
array ::= "[" ws ( value ( ws "," ws value )* )? ws "]"
string ::= "\"" ( [^"\\\x00-\x1f] | "\\" ["\\/bfnrt] | "\\u" [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F] )* "\""
number ::= "-"? ( "0" | [1-9] [0-9]* ) ( "." [0-9]+ )? ( [eE] [-+]? [0-9]+ )?
ws ::= [ \t\n]{0,4}
"""


def _literal(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


TEXT_ONLY = "root ::= [^{<`\\x00-\\x20] [^\\x00]*\n"
"""The grammar for an answer that must be text: the round after the tools ran (``tool_choice`` none),
where a model shown its chat template's tool instructions would otherwise write another call."""


def call_or_text(tool_names: Sequence[str], *, tagged: bool = False) -> str:
    """The grammar for a first output that may call one of ``tool_names`` or answer in text.

    ``tagged``: the call may also come in ``<tool_call>`` tags, as a model prompted with its own chat
    template's tool instructions writes it (a llama.cpp server renders the GGUF's template); without
    that branch such a model, kept from its tag, answers in text whether it wanted to call or not."""
    if not tool_names:
        raise ValueError("a call-or-text grammar needs at least one tool name")
    names = " | ".join(_literal(f'"{n}"') for n in tool_names)
    root = "root ::= call | text | tagged\n" + 'tagged ::= "<tool_call>" ws call ws "</tool_call>"\n'
    return (
        (root if tagged else "root ::= call | text\n")
        + f'call ::= "{{" ws "\\"name\\":" ws name ws "," ws "\\"arguments\\":" ws args ws "}}"\n'
        f"name ::= {names}\n"
        "text ::= [^{<`\\x00-\\x20] [^\\x00]*\n" + _JSON
    )


def call_opening(tools: Sequence[tuple[str, dict[str, object]]]) -> str | None:
    """What a call must begin with when it can only be one thing up to its first argument's value: one
    tool, whose one required argument is a string (``{"name": "searchKnowledge", "arguments":
    {"query": "``). None when the call could go more than one way. A provider may write these characters
    itself rather than have the model generate them one grammar-checked token at a time."""
    if len(tools) != 1:
        return None
    name, parameters = tools[0]
    required = parameters.get("required")
    properties = parameters.get("properties")
    if not isinstance(required, list) or len(required) != 1 or not isinstance(properties, dict):
        return None
    spec = properties.get(required[0])
    if not isinstance(spec, dict) or spec.get("type") != "string":
        return None
    return f'{{"name": {_literal(name)}, "arguments": {{{_literal(required[0])}: "'


def call_rest() -> str:
    """The grammar for the rest of a call after :func:`call_opening`: the string value's characters, its
    closing quote, any further arguments, then both closing braces."""
    return (
        'root ::= chars "\\"" ws ( "," ws pair )* ws "}" ws "}"\n'
        'chars ::= ( [^"\\\\\\x00-\\x1f] | "\\\\" ["\\\\/bfnrt] | "\\\\u" [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F] )*\n'
        + _JSON
    )


class CallEnd:
    """Finds where a call begun with :func:`call_opening` ends, fed its generated text piece by piece:
    inside the first argument's string at the start, two objects open. :meth:`feed` returns the part of
    the piece that belongs to the call and sets :attr:`closed` once both objects are closed."""

    def __init__(self) -> None:
        self.depth = 2
        self.in_string = True
        self.escaped = False
        self.closed = False

    def feed(self, piece: str) -> str:
        for n, char in enumerate(piece):
            if self.in_string:
                if self.escaped:
                    self.escaped = False
                elif char == "\\":
                    self.escaped = True
                elif char == '"':
                    self.in_string = False
            elif char == '"':
                self.in_string = True
            elif char in "{[":
                self.depth += 1
            elif char in "}]":
                self.depth -= 1
                if self.depth == 0:
                    self.closed = True
                    return piece[: n + 1]
        return piece
