"""The one exception hierarchy. Each class maps to one HTTP status in ``api/errors.py``.

CareerWiseError
├── UserInputError (400/422)      the caller sent something we cannot accept
│   └── ConversationBusyError (409)  a turn is still running on that conversation
├── NotFoundError (404)
├── LLMError (502)                the provider failed
│   ├── LLMUnavailableError          connect failure, 5xx, after our single retry
│   ├── LLMTimeoutError              no chunk within the read deadline / turn deadline
│   └── LLMToolsUnsupportedError     the provider refused the ``tools`` parameter
├── KnowledgeUnavailableError (503) the retriever could not load or query
└── ToolError                     a tool failed; reported to the model, never to HTTP
    └── ToolArgumentsError           the model's arguments did not parse or validate
"""

from __future__ import annotations


class CareerWiseError(Exception):
    code = "internal_error"


class UserInputError(CareerWiseError):
    code = "invalid_input"


class ConversationBusyError(UserInputError):
    code = "conversation_busy"


class NotFoundError(CareerWiseError):
    code = "not_found"


class LLMError(CareerWiseError):
    code = "llm_error"
    retryable = True


class LLMUnavailableError(LLMError):
    code = "llm_unavailable"


class LLMTimeoutError(LLMError):
    code = "llm_timeout"


class LLMToolsUnsupportedError(LLMError):
    code = "llm_tools_unsupported"
    retryable = False


class KnowledgeUnavailableError(CareerWiseError):
    code = "knowledge_unavailable"


class ToolError(CareerWiseError):
    code = "tool_error"


class ToolArgumentsError(ToolError):
    code = "tool_arguments_invalid"
