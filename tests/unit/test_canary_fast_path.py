"""Issue #10: the canary guard's per-chunk check skips its tail search when the canary's first character
is not near the end of the text; it must find exactly the tails the full search finds."""

from __future__ import annotations

import random

from careerwise.llm.canary import _held

CANARY = "CW-0123456789abcdef"


def _reference(text: str, canary: str) -> int:
    for k in range(min(len(text), len(canary) - 1), 0, -1):
        if text.endswith(canary[:k]):
            return k
    return 0


def test_the_quick_check_finds_the_same_tails_as_the_full_search() -> None:
    rng = random.Random(10)
    alphabet = "CW-0123面試abcC"
    texts = ["", "C", "CW", "CW-", "CW-0123456789abcde", "面試 CW-01", "C 面試", "CW-0123456789abcdef"]
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30))) for _ in range(3000)]
    texts += [t + CANARY[:k] for t in texts[:50] for k in range(len(CANARY))]
    for text in texts:
        assert _held(text, CANARY) == _reference(text, CANARY), text
