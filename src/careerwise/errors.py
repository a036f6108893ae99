"""The one exception hierarchy. Each class maps to one HTTP status in ``api/errors.py``.

CareerWiseError
├── UserInputError (400/422)      the caller sent something we cannot accept
│   ├── ConversationBusyError (409)  a turn is still running on that conversation
│   ├── ConflictError (409)          the request collides with stored state (an email already signed up)
│   ├── PayloadTooLargeError (413)   an upload over its size limit (also once inflated)
│   ├── UploadTooComplexError (400)  an upload that needs more memory, time or parts to read than allowed
│   └── UnsupportedMediaTypeError (415)  an upload of a kind we do not read
├── AuthenticationError (401)     not logged in, or wrong email/password (never says which)
├── PermissionDeniedError (403)   logged in but not allowed; or a cross-site state-changing request
├── RateLimitedError (429)        too many requests; carries ``retry_after`` seconds
├── NotFoundError (404)
├── LLMError (502)                the provider failed
│   ├── LLMUnavailableError          connect failure, 5xx, after our single retry
│   ├── LLMTimeoutError              no chunk within the read deadline / turn deadline
│   └── LLMToolsUnsupportedError     the provider refused the ``tools`` parameter
├── KnowledgeUnavailableError (503) the retriever could not load or query
│   └── SegmenterUnavailableError    jieba's dictionary did not load: Chinese text cannot be tokenized
├── DatabaseBusyError (503)       another process holds the database's lock; carries ``retry_after``
├── ToolError                     a tool failed; reported to the model, never to HTTP
│   └── ToolArgumentsError           the model's arguments did not parse or validate
├── StepFailed                    one deep-flow step gave no usable result; the flow steps down, never HTTP
├── LinePushError                 LINE refused or kept failing a push; the LINE channel logs and counts it
└── LineAssistantUnavailableError  the assistant set for LINE is unknown or disabled; logged and counted
"""

from __future__ import annotations


class CareerWiseError(Exception):
    code = "internal_error"


class UserInputError(CareerWiseError):
    code = "invalid_input"


class ConversationBusyError(UserInputError):
    code = "conversation_busy"


class ConflictError(UserInputError):
    code = "conflict"


class PayloadTooLargeError(UserInputError):
    code = "payload_too_large"


class UnsupportedMediaTypeError(UserInputError):
    code = "unsupported_media_type"


class UploadTooComplexError(UserInputError):
    """The parse worker was stopped at its memory or time limit, or the file has more elements,
    pages or archive members than its limits allow (``careerwise.untrusted``)."""

    code = "upload_too_complex"


class AuthenticationError(CareerWiseError):
    code = "not_authenticated"


class PermissionDeniedError(CareerWiseError):
    code = "forbidden"


class RateLimitedError(CareerWiseError):
    code = "rate_limited"

    def __init__(self, message: str, *, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = max(1, retry_after)


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


class SegmenterUnavailableError(KnowledgeUnavailableError):
    """jieba's dictionary could not be loaded (a broken install: its files missing or unreadable), so
    Chinese text cannot be tokenized, for a search or an ingest; the cause is chained. A failure of
    ours, not the caller's: 503 like the rest of the retriever's (``knowledge/lexical.py`` retries the
    load after ``SEGMENTER_RETRY_AFTER`` seconds)."""

    code = "segmenter_unavailable"


class DatabaseBusyError(CareerWiseError):
    """SQLite's lock stayed held past ``busy_timeout`` (another process, a backup, a stuck writer): the
    request changed nothing and may be sent again after ``retry_after`` seconds."""

    code = "database_busy"

    def __init__(self, message: str, *, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = max(1, retry_after)


class ToolError(CareerWiseError):
    code = "tool_error"


class ToolArgumentsError(ToolError):
    code = "tool_arguments_invalid"


class StepFailed(CareerWiseError):
    """One step (an agent, a chain step, the merge, the reflection) gave no usable result.

    ``code``: timeout, turn_deadline, invalid_json, empty, llm_unavailable, llm_error, internal_error.
    ``unreachable``: the provider could not be reached at all (connect failure / 5xx), so a lower rung
    that also needs the LLM would fail the same way. The deep flows catch it and step down
    (``flows/deep_steps/``); it reaches neither a reply nor HTTP.
    """

    def __init__(self, code: str, detail: str = "", *, unreachable: bool = False) -> None:
        super().__init__(f"{code}: {detail}" if detail else code)
        self.code = code
        self.detail = detail
        self.unreachable = unreachable


class LinePushError(CareerWiseError):
    """LINE refused a push (a 4xx other than 429) or it failed on every attempt
    (``channels/line/delivery.py``): the event is marked failed, logged and counted there; the chain holds
    the cause."""

    code = "line_push_failed"


class LineAssistantUnavailableError(CareerWiseError):
    """The assistant configured for LINE (``CAREERWISE_LINE_ASSISTANT``) does not exist or is disabled: a
    setup problem, not the user's (``channels/line/worker.py``). The user gets the channel's usual
    failure line; the event is marked failed, logged, and counted in ``careerwise_errors_total`` under
    this ``code``. It reaches no HTTP response (LINE's webhook has already been answered)."""

    code = "line_assistant_unavailable"
