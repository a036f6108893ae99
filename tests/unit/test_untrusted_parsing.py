"""Hostile files against the resume extractor, one test per class of input, and the parse worker
stopped at its memory and time limits. Outcomes only: the error, its code and words; the worker gone.
(tests/integration/test_hostile_uploads.py checks the HTTP status and that nothing is stored.)"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from careerwise.errors import PayloadTooLargeError, UploadTooComplexError, UserInputError
from careerwise.resume.extract import ExtractLimits, ResumeFileError, extract_resume
from careerwise.tracing.background import failure_counts
from careerwise.untrusted import ArchiveLimits, ParseWorkers
from careerwise.untrusted._worker import PARSE_CRASHED, STOPPED_AT_LIMIT
from tests.fixtures import hostile_files as hostile

MB = 1024 * 1024
LIMITS = ExtractLimits(archive=ArchiveLimits(max_inflated_bytes=MB, max_members=50, max_xml_elements=5000))


def refusal(data: bytes) -> UserInputError:
    with pytest.raises(UserInputError) as caught:
        extract_resume(data, filename="cv.docx", limits=LIMITS)
    return caught.value


def test_a_plain_document_still_reads() -> None:
    assert (
        "Marketing specialist" in extract_resume(hostile.plain_docx(), filename="cv.docx", limits=LIMITS).text
    )


@pytest.mark.parametrize(
    "make",
    [lambda: hostile.bomb_docx(3 * MB), lambda: hostile.lying_bomb_docx(3 * MB)],
    ids=["honest-directory", "lying-directory"],
)
def test_a_zip_bomb_is_stopped_by_the_bytes_it_inflates_whatever_its_directory_says(
    make: Callable[[], bytes],
) -> None:
    exc = refusal(make())
    assert isinstance(exc, PayloadTooLargeError) and exc.code == "resume_too_large"
    assert "unpacks to more than 1 MB" in str(exc)


def test_a_directory_that_understates_a_member_within_the_budget_is_refused_as_damage() -> None:
    exc = refusal(hostile.lying_bomb_docx(MB // 2))
    assert exc.code == "resume_unreadable" and "directory does not match its content" in str(exc)


def test_an_xml_element_flood_is_refused_while_it_is_counted() -> None:
    exc = refusal(hostile.element_flood_docx(10_000))
    assert isinstance(exc, UploadTooComplexError) and "more XML elements than the limit of 5,000" in str(exc)


@pytest.mark.parametrize(
    "make", [hostile.entity_docx, hostile.external_entity_docx], ids=["laughs", "external"]
)
def test_xml_with_a_dtd_or_entity_declarations_is_refused(make: Callable[[], bytes]) -> None:
    exc = refusal(make())
    assert exc.code == "resume_unreadable" and "declares a DTD or entities" in str(exc)


@pytest.mark.parametrize("name", ["../../../../tmp/evil.txt", "/etc/cron.d/x", "word\\..\\..\\x", "C:evil"])
def test_a_member_named_outside_the_document_is_refused(name: str) -> None:
    exc = refusal(hostile.traversal_docx(name))
    assert exc.code == "resume_unreadable" and "points outside it" in str(exc)


def test_an_encrypted_member_is_refused() -> None:
    exc = refusal(hostile.encrypted_docx())
    assert exc.code == "resume_unreadable" and "encrypted" in str(exc)


def test_an_archive_inside_the_document_is_not_opened() -> None:
    exc = refusal(hostile.nested_zip_docx())
    assert isinstance(exc, ResumeFileError) and "an archive inside it" in str(exc)


def test_too_many_members_are_refused() -> None:
    exc = refusal(hostile.many_members_docx(60))
    assert isinstance(exc, UploadTooComplexError) and "the limit is 50" in str(exc)


# --------------------------------------------------------------------------- the worker


def _sleep_forever(pid_file: str) -> None:
    Path(pid_file).write_text(str(os.getpid()))
    time.sleep(600)


def _allocate(n: int) -> int:
    return len(bytearray(n))


def _fail() -> None:
    raise RuntimeError("a parser bug")


def _killed_by_the_kernel() -> None:
    os.kill(os.getpid(), signal.SIGKILL)  # as the OOM killer or a CPU-time limit would


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


async def test_a_worker_past_its_time_limit_is_killed(tmp_path: Path) -> None:
    workers = ParseWorkers(memory_bytes=64 * MB, slots=1)
    before = failure_counts().get(STOPPED_AT_LIMIT, 0)
    pid_file = tmp_path / "pid"
    with pytest.raises(UploadTooComplexError, match="takes longer than 1 s"):
        await workers.run(1.0, "the file", _sleep_forever, str(pid_file))
    assert _gone(int(pid_file.read_text()))
    assert failure_counts()[STOPPED_AT_LIMIT] == before + 1


async def test_a_worker_past_its_memory_limit_is_stopped_and_the_next_parse_works() -> None:
    workers = ParseWorkers(memory_bytes=64 * MB, slots=1)
    with pytest.raises(UploadTooComplexError, match="more than 64 MB of memory"):
        await workers.run(10.0, "the file", _allocate, 1024 * MB)
    assert await workers.run(10.0, "the file", _allocate, MB) == MB


async def test_a_worker_that_dies_without_a_word_is_reported_as_stopped() -> None:
    workers = ParseWorkers(memory_bytes=64 * MB, slots=1)
    before = failure_counts().get(STOPPED_AT_LIMIT, 0)
    with pytest.raises(UploadTooComplexError, match="stopped its reader"):
        await workers.run(10.0, "the file", _killed_by_the_kernel)
    assert failure_counts()[STOPPED_AT_LIMIT] == before + 1


async def test_a_refusal_in_the_worker_reaches_the_caller_as_raised_and_a_crash_is_logged_and_counted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    workers = ParseWorkers(memory_bytes=256 * MB, slots=1)
    with pytest.raises(ResumeFileError) as caught:
        await workers.run(
            10.0, "the resume", extract_resume, hostile.encrypted_docx(), filename="cv.docx", limits=LIMITS
        )
    assert caught.value.code == "resume_unreadable" and "encrypted" in str(caught.value)
    before = failure_counts().get(PARSE_CRASHED, 0)
    with pytest.raises(UserInputError, match="could not be read"):
        await workers.run(10.0, "the resume", _fail)
    assert failure_counts()[PARSE_CRASHED] == before + 1
    assert "RuntimeError: a parser bug" in caplog.text
