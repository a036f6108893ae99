"""Personal data masking for everything stored or logged about a turn (docs/observability.md#masking).

What is masked, each replaced by a bracketed tag so a reader still sees that something was there:

* e-mail addresses                                     -> ``[email]``
* phone numbers: Taiwan mobiles (0912-345-678, +886 912 345 678), Taiwan landlines ((02)2345-6789,
  02-2345-6789, +886-2-2345-6789), international numbers written with ``+`` and 8-15 digits, North
  American numbers ((415) 555-0100, 415-555-0100)          -> ``[phone]``
* LINE ids after ``LINE:`` / ``LINE ID`` / ``line id`` / ``賴：``  -> ``[line-id]``
* Taiwan national id and resident certificate numbers (A123456789) -> ``[id-number]``
* resume contact lines: a line that starts with a contact label (電話, 手機, Email, 地址, Address, 生日,
  ...) followed by a colon keeps the label and loses the rest -> ``地址： [contact]``

Names are not masked: no pattern tells a name from any other word, and guessing would mangle answers.
Numbers that only look like phones are left alone on purpose: years and ranges (2025-2026), dates
(2024-03-15), salaries (45,000 / 1200000), percentages, versions, hex ids. The unit tests list both sides.

The messages table is not masked: it is the user's own history, shown back to them. Traces, trace events,
tool-call arguments, span attributes, feedback comments and log lines are.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from typing import Any

EMAIL_TAG = "[email]"
PHONE_TAG = "[phone]"
LINE_TAG = "[line-id]"
ID_TAG = "[id-number]"
CONTACT_TAG = "[contact]"

# ASCII-only boundaries: Python's \w matches CJK, and 「信箱是abc@gmail.com謝謝」 has no space around it.
_EMAIL = re.compile(
    r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9][A-Za-z0-9._%+-]*@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}"
    r"(?![A-Za-z0-9-])"
)
_SEP = r"[-\s.]?"
_TW_MOBILE = re.compile(rf"(?<![\d+])(?:\(?\+?886\)?{_SEP}0?|0)9\d{{2}}{_SEP}\d{{3}}{_SEP}\d{{3}}(?!\d)")
_TW_LANDLINE = re.compile(
    rf"(?<![\d+])(?:\(?\+?886\)?{_SEP}\(?0?[2-8]\d{{0,2}}\)?{_SEP}|\(0[2-8]\d{{0,2}}\)\s?|0[2-8]\d{{0,2}}[-\s.])"
    rf"\d{{3,4}}{_SEP}\d{{3,4}}(?:\s?(?:#|ext\.?|分機)\s?\d{{1,5}})?(?!\d)"
)
_INTERNATIONAL = re.compile(r"(?<![\w+])\+\d{1,3}(?:[-\s.]?\(?\d{1,4}\)?){2,6}(?!\d)")
_NANP = re.compile(r"(?<!\d)(?:\(\d{3}\)\s?|\d{3}[-.])\d{3}[-.]\d{4}(?!\d)")
_NATIONAL_ID = re.compile(r"(?<![A-Za-z0-9])[A-Z][1289]\d{8}(?![A-Za-z0-9])")

_LINE_TOKEN = r"@?[A-Za-z0-9][A-Za-z0-9._-]{1,39}"
# "LINE ID" / "line id" (any case, separator optional) and "LINE:" / "賴：": whatever follows is an id
_LINE_ID = re.compile(
    rf"((?:(?i:line)\s*(?:(?i:id)|帳號|账号)\s*(?:[:：]|是|為|(?i:is))?|(?:LINE|賴)\s*[:：])\s*)(?!(?i:is)(?![A-Za-z0-9._-]))({_LINE_TOKEN})"
)
# "line:" / "Line:" in any other case is ordinary prose ("the opening line: keep it short") unless what
# follows looks like an id: it has a digit, an underscore, a dot, or starts with @
_LINE_LOOSE = re.compile(
    r"((?i:line)\s*[:：]\s*)(@[A-Za-z0-9._-]{2,40}|[A-Za-z0-9._-]*[0-9_.][A-Za-z0-9._-]*)"
)

_CONTACT_LABELS = (
    "電話|手機|行動電話|聯絡電話|連絡電話|市話|電子郵件|電子信箱|信箱|郵件|地址|住址|通訊地址|戶籍地址|"
    "居住地|身分證字號|身份證字號|身分證|出生日期|生日|聯絡方式|微信|"
    r"E-?mail|Mail|Phone|Mobile|Cell(?:phone)?|Tel(?:ephone)?|(?:Home\s+)?Address|Date\s+of\s+birth|DOB|"
    r"Birthday|Contact|WeChat"
)
_CONTACT_LINE = re.compile(
    rf"(?im)^([ \t]*(?:[-*•·][ \t]*)?(?:{_CONTACT_LABELS})[ \t]*[:：])[ \t]*(?=\S)(?!\[contact\]$).+$"
)


def _digits(text: str) -> int:
    return sum(ch.isdigit() for ch in text)


def _international(match: re.Match[str]) -> str:
    return PHONE_TAG if 8 <= _digits(match.group(0)) <= 15 else match.group(0)


def _landline(match: re.Match[str]) -> str:
    return PHONE_TAG if 8 <= _digits(match.group(0)) <= 14 else match.group(0)


# Every pattern above needs one of these to match: an @ (e-mail), a colon (contact lines, "LINE:"),
# "line" or 賴 (LINE ids), or six digits (the shortest phone or id it masks has eight). A string with
# none of them is returned as it is after this one scan instead of nine (most strings of a trace).
_MAYBE_PERSONAL = re.compile(r"[@:：賴]|(?i:line)|\d(?:\D*\d){5}")


def mask_text(text: str) -> str:
    """``text`` with personal data replaced by tags. Idempotent: masking twice changes nothing more."""
    if not text or _MAYBE_PERSONAL.search(text) is None:
        return text
    return _mask_all(text)


def _mask_all(text: str) -> str:
    """Every pattern, in order (``mask_text`` without its quick exit; the tests compare the two)."""
    out = _CONTACT_LINE.sub(lambda m: f"{m.group(1)} {CONTACT_TAG}", text)
    out = _EMAIL.sub(EMAIL_TAG, out)
    out = _LINE_ID.sub(lambda m: f"{m.group(1)}{LINE_TAG}", out)
    out = _LINE_LOOSE.sub(lambda m: f"{m.group(1)}{LINE_TAG}", out)
    out = _TW_MOBILE.sub(PHONE_TAG, out)
    out = _TW_LANDLINE.sub(_landline, out)
    out = _INTERNATIONAL.sub(_international, out)
    out = _NANP.sub(PHONE_TAG, out)
    return _NATIONAL_ID.sub(ID_TAG, out)


def mask_json(value: Any) -> Any:
    """A JSON-like value (dicts, lists, strings, numbers) with every string masked; keys are kept."""
    if isinstance(value, str):
        return mask_text(value)
    if isinstance(value, dict):
        return {k: mask_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [mask_json(v) for v in value]
    return value


class MaskingFilter(logging.Filter):
    """Masks a record's message (and its traceback text) before any handler formats it."""

    _formatter = logging.Formatter()

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except (TypeError, ValueError):  # a bad format string: keep the raw parts, masked
            message = f"{record.msg} {record.args}"
        record.msg, record.args = mask_text(message), None
        if record.exc_info and not record.exc_text:
            record.exc_text = self._formatter.formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = mask_text(record.exc_text)
        return True


def install_log_masking(handlers: Iterable[logging.Handler] | None = None) -> int:
    """Add a :class:`MaskingFilter` to each handler (default: the root logger's), once. Handler filters
    see the records of every logger that propagates to them. Returns how many handlers got one."""
    targets = list(handlers) if handlers is not None else list(logging.getLogger().handlers)
    added = 0
    for handler in targets:
        if not any(isinstance(f, MaskingFilter) for f in handler.filters):
            handler.addFilter(MaskingFilter())
            added += 1
    return added
