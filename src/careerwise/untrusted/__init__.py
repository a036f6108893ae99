"""Reading files that strangers send: zip members inflated through a capped stream, XML checked for
DTDs and counted, and every parse run in a worker process with memory and time limits.
docs/security.md#upload-limits."""

from careerwise.untrusted._pdf import declared_pages
from careerwise.untrusted._worker import ParseWorkers, run_limited
from careerwise.untrusted._xml import XmlRefusedError, count_elements
from careerwise.untrusted._zip import (
    ArchiveLimits,
    ArchiveRefusedError,
    InflatedTooLargeError,
    inflate_members,
    stored_zip,
    unsafe_name,
)

__all__ = [
    "ArchiveLimits",
    "ArchiveRefusedError",
    "InflatedTooLargeError",
    "ParseWorkers",
    "XmlRefusedError",
    "count_elements",
    "declared_pages",
    "inflate_members",
    "run_limited",
    "stored_zip",
    "unsafe_name",
]
