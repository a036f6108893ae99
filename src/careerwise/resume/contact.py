"""Contact details in a resume: found, counted and masked before the text goes anywhere.

The review never needs a phone number, so the masked text is what the language model sees, what is
stored, and what traces and logs can carry. What was found is kept as a summary (which kinds, how many)
so the contact section can still be scored for completeness.

Masked kinds: email addresses, phone numbers (Taiwanese mobiles and landlines, international numbers,
anything after a phone label), LINE ids, postal addresses (a labelled line, or a Taiwanese address:
city/county, district, road, number). Profile links (LinkedIn, GitHub, a portfolio) are public on
purpose and stay; they are counted as links.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from careerwise.tracing.masking import EMAIL_TAG, LINE_TAG, PHONE_TAG, mask_text

EMAIL_MASK = EMAIL_TAG
PHONE_MASK = PHONE_TAG
LINE_MASK = LINE_TAG
ADDRESS_MASK = "[address]"

_EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+")
# LINE id after its label: "LINE: summer_tw", "Line ID：@summer", "line id summer88"; after a bare
# "line:" in another case only a token that looks like an id (a digit, _ or ., or @ first), so prose
# such as "the opening line: keep it short" stays
_LINE_ID = re.compile(
    r"((?:LINE\s*(?:ID)?\s*[:：]|(?i:line\s*id)\s*[:：]?)\s*)@?[A-Za-z0-9._-]{3,30}"
    r"|((?i:line)\s*[:：]\s*)(?:@[A-Za-z0-9._-]{2,30}|[A-Za-z0-9._-]*[0-9_.][A-Za-z0-9._-]*)"
)
# a labelled phone: whatever number-like run follows the label
_PHONE_LABELLED = re.compile(
    r"(?i)((?:電話|手機|行動電話|聯絡電話|市話|tel|phone|mobile|cell)\s*(?:no\.?|number)?\s*[:：]?\s*)"
    r"(\+?[\d()（）][\d\s()（）.#-]{6,}\d)"
)
# unlabelled: Taiwanese mobile (09xx), +886 numbers, landlines (02) 2345-6789, other international numbers
_PHONE = re.compile(
    r"(?<![\w+])(?:"
    r"09\d{2}[\s-]?\d{3}[\s-]?\d{3}"
    r"|\+886[\s-]?\(?0?\)?[\s-]?\d{1,2}[\s-]?\d{3,4}[\s-]?\d{3,4}"
    r"|[(（]0\d{1,2}[)）][\s-]?\d{3,4}[\s-]?\d{4}"
    r"|0\d{1,2}-\d{3,4}-?\d{4}"
    r"|\+\d{1,3}[\s-]\d{1,4}[\s-]\d{3,4}[\s-]?\d{3,4}"
    r")(?!\w)"
)
_ADDRESS_LABELLED = re.compile(
    r"(?im)^(\s*[-*•·]?\s*(?:地址|住址|通訊地址|戶籍地址|居住地址|現居地址|address|home address)\s*[:：]\s*)(?!\s*\[[\w-]+\]\s*$).+$"
)
# 台北市大安區忠孝東路四段 100 號 5 樓, 新北市板橋區文化路一段 1 號
_ADDRESS_TW = re.compile(
    r"[\u4e00-\u9fff]{1,3}[市縣][\u4e00-\u9fff]{1,4}[區鄉鎮市][\u4e00-\u9fff\d\s]{0,12}?[路街道]"
    r"[\u4e00-\u9fff\d\s]{0,10}?\d+\s*號(?:\s*\d+\s*樓)?(?:之\s*\d+)?"
)
_LINK = re.compile(
    r"(?i)\b(?:https?://)?(?:www\.)?(?:linkedin\.com|github\.com|gitlab\.com|behance\.net)/\S+"
)


@dataclass
class ContactSummary:
    """What contact details the resume had (never the details themselves)."""

    emails: int = 0
    phones: int = 0
    line_ids: int = 0
    addresses: int = 0
    links: int = 0
    lines: set[int] = field(default_factory=set)  # 0-based line numbers that held a masked detail

    @property
    def total(self) -> int:
        return self.emails + self.phones + self.line_ids + self.addresses

    def as_dict(self) -> dict[str, int]:
        return {
            "emails": self.emails,
            "phones": self.phones,
            "line_ids": self.line_ids,
            "addresses": self.addresses,
            "links": self.links,
        }


def _mask_line(line: str, found: ContactSummary) -> str:
    line, n = _EMAIL.subn(EMAIL_MASK, line)
    found.emails += n
    line, n = _LINE_ID.subn(lambda m: (m.group(1) or m.group(2)) + LINE_MASK, line)
    found.line_ids += n
    line, n = _ADDRESS_LABELLED.subn(lambda m: m.group(1) + ADDRESS_MASK, line)
    found.addresses += n
    line, n = _ADDRESS_TW.subn(ADDRESS_MASK, line)
    found.addresses += n
    line, n = _PHONE_LABELLED.subn(lambda m: m.group(1) + PHONE_MASK, line)
    found.phones += n
    line, n = _PHONE.subn(PHONE_MASK, line)
    found.phones += n
    return line


def mask_contact(text: str) -> tuple[str, ContactSummary]:
    """``text`` with every contact detail replaced by a tag, and what was found. The tracing mask
    (careerwise.tracing.masking) runs last, for what it knows beyond contact lines (national id
    numbers, birthdays), so a resume is never less masked than a trace."""
    found = ContactSummary()
    out: list[str] = []
    for i, line in enumerate(text.split("\n")):
        before = found.total
        masked = _mask_line(line, found)
        if found.total > before:
            found.lines.add(i)
        found.links += len(_LINK.findall(line))
        out.append(masked)
    return mask_text("\n".join(out)), found


def has_contact(text: str) -> bool:
    """Whether ``text`` still holds a contact detail (a test for what must never be stored or logged)."""
    return mask_contact(text)[1].total > 0
