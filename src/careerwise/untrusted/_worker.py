"""Parsing an untrusted file in a child process that cannot take the app down with it.

Each parse runs in a fresh process forked from multiprocessing's fork server, with an address-space
limit (``RLIMIT_AS``: what it started with plus ``memory_bytes``) and a CPU-time limit; the parent
waits at most ``timeout`` seconds for its answer and then kills it. Whatever the file does to the
parser (a bomb, a pathological loop, a crash in C code), the app process only ever sees one of:

* the parse's result;
* the parse's own refusal (a :class:`UserInputError`, raised again here as it was raised there);
* :class:`UploadTooComplexError`, when the worker hit its memory or time limit or died;
* :class:`RateLimitedError`, when every worker slot stayed busy for ``timeout`` seconds.

Why a fork server: it imports the parsers once (``PARSERS``) and forks a worker per parse, so a
parse costs a fork rather than a fresh interpreter importing pypdf and python-docx; and unlike a
plain fork it never copies the app's threads, locks or event loop into the child.

The blocking call waits on a pipe: call :meth:`ParseWorkers.run`, which runs it in a thread, so the
event loop is never blocked.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import math
import multiprocessing
import os
import resource
import sys
import threading
from collections.abc import Callable
from multiprocessing import forkserver
from multiprocessing.connection import Connection
from typing import Any, ParamSpec, TypeVar, cast

from careerwise.errors import RateLimitedError, UploadTooComplexError, UserInputError
from careerwise.tracing.background import UPLOAD_PARSE_CRASHED, UPLOAD_PARSE_STOPPED, count_failure

log = logging.getLogger(__name__)
P = ParamSpec("P")
T = TypeVar("T")

# counted in careerwise_background_task_failures_total{task}: a worker stopped at a limit (a hostile
# or pathological file), and a worker whose parse raised something other than a refusal (our bug)
STOPPED_AT_LIMIT = UPLOAD_PARSE_STOPPED
PARSE_CRASHED = UPLOAD_PARSE_CRASHED
PARSERS = [
    "careerwise.untrusted._forkserver",
    "careerwise.untrusted._worker",
    "careerwise.resume.extract",
    "careerwise.knowledge.documents",
    "pypdf",
    "docx",
    "bs4",
]


def _preload() -> list[str]:
    """What the fork server imports once: the parsers, and the main module. multiprocessing re-runs
    the main module in every child unless the fork server has it already (a script, by path) or its
    imports are cached there (``python -m some.module``: the child then runs only its top level). A
    package's ``__main__`` (``python -m careerwise.cli``) is never re-run in a child."""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    name = getattr(spec, "name", None)
    by_name = [name] if isinstance(name, str) and not name.endswith("__main__") else []
    return ["__main__", *by_name, *PARSERS]


_CONTEXT = multiprocessing.get_context("forkserver")
_CONTEXT.set_forkserver_preload(_preload())  # takes effect when the fork server starts, at the first parse


