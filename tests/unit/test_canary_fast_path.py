"""Issue #10: the canary guard passes a piece that cannot begin the canary without looking further; issue
#26: it finds the canary's copied forms (case, fullwidth, separators, the random part alone). However a
text is split into pieces, the stream gives exactly what one scan of the whole text gives."""

from __future__ import annotations

import random
from itertools import pairwise

from careerwise.llm.canary import REDACTED, CanaryPattern, _Scrubber

CANARY = "CW-0123456789abcdef"
PATTERN = CanaryPattern(CANARY)


def _streamed(text: str, cuts: list[int]) -> tuple[str, int]:
    scrubber = _Scrubber(PATTERN)
    bounds = [0, *sorted(cuts), len(text)]
    out = "".join(scrubber.push(text[a:b]) for a, b in pairwise(bounds))
    return out + scrubber.flush(), scrubber.found


def test_any_split_gives_what_one_scan_of_the_whole_text_gives() -> None:
    rng = random.Random(26)
    forms = [
        CANARY,
        CANARY.lower(),
        "ｃｗ－０１２３４５６７８９ａｂｃｄｅｆ",
        "0123456789abcdef",
        "C W-0123 4567\u200b89ab-cdef",
    ]
    alphabet = list("CW-0123面試abcC \u200bｃ")
    for _ in range(3000):
        parts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12))) for _ in range(3)]
        text = parts[0] + rng.choice([*forms, ""]) + parts[1] + rng.choice([*forms, ""]) + parts[2]
        whole, found = PATTERN.scrub(text)
        cuts = [rng.randint(0, len(text)) for _ in range(rng.randint(0, 6))]
        assert _streamed(text, cuts) == (whole, found), (text, cuts)
        assert "0123456789abcdef" not in whole.lower()


def test_a_piece_without_a_possible_first_character_passes_as_it_is() -> None:
    scrubber = _Scrubber(PATTERN)
    piece = "面試前先研究公司產品，準備三個具體案例。"
    assert scrubber.push(piece) is piece and scrubber.hold == ""
    for first in "cCｃＣ0０":
        assert PATTERN.may_start(f"面試{first}")


def test_separators_alone_cannot_hold_text_back_for_ever() -> None:
    scrubber = _Scrubber(PATTERN)
    out = scrubber.push("C" + " " * 500)
    assert out == "C" + " " * 500 and scrubber.hold == ""
    assert PATTERN.scrub("CW" + " " * 10 + "-0123456789abcdef")[0] == REDACTED
