"""Text helpers shared by the rules and the tier: one normal form, and a length that means the same in
Chinese and English."""

from __future__ import annotations

import re
import unicodedata

HAN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
WORD = re.compile(r"[A-Za-z0-9]+(?:['’][A-Za-z]+)?")

# Openers that carry no question: a greeting or thanks in front of a question does not make it longer.
_OPENER = re.compile(
    r"^(?:(?:hi|hello|hey|yo|good (?:morning|afternoon|evening)|嗨+|哈囉|你好|您好|妳好|安安|早安|午安|欸+|誒|"
    r"那個|thanks|thank you|thx|謝謝|感謝|"
    r"summer|btw|ok|okay|好的|請問一下|請問|想問一下|想問|我想問一下|我想問|問一下|quick question)"
    r"(?![A-Za-z])[\s,.!~:;，。！～、：；]*)+",
    re.I,
)


def normalise(text: str) -> str:
    """NFKC (full-width letters and punctuation become ASCII: ｈｉ！ → hi!), trimmed, inner whitespace
    collapsed. Case is kept; the patterns are case-insensitive."""
    return re.sub(r"[ \t\u3000]+", " ", unicodedata.normalize("NFKC", text)).strip()


def strip_opener(text: str) -> str:
    """The message without a leading greeting, thanks or 請問-style filler."""
    return _OPENER.sub("", text, count=1).strip()


def units(text: str) -> int:
    """Length in units: one per Han character, one per Latin word or number. A Han character carries
    about as much as an English word («面試要怎麼準備» 7, "how do I prepare for interviews" 6), so one
    threshold serves both languages. Punctuation, spaces, emoji and bopomofo count nothing."""
    return len(HAN.findall(text)) + len(WORD.findall(text))
