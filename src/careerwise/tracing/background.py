"""Failures of work that nobody awaits: a background task's exception, a process set-up step that
failed. Nothing raises them to a turn, so without this they would only be a log line.

:func:`task_failed` is the one done-callback body for such work: it logs the exception with the
caller's context and counts it under a ``task`` name; :func:`count_failure` counts a failure that is
not a task (``mallopt`` refused the arena limit, jieba's dictionary could not be loaded). The counts
are ``careerwise_background_task_failures_total{task}`` (docs/observability.md#metrics), read at scrape
time by every :class:`careerwise.tracing.metrics.Metrics`.

Why a process-wide tally and not a counter per ``Metrics`` registry: some of these run before any app
exists (``memory.limit_arenas``, at app creation) or deep in modules that have no metrics object (the
lexical segmenter, a flow's warm-up task). Two apps in one process (tests) therefore see the same
figures; tests compare before and after.
"""

from __future__ import annotations

import logging
import threading
from typing import Protocol

# the task names counted; each starts at 0 so a rate over it exists before the first failure
LOCAL_MODEL_WARM = "local_model_warm"
LOOP_LAG_PROBE = "loop_lag_probe"
TOOL_WARM = "tool_warm"
BM25_BESIDE_EMBEDDING = "bm25_beside_embedding"
LINE_CHAT_QUEUE = "line_chat_queue"
MALLOC_ARENA_LIMIT = "malloc_arena_limit"
JIEBA_DICTIONARY = "jieba_dictionary"
PROCESS_HEARTBEAT = "process_heartbeat"  # this process's row in app_processes (store/recovery.py)
STARTUP_RECOVERY = "startup_recovery"  # closing or handing on what a dead process left (store/recovery.py)
UPLOAD_PARSE_STOPPED = "upload_parse_stopped"  # a parse worker stopped at its memory or time limit
UPLOAD_PARSE_CRASHED = "upload_parse_crashed"  # a parse worker's parse raised something not a refusal
KNOWLEDGE_UPLOAD_CLEANUP = "knowledge_upload_cleanup"  # an upload's staging folder could not be removed
DEEP_TASK_AFTER_CLOSE = "deep_task_after_close"  # a deep flow's task failed after its reader had gone
LLM_STREAM_CUT = "llm_stream_cut"  # a server cut a stream off when another request started
LLM_PROFILE_PROBE = "llm_profile_probe"  # GET /models, to tell a llama.cpp server, failed
QUOTE_SIMILARITY = "quote_similarity"  # embedding the quote candidates failed (word overlap chose)
ANSWER_LOOP = "answer_loop"  # the model wrote a sentence of its answer again; the answer ended there
ZH_PHRASES = "zh_phrases"  # OpenCC's phrase tables could not be read: streamed Han runs are held whole
TASKS = (
    LOCAL_MODEL_WARM,
    LOOP_LAG_PROBE,
    TOOL_WARM,
    BM25_BESIDE_EMBEDDING,
    LINE_CHAT_QUEUE,
    MALLOC_ARENA_LIMIT,
    JIEBA_DICTIONARY,
    PROCESS_HEARTBEAT,
    STARTUP_RECOVERY,
    UPLOAD_PARSE_STOPPED,
    UPLOAD_PARSE_CRASHED,
    KNOWLEDGE_UPLOAD_CLEANUP,
    DEEP_TASK_AFTER_CLOSE,
    LLM_STREAM_CUT,
    LLM_PROFILE_PROBE,
    QUOTE_SIMILARITY,
    ANSWER_LOOP,
    ZH_PHRASES,
)

_lock = threading.Lock()  # done-callbacks run on the loop, the others in worker threads
_counts: dict[str, int] = dict.fromkeys(TASKS, 0)


class Finished(Protocol):
    """What a done-callback receives: an ``asyncio.Task`` or a ``concurrent.futures.Future``."""

    def cancelled(self) -> bool: ...

    def exception(self) -> BaseException | None: ...


def count_failure(task: str) -> None:
    """One more failure of ``task`` (the caller has logged it)."""
    with _lock:
        _counts[task] = _counts.get(task, 0) + 1


def failure_counts() -> dict[str, int]:
    """A copy of the counts, by task name (for ``/metrics`` and tests)."""
    with _lock:
        return dict(_counts)


def task_failed(
    done: Finished, *, task: str, logger: logging.Logger, what: str, level: int = logging.ERROR
) -> BaseException | None:
    """In a done-callback: when ``done`` ended with an exception, log it on ``logger`` as
    ``"{what}: {exception}"`` (with its traceback) and count it under ``task``; return it so the caller
    can do its own bookkeeping. A cancelled or successful one returns None, and nothing is logged."""
    if done.cancelled():
        return None
    exc = done.exception()
    if exc is None:
        return None
    logger.log(level, "%s: %s", what, exc, exc_info=exc)
    count_failure(task)
    return exc
