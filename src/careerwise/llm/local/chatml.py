"""The Qwen2.5 ChatML prompt the embedded model reads: the conversation rendered turn by turn, the tool
description placed at the top of the system message, and the closing note that forbids a call.

Tools are described by hand rather than with llama-cpp's ``chatml-function-calling`` handler (which cannot
stream an automatic tool choice): the model is asked for a bare JSON object ``{"name": ..., "arguments":
{...}}`` when a tool is wanted. Pure functions: testable without the model.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from careerwise.llm.types import ChatMessage, ToolSpec

if TYPE_CHECKING:
    from llama_cpp import Llama

IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
DEFAULT_SYSTEM = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."

# The tool block, placed BEFORE the caller's system prompt. Worded to authorise, not to command: the
# caller's prompt says when a search is worth it; this block says what the tools are and how to call one.
# It comes first because the small model only follows the persona's "use searchKnowledge when you need
# Summer's views" rule when the tools are described before it; the "only when the answer needs
# information only the tool has" sentence is the generic rule that keeps it from searching for
# everything (docs/local-model.md, "How it decides to search, and still streams").
TOOLS_HEADER = (
    "# Tools\n\n"
    "You can use these tools (name, description, JSON Schema of the arguments):\n"
    "<tools>\n{tools}\n</tools>\n"
    "Use a tool only when the answer needs information that only the tool has, such as a specific "
    "person's own views, cases or figures; answer general questions directly.\n"
    'To call a tool, reply with ONLY one JSON object: {{"name": "<tool name>", "arguments": {{...}}}}'
)


# tool_choice="none" after a search (the answer round) keeps the tool block and ends with this note: without
# the block the model imitates the JSON call in its history and writes another call as its answer. Keeping
# the block also keeps the prompt's prefix, so llama.cpp reads only the new turns, not the whole prompt
# again (docs/local-model.md, "How it decides to search").
NO_CALL_NOTE = "Answer the user now in plain text, using the tool results above. Do not call a tool."
NO_CALL_NOTE_PLAIN = "Answer the user now in plain text. Do not call a tool."


def _tool_line(tool: ToolSpec) -> str:
    return json.dumps(
        {"name": tool.name, "description": tool.description, "parameters": tool.parameters},
        ensure_ascii=False,
    )


def render_tools_block(tools: Sequence[ToolSpec]) -> str:
    return TOOLS_HEADER.format(tools="\n".join(_tool_line(t) for t in tools))


def _call_json(name: str, arguments: str) -> str:
    """An assistant tool call as the bare JSON object the model is asked to write."""
    try:
        args: Any = json.loads(arguments) if arguments.strip() else {}
    except json.JSONDecodeError:
        args = arguments  # keep what the model wrote; it is history, not something we execute
    return json.dumps({"name": name, "arguments": args}, ensure_ascii=False)


def render_prompt(
    messages: Sequence[ChatMessage], tools: Sequence[ToolSpec] = (), *, allow_calls: bool = True
) -> str:
    """Render a conversation with the Qwen2.5 ChatML template, ending with an open assistant turn.

    ``tools`` are described at the start of the first system message (see :data:`TOOLS_HEADER` for why not
    at the end). With ``allow_calls=False`` (``tool_choice="none"``) they stay described, so the prompt keeps
    the prefix the KV cache already holds, and a closing system turn tells the model to answer in plain
    text (see :data:`NO_CALL_NOTE`). Assistant tool calls are rendered as the bare JSON objects the model
    writes; consecutive tool results become one user turn of ``<tool_response>`` blocks, as Qwen2.5 was
    trained.
    """
    out: list[str] = []
    msgs = list(messages)
    if msgs and msgs[0].role == "system":
        system, rest = msgs[0].content, msgs[1:]
    else:
        system, rest = DEFAULT_SYSTEM, msgs
    if tools:
        system = f"{render_tools_block(tools)}\n\n{system}"
    out.append(f"{IM_START}system\n{system}{IM_END}\n")

    i = 0
    while i < len(rest):
        msg = rest[i]
        if msg.role == "tool":
            blocks: list[str] = []
            while i < len(rest) and rest[i].role == "tool":
                blocks.append(f"<tool_response>\n{rest[i].content}\n</tool_response>")
                i += 1
            out.append(f"{IM_START}user\n" + "\n".join(blocks) + f"{IM_END}\n")
            continue
        if msg.role == "assistant" and msg.tool_calls:
            lines = [msg.content.strip()] if msg.content.strip() else []
            lines.extend(_call_json(c.name, c.arguments) for c in msg.tool_calls)
            out.append(f"{IM_START}assistant\n" + "\n".join(lines) + f"{IM_END}\n")
        else:
            out.append(f"{IM_START}{msg.role}\n{msg.content}{IM_END}\n")
        i += 1
    if tools and not allow_calls:
        note = NO_CALL_NOTE if any(m.role == "tool" for m in msgs) else NO_CALL_NOTE_PLAIN
        out.append(f"{IM_START}system\n{note}{IM_END}\n")
    out.append(f"{IM_START}assistant\n")
    return "".join(out)


def first_turn_len(llm: Llama, prompt: str, tokens: Sequence[int]) -> int:
    """How many of ``tokens`` make the prompt's first system turn; 0 when the prompt has no complete turn
    or the turn's tokens are not a prefix of the whole prompt's."""
    end = prompt.find(IM_END)
    if end < 0:
        return 0
    head = llm.tokenize(prompt[: end + len(IM_END) + 1].encode("utf-8"), add_bos=False, special=True)
    return len(head) if list(tokens[: len(head)]) == list(head) else 0
