"""An XML part checked before any library builds a tree of it: no DTD at all (so no entity can be
declared, expanded or fetched), and no more elements than a budget, counted while expat streams
through the bytes. A tree is built only of parts that passed."""

from __future__ import annotations

from xml.parsers import expat

from careerwise.errors import UploadTooComplexError, UserInputError

_CHUNK = 64 * 1024


class XmlRefusedError(UserInputError):
    """A part with a DTD or entity declaration, or one that is not well-formed XML."""

    code = "upload_unsafe_xml"


class _Stop(Exception):
    """Raised inside expat's handlers to end the parse at once; turned into a refusal below."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def count_elements(data: bytes, *, budget: int, limit: int, name: str, what: str) -> int:
    """The elements in ``data``; refuses a DTD, malformed XML, or more than ``budget`` elements
    (what is left of ``limit``, the whole file's, named in the message)."""
    parser = expat.ParserCreate()
    count = 0

    def start(_tag: str, _attrs: object) -> None:
        nonlocal count
        count += 1
        if count > budget:
            raise _Stop("elements")

    def declaration(*_args: object) -> None:
        raise _Stop("dtd")

    parser.StartElementHandler = start
    parser.StartDoctypeDeclHandler = declaration
    parser.EntityDeclHandler = declaration
    parser.ElementDeclHandler = declaration
    try:
        for i in range(0, len(data), _CHUNK):
            parser.Parse(data[i : i + _CHUNK], False)
        parser.Parse(b"", True)
    except _Stop as stop:
        if stop.reason == "dtd":
            raise XmlRefusedError(
                f"{what} declares a DTD or entities in {name[:80]!r}; documents from Word never do, so it "
                "is not read"
            ) from None
        raise UploadTooComplexError(
            f"{what} holds more XML elements than the limit of {limit:,}; it is not read"
        ) from None
    except expat.ExpatError as exc:
        raise XmlRefusedError(f"{what} is damaged: {name[:80]!r} is not well-formed XML") from exc
    return count