def _address_space() -> int:
    """This process's current virtual size in bytes (0 where /proc is missing)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as f:
            return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _limit_self(memory_bytes: int, timeout: float) -> None:
    start = _address_space()
    if start:
        _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        want = start + memory_bytes
        resource.setrlimit(resource.RLIMIT_AS, (want if hard < 0 else min(want, hard), hard))
    _soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
    cpu = math.ceil(timeout) + 1  # a backstop: the parent kills it at ``timeout`` of wall time
    resource.setrlimit(resource.RLIMIT_CPU, (cpu if hard < 0 else min(cpu, hard), hard))


def _child(conn: Connection, memory_bytes: int, timeout: float, job: Callable[[], object]) -> None:
    reply: tuple[str, object]
    try:
        _limit_self(memory_bytes, timeout)
        reply = ("ok", job())
    except MemoryError:
        reply = ("memory", None)
    except UserInputError as exc:
        reply = ("refused", (type(exc), str(exc), dict(vars(exc))))
    except Exception as exc:  # noqa: BLE001 - reported to the parent, which logs and counts it
        reply = ("crashed", f"{type(exc).__name__}: {exc}")
    try:
        conn.send(reply)
    except MemoryError:  # the result itself did not fit in what was left
        conn.send(("memory", None))
    except Exception as exc:  # noqa: BLE001 - an answer that cannot be sent is reported as a crash
        conn.send(("crashed", f"its answer could not be sent: {type(exc).__name__}: {exc}"))
    finally:
        conn.close()


def _refusal(payload: object) -> UserInputError:
    cls, message, state = cast(tuple[type[UserInputError], str, dict[str, Any]], payload)
    exc = cls.__new__(cls)
    Exception.__init__(exc, message)
    exc.__dict__.update(state)
    return exc


def run_limited(job: Callable[[], T], *, memory_bytes: int, timeout: float, what: str) -> T:
    """``job()`` in a limited child process; blocks until it answers, dies or is killed. ``job`` must
    pickle (a module-level function, or a ``functools.partial`` of one)."""
    receiver, sender = _CONTEXT.Pipe(duplex=False)
    proc = _CONTEXT.Process(
        target=_child, args=(sender, memory_bytes, timeout, job), daemon=True, name="careerwise-parse"
    )
    proc.start()
    sender.close()
    try:
        if not receiver.poll(timeout):
            proc.kill()
            log.warning("upload: the parse of %s was killed after %.1f s", what, timeout)
            count_failure(STOPPED_AT_LIMIT)
            raise UploadTooComplexError(
                f"{what} takes longer than {timeout:g} s to read, far longer than a document should; "
                "it is not read"
            )
        try:
            status, payload = receiver.recv()
        except EOFError:
            status, payload = "died", None
    finally:
        receiver.close()
        proc.join(timeout=1.0)  # it answered: let it exit by itself first
        if proc.is_alive():
            proc.kill()
        proc.join()
        exitcode = proc.exitcode
        proc.close()
    if status == "ok":
        return cast(T, payload)
    if status == "refused":
        raise _refusal(payload)
    if status == "crashed":
        log.error("upload: the parse of %s failed: %s", what, payload)
        count_failure(PARSE_CRASHED)
        raise UserInputError(f"{what} could not be read; save it again or paste the text")
    # out of memory, or ended by the kernel (the CPU-time limit, a signal) without a word
    log.warning("upload: the parse of %s was stopped at its limit (%s, exit code %s)", what, status, exitcode)
    count_failure(STOPPED_AT_LIMIT)
    if status == "memory":
        raise UploadTooComplexError(
            f"{what} needs more than {memory_bytes // (1024 * 1024)} MB of memory to read, far more than a "
            "document should; it is not read"
        )
    raise UploadTooComplexError(f"{what} stopped its reader at the reader's limits; it is not read")


class ParseWorkers:
    """At most ``slots`` limited parses at once in this app process; the others wait for a slot."""

    def __init__(self, *, memory_bytes: int, slots: int) -> None:
        self.memory_bytes = memory_bytes
        self._slots = threading.BoundedSemaphore(slots)

    @staticmethod
    def warm() -> None:
        """Start the fork server now (the app's start-up), so the first upload does not wait for it to
        import the parsers. Blocking: call it in a thread."""
        forkserver.ensure_running()

    async def run(
        self, seconds: float, what: str, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """``fn(*args, **kwargs)`` in a limited worker given ``seconds`` (see the module's docstring);
        ``what`` names the file in messages ("the resume")."""
        job = functools.partial(fn, *args, **kwargs)
        return await asyncio.to_thread(self._run, seconds, what, job)

    def _run(self, timeout: float, what: str, job: Callable[[], T]) -> T:
        if not self._slots.acquire(timeout=timeout):
            raise RateLimitedError(
                "other uploads are being read right now; try again in a few seconds",
                retry_after=math.ceil(timeout),
            )
        try:
            return run_limited(job, memory_bytes=self.memory_bytes, timeout=timeout, what=what)
        finally:
            self._slots.release()
