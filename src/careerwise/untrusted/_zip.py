"""Zip members inflated without trusting the archive's account of itself.

A zip's central directory declares each member's sizes, and an attacker writes it: a member that
declares 40 KB may inflate to gigabytes. So the declared sizes are never used to decide anything:
every member is inflated here from its local header onwards, through a stream read in chunks, and the
real inflated bytes are counted against one budget for the whole archive; the first byte over it ends
the read with :class:`InflatedTooLargeError`. Only afterwards are the declared size and CRC compared
with what came out, and a mismatch is refused as damage.

Refused as well: member names that could point outside a folder (absolute, ``..``, backslashes,
drive letters), duplicate names, encrypted members, compression methods other than stored and
deflate, more members than allowed, and an archive inside an archive outside ``word/embeddings/``
(where Word keeps embedded workbooks; those are kept as opaque bytes and never opened).
"""

from __future__ import annotations

import io
import struct
import zipfile
import zlib
from dataclasses import dataclass

from careerwise.errors import PayloadTooLargeError, UploadTooComplexError, UserInputError

_LOCAL_HEADER = struct.Struct("<4sHHHHHIIIHH")  # the fixed 30 bytes of a local file header
_LOCAL_MAGIC = b"PK\x03\x04"
_CHUNK = 64 * 1024
_ENCRYPTED = 0x1
_EMBEDDED = "word/embeddings/"


class ArchiveRefusedError(UserInputError):
    """An archive we will not read: damaged, encrypted, or with a name or member we refuse."""

    code = "upload_unsafe_archive"


class InflatedTooLargeError(PayloadTooLargeError):
    code = "upload_inflates_too_large"


@dataclass(frozen=True)
class ArchiveLimits:
    max_inflated_bytes: int = 30 * 1024 * 1024
    max_members: int = 1000
    max_xml_elements: int = 300_000


def _mb(n: int) -> str:
    return f"{n / 1024 / 1024:.0f} MB"


def unsafe_name(name: str) -> bool:
    """Whether ``name`` could land outside the folder it is unpacked into, on any system."""
    if not name or "\x00" in name or "\\" in name or name.startswith("/"):
        return True
    if len(name) >= 2 and name[1] == ":":  # C:foo, a drive on Windows
        return True
    return any(part == ".." for part in name.split("/"))


def inflate_members(data: bytes, limits: ArchiveLimits, *, what: str) -> dict[str, bytes]:
    """Every file member of the zip in ``data``, inflated, by name; refuses as described above.
    ``what`` names the file in messages ("the Word document")."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            infos = z.infolist()
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        raise ArchiveRefusedError(f"{what} is damaged and cannot be opened") from exc
    if len(infos) > limits.max_members:
        raise UploadTooComplexError(
            f"{what} has {len(infos):,} parts; the limit is {limits.max_members:,}, far more than a document needs"
        )
    members: dict[str, bytes] = {}
    budget = limits.max_inflated_bytes
    for info in infos:
        name = info.filename
        if unsafe_name(name):
            raise ArchiveRefusedError(
                f"{what} has a part named {name[:80]!r} that points outside it; not read"
            )
        if name in members:
            raise ArchiveRefusedError(f"{what} has two parts named {name[:80]!r}; not read")
        if info.flag_bits & _ENCRYPTED:
            raise ArchiveRefusedError(f"{what} is encrypted (password-protected); remove the password")
        if info.is_dir():
            continue
        body = _inflate(data, info, budget, limits, what=what)
        budget -= len(body)
        if body.startswith(_LOCAL_MAGIC) and not name.startswith(_EMBEDDED):
            raise ArchiveRefusedError(f"{what} holds an archive inside it ({name[:80]!r}); not read")
        members[name] = body
    return members


def _inflate(data: bytes, info: zipfile.ZipInfo, budget: int, limits: ArchiveLimits, *, what: str) -> bytes:
    start = _data_start(data, info, what=what)
    if info.compress_type == zipfile.ZIP_STORED:
        # stored bytes cannot be more than the file holds, which is already within the upload limit
        body = data[start : start + info.compress_size]
        if len(body) > budget:
            raise _too_large(what, limits)
    elif info.compress_type == zipfile.ZIP_DEFLATED:
        body = _inflate_stream(data, start, budget, limits, what=what)
    else:
        raise ArchiveRefusedError(f"{what} is compressed with a method Word does not use; save it again")
    if len(body) != info.file_size or zlib.crc32(body) != info.CRC:
        raise ArchiveRefusedError(f"{what} is damaged: its directory does not match its content")
    return body


def _data_start(data: bytes, info: zipfile.ZipInfo, *, what: str) -> int:
    offset: int = info.header_offset
    head = data[offset : offset + _LOCAL_HEADER.size]
    if len(head) != _LOCAL_HEADER.size:
        raise ArchiveRefusedError(f"{what} is damaged (a part lies past its end)")
    magic, _version, _flags, method, *_rest, name_len, extra_len = _LOCAL_HEADER.unpack(head)
    if magic != _LOCAL_MAGIC or method != info.compress_type:
        raise ArchiveRefusedError(f"{what} is damaged: a part's header does not match its directory")
    return offset + _LOCAL_HEADER.size + int(name_len) + int(extra_len)


def _inflate_stream(data: bytes, start: int, budget: int, limits: ArchiveLimits, *, what: str) -> bytes:
    """The deflate stream at ``start``, inflated until it ends by itself; no call inflates more than
    one chunk, so a bomb is stopped one chunk past the budget whatever its directory says."""
    inflater = zlib.decompressobj(-zlib.MAX_WBITS)
    out = bytearray()
    pos = start
    while not inflater.eof:
        if inflater.unconsumed_tail:
            piece = inflater.decompress(inflater.unconsumed_tail, _CHUNK)
        elif pos < len(data):
            piece = inflater.decompress(data[pos : pos + _CHUNK], _CHUNK)
            pos += _CHUNK
        else:
            raise ArchiveRefusedError(f"{what} is damaged: a part ends before its data does")
        out += piece
        if len(out) > budget:
            raise _too_large(what, limits)
    return bytes(out)


def _too_large(what: str, limits: ArchiveLimits) -> InflatedTooLargeError:
    return InflatedTooLargeError(
        f"{what} unpacks to more than {_mb(limits.max_inflated_bytes)}, far more than a resume or "
        "document needs; it is not read"
    )


def stored_zip(members: dict[str, bytes]) -> bytes:
    """The members as a new, uncompressed zip whose directory is true: what a library that trusts
    the directory (python-docx) may open."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as z:
        for name, body in members.items():
            z.writestr(name, body)
    return buf.getvalue()
