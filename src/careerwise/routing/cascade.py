"""The three-layer cascade: rules (free) → layer 2 (cheap: a lexical stage, then embedding similarity)
→ LLM classifier (rare).

Each message stops at the first layer that is sure; a career message then gets its tier. The decision
records which layer decided and why (rule id; or scores, margin and threshold; or the LLM's answer or
its failure), so every turn's trace can explain its route.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from careerwise.knowledge.embeddings import Embedder, Matrix
from careerwise.llm.profile import profile_of
from careerwise.llm.types import LLMProvider
from careerwise.routing import followup
from careerwise.routing._text import normalise, strip_opener, units
from careerwise.routing._vectors import PersistentQueryCache
from careerwise.routing.lexical import NAME as LEXICAL
from careerwise.routing.lexical import LexicalClassifier, lexical_classifier
from careerwise.routing.llm_classifier import Failure, LLMIntentClassifier
from careerwise.routing.router import RouteDecision
from careerwise.routing.rules import ASKS_UNITS, Rule, match_rules, vetoed
from careerwise.routing.semantic import IntentScores, SemanticClassifier
from careerwise.routing.thresholds import NEVER, Thresholds, load_thresholds, thresholds_path
from careerwise.routing.tier import classify_tier

log = logging.getLogger(__name__)

# Intents a follow-up never inherits: small talk, and an off-topic request (what follows a declined
# request is routed on its own; «那明天呢？» after a weather question must not stay off-topic by history).
_NO_CONTEXT = frozenset({"greeting", "offtopic"})

# Example vectors per (model, examples) for the life of the process: routers are cheap to build.
_PREPARED: dict[tuple[str, str], SemanticClassifier] = {}


def _r(x: float) -> float:
    return round(float(x), 4)


def _asked(message: str) -> str:
    """What layer 2 scores: the message without a leading greeting, thanks or 請問-style opener when
    what follows is long enough to ask something (at least ``ASKS_UNITS`` units); else the whole
    message («thanks Summer 你人真好» stays small talk)."""
    core = strip_opener(normalise(message))
    return core if units(core) >= ASKS_UNITS and core != normalise(message) else message


class CascadeRouter:
    """``await route(message)`` → ``RouteDecision``.

    ``provider=None`` or ``no_llm=True``: messages that would reach the LLM get the best embedding
    intent instead, with layer ``"embedding-guess"``. ``thresholds=None`` loads the packaged
    ``thresholds.json``; thresholds fitted for another model or other examples are not trusted (the
    embedding layer then never decides alone, it only guesses). ``cache_dir`` keeps the example vectors
    on disk between runs (user messages are never written there).

    ``lexical``: layer 2's first stage (``lexical.py``): ``True`` with its packaged
    ``thresholds-lexical.json``, a ``Thresholds`` to use those, ``False`` for the embedding stage alone.
    It decides only what it is sure of, so the embedding model is not run for those messages; like the
    embedding stage it never decides with thresholds fitted for other examples.
    """

    def __init__(
        self,
        embedder: Embedder,
        provider: LLMProvider | None,
        thresholds: Thresholds | None = None,
        *,
        examples: Mapping[str, Sequence[str]] | None = None,
        no_llm: bool = False,
        llm_timeout: float = 20.0,
        cache_dir: Path | None = None,
        lexical: bool | Thresholds = True,
    ) -> None:
        self.thresholds = thresholds or load_thresholds(model=embedder.name)
        self.semantic = SemanticClassifier(embedder, examples, k=self.thresholds.k)
        prepared = _PREPARED.get((embedder.name, self.semantic.digest))
        if prepared is not None:
            # reuse the example vectors already computed in this process, but keep OUR embedder for
            # messages: a router must never embed with another router's model instance
            self.semantic.adopt(prepared)
        self.cache_dir = cache_dir
        self.llm = LLMIntentClassifier(provider, timeout=llm_timeout) if provider is not None else None
        self.no_llm = no_llm or provider is None
        self.trusted = (
            self.thresholds.model == embedder.name and self.thresholds.examples_digest == self.semantic.digest
        )
        if not self.trusted:
            log.warning(
                "routing: thresholds.json was fitted for %s/%s, not %s/%s; the embedding layer will not "
                "decide alone until `careerwise route --fit` is run",
                self.thresholds.model,
                self.thresholds.examples_digest,
                embedder.name,
                self.semantic.digest,
            )
        self.lexical: LexicalClassifier | None = None
        self.lexical_thresholds: Thresholds | None = None
        if lexical is not False:
            self._set_up_lexical(examples, None if lexical is True else lexical)
        self.counts: Counter[str] = Counter()  # decisions per layer, and fallbacks per code

    def _set_up_lexical(self, examples: Mapping[str, Sequence[str]] | None, bars: Thresholds | None) -> None:
        """The first stage, when thresholds fitted for these very examples exist (else it stays off)."""
        if bars is None:
            path = thresholds_path(LEXICAL)
            if not path.exists():
                log.warning("routing: no %s; layer 2 runs the embedding stage only", path.name)
                return
            bars = load_thresholds(path)
        classifier = lexical_classifier(examples, k=bars.k)
        if bars.model != LEXICAL or bars.examples_digest != classifier.digest:
            log.warning(
                "routing: the lexical thresholds were fitted for %s/%s, not %s/%s; the lexical stage stays "
                "off until `careerwise route --fit` is run",
                bars.model,
                bars.examples_digest,
                LEXICAL,
                classifier.digest,
            )
            return
        self.lexical, self.lexical_thresholds = classifier, bars

    # -- preparation ---------------------------------------------------------------------------

    def _prepare_blocking(self) -> None:
        if self.semantic.ready:
            return
        if self.cache_dir is not None:
            cached = PersistentQueryCache(self.semantic.embedder, self.cache_dir)
            self.semantic.prepare(cached)
            cached.save()
        else:
            self.semantic.prepare()
        _PREPARED.setdefault((self.semantic.embedder.name, self.semantic.digest), self.semantic)

    async def prepare(self) -> None:
        """Embed the example utterances now (off the event loop) instead of on the first message."""
        if self.semantic.ready:
            # every message comes through here: no thread hop once prepared (in a burst the hop would
            # wait for a worker thread behind the other messages' embeddings)
            return
        await asyncio.to_thread(self._prepare_blocking)

    # -- routing -------------------------------------------------------------------------------

    async def route(self, message: str) -> RouteDecision:
        return (await self.route_many([message]))[0]

    async def route_many(
        self, messages: Sequence[str], *, vectors: Matrix | None = None
    ) -> list[RouteDecision]:
        """Route a batch: the rules per message, one batched embedding call for the rest, then the LLM
        (one message at a time) for what is still undecided. ``vectors`` (raw message vectors, one per
        message) skip the embedding call, for evaluations that embed once."""
        started = time.perf_counter()
        out: list[RouteDecision | None] = [None] * len(messages)
        pending: list[int] = []
        for i, message in enumerate(messages):
            rule = match_rules(message)
            if rule is not None:
                out[i] = self._by_rule(message, rule)
            else:
                pending.append(i)
        # Layer 2 scores what the message asks: a greeting, thanks or 請問 in front of a question is
        # dropped first, so 「嗨 Summer～想問一下面試要穿什麼」 is scored as the question (the greeting's
        # words would otherwise pull it towards small talk). A message that is nothing but an opener
        # keeps its words (the greeting rules decide most of those).
        asked = {i: _asked(messages[i]) for i in pending}
        first: dict[int, IntentScores] = {}
        if pending and self.lexical is not None:
            # on the event loop: scoring costs less than a hop to a worker thread (docs/routing.md, "Latency")
            found = self.lexical.score([asked[i] for i in pending])
            first = dict(zip(pending, found, strict=True))
            for i, s in first.items():
                if self._lexical_sure(s) and not vetoed(s.best[0], messages[i]):
                    out[i] = self._by_lexical(messages[i], s)
            pending = [i for i in pending if out[i] is None]
        if pending:
            await self.prepare()
            scores_of: dict[int, IntentScores] = {}
            # given vectors are the whole message's: a message that lost its opener is embedded anew
            given = [i for i in pending if vectors is not None and asked[i] == messages[i]]
            fresh = [i for i in pending if i not in set(given)]
            if given:
                assert vectors is not None
                found = await asyncio.to_thread(
                    self.semantic.score_vectors, [messages[i] for i in given], vectors[given]
                )
                scores_of.update(zip(given, found, strict=True))
            if fresh:
                found = await asyncio.to_thread(self.semantic.score, [asked[i] for i in fresh])
                scores_of.update(zip(fresh, found, strict=True))
            for i in pending:
                out[i] = await self._after_rules(messages[i], scores_of[i], first.get(i))
        return self._count([d for d in out if d is not None], started)

    def _count(self, decisions: list[RouteDecision], started: float) -> list[RouteDecision]:
        """Stamp the time (for a batch: the batch's time divided by its size) and count the layers."""
        elapsed = round(1000 * (time.perf_counter() - started) / max(1, len(decisions)), 2)
        decisions = [replace(d, duration_ms=elapsed) for d in decisions]
        for d in decisions:
            self.counts[d.layer] += 1
            if d.fallback:
                self.counts[d.fallback] += 1
        return decisions

    # -- the history rule (followup.py) ----------------------------------------------------------

    async def route_in_context(self, message: str, previous: Sequence[str]) -> RouteDecision:
        """Route ``message`` knowing the conversation's earlier user turns (oldest first). A short
        follow-up that the layers cannot place on its own («那薪水呢？», "what about in Taipei?",
        «第二個») keeps the intent of the turn it follows, with layer ``history``; everything else is
        routed exactly as ``route`` would (so no extra cost for a message that says what it wants)."""
        if not previous or match_rules(message) is not None or not followup.candidate(message):
            return await self.route(message)
        # A short follow-up skips layer 2's lexical stage: its few words overlap the examples by chance
        # («what about in Taipei?» shares "what about" with career examples), and the rule below was
        # calibrated on the embedding stage, which places such a message by meaning or not at all.
        started = time.perf_counter()
        await self.prepare()
        s = (await asyncio.to_thread(self.semantic.score, [message]))[0]
        cue = followup.marker(message)
        if self._confident(s) and (
            cue is None or (s.best[0] not in _NO_CONTEXT and s.margin >= followup.CUE_MARGIN)
        ):
            # the message says what it wants, as route() would place it. A follow-up cue is evidence of
            # a continuation: small talk or off-topic with one («那天氣呢？», "what about in Taipei?")
            # follows the conversation, and another intent must lead its runner-up clearly («那要多久？»
            # after a career question is not a question about the sessions)
            return self._count([await self._after_rules(message, s)], started)[0]
        earlier = await self._earlier_intent(previous[-followup.TURNS :])
        if earlier is None:
            return self._count([await self._after_rules(message, s)], started)[0]
        intent, turn = earlier
        layer2, summary = self._layer2(s)
        why = f"follow-up marker «{cue}»" if cue else "short, and the embedding layer is unsure"
        decision = self._finish(
            message,
            intent=intent,
            layer="history",
            reasons=[
                *summary,
                f"history: a short follow-up ({why}) keeps the {intent} intent of «{turn[:40]}»",
            ],
            **layer2,
        )
        return self._count([decision], started)[0]

    async def _earlier_intent(self, previous: Sequence[str]) -> tuple[str, str] | None:
        """The intent of the most recent earlier user turn that has one, and that turn: a rule, else a
        confident embedding; small talk («謝謝») and short unsure turns (follow-ups themselves) are
        skipped; a longer unsure turn counts as career (the default when unsure). No LLM here: the
        vectors are usually still in the embedder's query cache from those turns' own routing."""
        texts = [t for t in previous if t.strip()]
        needs_scores = [t for t in texts if match_rules(t) is None]
        scored: dict[str, IntentScores] = {}
        if needs_scores:
            found = await asyncio.to_thread(self.semantic.score, needs_scores)
            scored = dict(zip(needs_scores, found, strict=True))
        for text in reversed(texts):
            rule = match_rules(text)
            if rule is not None:
                if rule.intent not in _NO_CONTEXT:
                    return rule.intent, text
                continue
            s = scored[text]
            cue = followup.marker(text) if followup.candidate(text) else None
            # sure as that turn's own routing was: its best intent must clear the vetoes too (a greeting
            # that asks about interviews is not a booking because its words sit near booking examples)
            sure = self._confident(s) and vetoed(s.best[0], text) is None
            # an earlier follow-up placed by the conversation, not by itself, is skipped like an unsure one
            if sure and (cue is None or s.margin >= followup.CUE_MARGIN):
                if s.best[0] not in _NO_CONTEXT:
                    return s.best[0], text
                continue
            if not followup.candidate(text):
                return "career", text
        return None

    def _by_rule(self, message: str, rule: Rule) -> RouteDecision:
        return self._finish(
            message,
            intent=rule.intent,
            layer="rules",
            reasons=[f"rule {rule.id} matched: {rule.description}"],
            rule_id=rule.id,
        )

    def _stage(self, stage: str, s: IntentScores, bars: Thresholds, accepted: bool) -> dict[str, object]:
        """One stage's part of the routing record."""
        (best, best_score), (second, second_score) = s.best, s.runner_up
        return {
            "stage": stage,
            "model": bars.model,
            "scores": {name: _r(v) for name, v in s.scores.items()},
            "top": [(best, _r(best_score)), (second, _r(second_score))],
            "margin": _r(s.margin),
            "threshold": bars.thresholds.get(best, NEVER),
            "required_margin": bars.margin,
            "accepted": accepted,
        }

    @staticmethod
    def _summary(stage: Mapping[str, Any]) -> str:
        (best, best_score), (second, second_score) = stage["top"]
        verdict = "sure" if stage["accepted"] else "not sure"
        return (
            f"{stage['stage']}: {best} {best_score:.3f} (threshold {stage['threshold']:.3f}), "
            f"{second} {second_score:.3f}, margin {stage['margin']:.3f} "
            f"(required {stage['required_margin']:.3f}): {verdict}"
        )

    def _layer2(
        self, s: IntentScores, lexical: IntentScores | None = None
    ) -> tuple[dict[str, object], list[str]]:
        """The layer-2 fields of the routing record (the embedding stage's at the top level, every stage
        that ran under ``stages``), and one summary line per stage."""
        stages = []
        if lexical is not None and self.lexical_thresholds is not None:
            stages.append(self._stage("lexical", lexical, self.lexical_thresholds, False))
        stages.append(self._stage("embedding", s, self.thresholds, self._confident(s)))
        last = stages[-1]
        layer2: dict[str, object] = {
            key: last[key] for key in ("scores", "top", "margin", "threshold", "required_margin")
        }
        layer2["stages"] = stages
        return layer2, [self._summary(stage) for stage in stages]

    def _lexical_sure(self, s: IntentScores) -> bool:
        return self.lexical_thresholds is not None and self.lexical_thresholds.accepts(s)

    def _by_lexical(self, message: str, s: IntentScores) -> RouteDecision:
        assert self.lexical_thresholds is not None
        stage = self._stage("lexical", s, self.lexical_thresholds, True)
        fields = {key: stage[key] for key in ("scores", "top", "margin", "threshold", "required_margin")}
        return self._finish(
            message,
            intent=s.best[0],
            layer="lexical",
            reasons=[f"{self._summary(stage)}; the embedding stage was not needed"],
            stages=[stage],
            **fields,
        )

    def _confident(self, s: IntentScores) -> bool:
        return self.trusted and self.thresholds.accepts(s)

    def _guess(self, best: str, best_score: float, threshold: float) -> tuple[str, str]:
        """The no-LLM guess and why: the best intent if it cleared its own threshold (only the margin
        failed) or its lower *guess* bar (``thresholds.fit_guess``: above it the best intent is right at
        least half the time on the unsure calibration points), else career, the default when unsure.
        The guess bars exist because "unsure means career" is wrong for whole kinds of message (small
        talk, casual resume requests, questions about the sessions); docs/routing.md has the figures."""
        if not self.trusted:
            return "career", "untrusted thresholds: the default"
        if best_score >= threshold:
            return best, "its threshold was cleared, only the margin failed"
        bar = self.thresholds.guess.get(best, NEVER)
        if best != "career" and best_score >= bar:
            return best, f"{best_score:.3f} clears its guess bar {bar:.3f}"
        return "career", "the default when unsure"

    async def _after_rules(
        self, message: str, s: IntentScores, lexical: IntentScores | None = None
    ) -> RouteDecision:
        """The embedding stage's verdict (``lexical``: the first stage's scores, which were not sure),
        then the LLM or the no-LLM guess."""
        (best, best_score), _ = s.best, s.runner_up
        threshold = self.thresholds.thresholds.get(best, NEVER)
        layer2, summary = self._layer2(s, lexical)
        veto = vetoed(best, message)
        if self._confident(s) and veto is None:
            return self._finish(message, intent=best, layer="embedding", reasons=summary, **layer2)
        why = (
            f"«{veto}» says the {best} words are about something else"
            if veto is not None
            else "thresholds were fitted for another model or examples"
            if not self.trusted
            else f"{best} below its threshold"
            if best_score < threshold
            else "margin too small"
        )
        if self.no_llm or self.llm is None:
            guess, how = (
                ("career", "the default when unsure") if veto else self._guess(best, best_score, threshold)
            )
            return self._finish(
                message,
                intent=guess,
                layer="embedding-guess",
                reasons=[*summary, f"not sure ({why}); no-LLM mode: guessed {guess} ({how})"],
                **layer2,
            )
        result = await self.llm.classify(message)
        if isinstance(result, Failure):
            return self._finish(
                message,
                intent="career",
                layer="llm-fallback",
                reasons=[
                    *summary,
                    f"not sure ({why}): asked the LLM",
                    f"LLM failed ({result.code}: {result.detail}); fell back to career",
                ],
                fallback=result.code,
                **layer2,
            )
        # The vetoes bind the LLM too: its booking answer on a message about a job interview, someone
        # else's appointment or a membership, its resume answer on other people's resumes or a general
        # question about a document's length, or its off-topic answer on a message with a word of work,
        # is career (the default when unsure), as layer 2 is not sure there either (a small model reads
        # "book" and "cancel" as booking; its greeting on a greeting followed by a question of work)
        llm_veto = vetoed(result.intent, message)
        intent = "career" if llm_veto is not None else result.intent
        overruled = (
            [f"«{llm_veto}» says the {result.intent} words are about something else: career"]
            if llm_veto is not None
            else []
        )
        # a label this provider's verdicts are wrong about more often than right, where layer 2 is unsure,
        # is not taken: career, the default when unsure (the provider profile's route_labels)
        trusted = profile_of(self.llm.provider).route_labels
        if trusted is not None and intent not in trusted:
            overruled.append(f"this model's {intent} verdicts are not taken (route_labels): career")
            intent = "career"
        return self._finish(
            message,
            intent=intent,
            layer="llm",
            reasons=[
                *summary,
                f"not sure ({why}): asked the LLM",
                f"LLM: {result.intent} ("
                + (f"confidence {result.confidence:.2f}, " if result.confidence is not None else "a label, ")
                + f"{result.duration_ms:.0f} ms)",
                *overruled,
            ],
            llm_intent=result.intent,
            llm_confidence=result.confidence,
            **layer2,
        )

    def _finish(
        self, message: str, *, intent: str, layer: str, reasons: list[str], **fields: object
    ) -> RouteDecision:
        tier = None
        tier_reasons: list[str] = []
        if intent == "career":
            t = classify_tier(message)
            tier, tier_reasons = t.tier, t.reasons
        return RouteDecision(
            intent=intent,
            tier=tier,
            layer=layer,
            reasons=[*reasons, *tier_reasons],
            tier_reasons=tier_reasons,
            **fields,  # type: ignore[arg-type]
        )
