"""The embedded local model: Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF) through ``llama-cpp-python``.

The package's jobs, one module each:

- ``weights``: the packaged GGUF chunks joined once into a verified cache file, the ``llama_cpp`` import
  (``OMP_WAIT_POLICY`` set before it) and the parameters a ``Llama`` is constructed with;
- ``chatml``: the Qwen2.5 ChatML prompt and the tool description the model reads;
- ``provider``: :class:`LocalProvider`, the model as an LLM provider, and its generation thread.

This module re-exports what the rest of the code imports from ``careerwise.llm.local``; the text tool-call
and Chinese conversion parts come from ``llm/textcalls.py`` and ``llm/zh.py``, which serve every provider.
"""

from careerwise.llm.local.chatml import (
    DEFAULT_SYSTEM,
    NO_CALL_NOTE,
    NO_CALL_NOTE_PLAIN,
    TOOLS_HEADER,
    render_prompt,
    render_tools_block,
)
from careerwise.llm.local.provider import LOCAL_PROFILE, LocalProvider
from careerwise.llm.local.weights import MODEL_FILENAME, MODEL_SHA256, ensure_model_file, model_part_paths
from careerwise.llm.textcalls import (
    DetectorEvent,
    ParsedToolCall,
    TextOut,
    ToolCallDetector,
    ToolOut,
    find_json_object_end,
    parse_tool_call,
)
from careerwise.llm.zh import ZhStreamConverter, opencc_converter

__all__ = [
    "DEFAULT_SYSTEM",
    "LOCAL_PROFILE",
    "MODEL_FILENAME",
    "MODEL_SHA256",
    "NO_CALL_NOTE",
    "NO_CALL_NOTE_PLAIN",
    "TOOLS_HEADER",
    "DetectorEvent",
    "LocalProvider",
    "ParsedToolCall",
    "TextOut",
    "ToolCallDetector",
    "ToolOut",
    "ZhStreamConverter",
    "ensure_model_file",
    "find_json_object_end",
    "model_part_paths",
    "opencc_converter",
    "parse_tool_call",
    "render_prompt",
    "render_tools_block",
]
