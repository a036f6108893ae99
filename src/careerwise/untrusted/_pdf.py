"""A PDF's page count as its page tree declares it, read before pypdf walks the tree: a file that
declares more pages than allowed is refused without a walk whose cost grows with every page. A file
that declares fewer than it has is still caught by the real count afterwards (and by the worker's
time limit meanwhile)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pypdf import PdfReader


def declared_pages(reader: PdfReader) -> int | None:
    """``/Root /Pages /Count``, or None when the file has none that reads as a number."""
    from pypdf.errors import PyPdfError

    try:
        root: Any = reader.trailer["/Root"]  # pypdf's objects index by name at run time
        return int(root["/Pages"]["/Count"])
    except (PyPdfError, KeyError, TypeError, ValueError, AttributeError, IndexError, RecursionError):
        return None  # the real count decides (a damaged tree is refused there)
