"""Write src/careerwise/routing/examples-sets.json: layer 2's examples taken from the blind sets whose
one blind run is over (docs/routing.md, "Examples from the finished blind sets"; decision 0028).

A set joins ``FINISHED`` only after its first run has been reported; the current blind set never does
(a unit test checks). Taken: every message that no rule decides (layer 2 never sees the others), that
is not already a hand-written example, and that no other labelled file holds (``eval/routing/
messages.jsonl``, whose held-out split must stay unseen, the current blind set, the older sets): sets
written independently repeat short messages («週末愉快！»). Sets written before the off-topic intent
(decision 0017) labelled off-topic requests as career and are left out. At most ``PER_INTENT`` of an
intent, chosen by a hash of the text: the sets hold ten times more career messages than any other kind,
and an intent's score (the mean of its 3 nearest examples) leans towards the intent with the most.

    python scripts/gather_routing_examples.py      # then: careerwise route --fit
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from careerwise.routing.evaluation import load_messages
from careerwise.routing.rules import match_rules
from careerwise.routing.semantic import EXAMPLES_FILE, INTENTS, SET_EXAMPLES_FILE, load_examples

ROOT = Path(__file__).resolve().parents[1]
FINISHED = (
    "blind-2026-12-02",
    "blind-2026-12-02b",
    "blind-2026-12-02c",
    "blind-2026-12-03",
    "blind-2026-12-03b",
    "blind-2026-12-03c",
    "blind-2026-12-03d",
    "blind-2026-12-03e",
    "blind-2026-12-04",
    "blind-2026-12-05",
)
PER_INTENT = 400


def _order(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def main() -> None:
    folder = ROOT / "eval" / "routing"
    others = [
        p for p in sorted(folder.iterdir()) if p.name not in FINISHED and (p.is_dir() or p.suffix == ".jsonl")
    ]
    labelled = {m.message for m in load_messages(others)}
    taken = {t for texts in load_examples(EXAMPLES_FILE).values() for t in texts}
    out: dict[str, list[str]] = {name: [] for name in INTENTS}
    for name in FINISHED:
        for m in load_messages([folder / name]):
            if m.message in labelled or m.message in taken or match_rules(m.message) is not None:
                continue
            taken.add(m.message)
            out[m.intent].append(m.message)
    for name, texts in out.items():
        out[name] = sorted(sorted(texts, key=_order)[:PER_INTENT], key=texts.index)
    data = {
        "about": "Layer-2 examples from the blind sets whose one blind run is over, as labelled there: "
        + ", ".join(FINISHED)
        + ". Written by scripts/gather_routing_examples.py; do not edit by hand. The hand-written examples "
        "are in examples.json.",
        "sets": list(FINISHED),
        "intents": out,
    }
    SET_EXAMPLES_FILE.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {SET_EXAMPLES_FILE}: " + ", ".join(f"{k} {len(v)}" for k, v in out.items()))


if __name__ == "__main__":
    main()
