"""What a flow needs to know about the provider it runs on, to size its work to it.

The seeds' design is for a fast hosted model. A 1.5B model on two CPU cores reads a prompt at about a
hundred tokens a second and writes about eight: every passage put in front of it costs seconds, and
every extra generation costs tens of seconds. A provider declares a :class:`ProviderProfile`; flows read
it through :func:`profile_of` (which looks through the wrappers every provider is built with).

- ``tool_calling``: ``native`` (the server returns tool calls as tool calls), ``text`` (the model writes
  them as text; ``llm/clean.py`` recognises them) or ``constrained`` (the provider constrains the first
  output to a well-formed call or plain text: the embedded model). This is the profile's tool-calling
  reliability: only ``native`` and ``constrained`` calls are well-formed by construction.
- ``passage_budget_tokens``: how many tokens of retrieved passages phase 3 gets; ``None`` means whole
  passages. The tool keeps the sentences most related to the question within it.
- ``slow``: generation in single-digit tokens a second. A medium-tier question is then answered by the
  streamed tool-use flow instead of the prompt chain (decision 0014), so text shows in seconds.
- ``answer_quotes``: a grounded answer starts with the passages' sentences that best answer the
  question, verbatim (``knowledge/quotes.py``, decision 0023); on for a slow provider by default.
- ``prompt_tokens_per_s`` / ``gen_tokens_per_s``: how fast the provider reads a prompt and writes
  tokens; ``None`` while unknown. Declared in the settings or measured from the provider's own calls
  (``llm/local/``, ``llm/openai_provider.py``).
- ``concurrency``: how many requests the provider serves at once without slowing each other down or
  cutting each other off. 1 for the embedded model and a llama.cpp server.
- ``context_tokens``: the context window, when known.
- ``source``: where the speeds come from: ``declared`` (settings), ``measured`` (the provider's calls)
  or ``default`` (nothing known yet).
- ``stream_cuts``: streams the server cut off when another request started; the first one sets
  ``concurrency`` to 1 (``llm/openai_provider.py``).
- ``route_labels``: the routing labels this provider's layer-3 verdicts are taken for; a verdict outside
  them routes career, the default when unsure (``routing/cascade.py``). ``None``: every label. Declared
  from the measured precision of the provider's verdicts on messages layer 2 is unsure of
  (docs/routing.md, "Layer 3").

Two rules read the profile (decision 0014, issue #24):

- :attr:`ProviderProfile.design`: the seeds' **full** deep design (chain with reflection, three
  parallel agents and a merge) when the provider writes at least :data:`FULL_DESIGN_MIN_GEN_TPS` tokens a
  second and serves at least :data:`FULL_DESIGN_MIN_CONCURRENCY` requests at once; the **compact** design
  otherwise. A provider whose speed is unknown and that is not declared slow counts as fast.
- :meth:`ProviderProfile.step_deadline`: the seconds one step may take, from the speeds and the step's
  planned prompt and output sizes, capped by the turn's ceiling.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Literal

ToolCalling = Literal["native", "text", "constrained"]
ProfileSource = Literal["declared", "measured", "default"]
Design = Literal["full", "compact"]

# The design rule's thresholds (the only place they live). At 40 tokens a second a 300-token agent
# output takes under 8 s, so the chain's three generations and the agents' merge fit a remote turn; with
# three requests served at once the three agents run side by side.
FULL_DESIGN_MIN_GEN_TPS = 40.0
FULL_DESIGN_MIN_CONCURRENCY = 3

# The step-deadline rule: planned work (prompt reading + generation) times this factor, plus the floor.
# The factor covers a slower-than-measured call (a longer prompt, a busy CPU, a cold cache); the floor
# covers the fixed cost of a request (connection, first token, JSON parsing).
STEP_DEADLINE_SAFETY = 2.0
STEP_DEADLINE_FLOOR_S = 10.0


@dataclass(frozen=True)
class ProviderProfile:
    tool_calling: ToolCalling = "native"
    passage_budget_tokens: int | None = None
    slow: bool = False
    answer_quotes: bool = False
    # the phase-1 prompt names the articles the message matches (flows/tool_use.py, prompts.coverage_note)
    coverage_hint: bool = False
    prompt_tokens_per_s: float | None = None
    gen_tokens_per_s: float | None = None
    concurrency: int = FULL_DESIGN_MIN_CONCURRENCY
    context_tokens: int | None = None
    source: ProfileSource = "default"
    stream_cuts: int = 0
    route_labels: tuple[str, ...] | None = None

    @property
    def speed_known(self) -> bool:
        return self.gen_tokens_per_s is not None and self.gen_tokens_per_s > 0

    @property
    def writes_slowly(self) -> bool:
        """Whether a multi-step answer would keep the user waiting: generation measured or declared
        under :data:`FULL_DESIGN_MIN_GEN_TPS` tokens/s; with no speed known, the ``slow`` flag. The
        rule :attr:`design` uses for the speed, so a medium question is streamed (decision 0014)
        exactly when a complex one would get the compact design for its speed."""
        if self.gen_tokens_per_s is None:
            return self.slow
        return self.gen_tokens_per_s < FULL_DESIGN_MIN_GEN_TPS

    @property
    def design(self) -> Design:
        """``full`` when generation ≥ :data:`FULL_DESIGN_MIN_GEN_TPS` tokens/s and concurrency ≥
        :data:`FULL_DESIGN_MIN_CONCURRENCY`; ``compact`` otherwise. Unknown speed: fast unless ``slow``."""
        if self.concurrency < FULL_DESIGN_MIN_CONCURRENCY:
            return "compact"
        return "compact" if self.writes_slowly else "full"

    def step_deadline(self, prompt_tokens: int, output_tokens: int, *, ceiling: float) -> float:
        """Seconds a step reading ``prompt_tokens`` and writing up to ``output_tokens`` may take:
        (reading + writing at the profile's speeds) × :data:`STEP_DEADLINE_SAFETY` +
        :data:`STEP_DEADLINE_FLOOR_S`, never more than ``ceiling``. An unknown speed gives ``ceiling``
        (the fixed step timeout the caller passes), so a provider without figures keeps the old deadlines.
        An unknown prompt speed counts reading as free: generation dominates every step we plan."""
        if not self.speed_known:
            return ceiling
        assert self.gen_tokens_per_s is not None
        work = max(0, output_tokens) / self.gen_tokens_per_s
        if self.prompt_tokens_per_s:
            work += max(0, prompt_tokens) / self.prompt_tokens_per_s
        return min(ceiling, work * STEP_DEADLINE_SAFETY + STEP_DEADLINE_FLOOR_S)

    def as_dict(self) -> dict[str, object]:
        """The profile as shown on ``/readyz`` and in the dashboard, with the design it picks."""
        out: dict[str, object] = dataclasses.asdict(self)
        out["design"] = self.design
        return out


# A call's timing gives a speed only when it spans enough tokens and time: a network read that delivers a
# whole answer at once (a fake, a cache) says nothing about how fast the provider writes.
MEASURE_MIN_TOKENS = 16
MEASURE_MIN_SECONDS = 0.25
# each new measurement's weight in the running figure (an exponential average: recent calls count most)
MEASURE_WEIGHT = 0.3


def _blend(old: float | None, new: float) -> float:
    return new if old is None else old * (1 - MEASURE_WEIGHT) + new * MEASURE_WEIGHT


def measured(
    profile: ProviderProfile,
    *,
    prompt_tokens: int = 0,
    prompt_seconds: float = 0.0,
    gen_tokens: int = 0,
    gen_seconds: float = 0.0,
) -> ProviderProfile:
    """``profile`` with one call's reading and writing speeds folded in; a part of the call too short to
    measure (:data:`MEASURE_MIN_TOKENS`, :data:`MEASURE_MIN_SECONDS`) leaves its figure as it was.
    Declared figures are never overwritten: a provider with declared speeds does not call this."""
    prompt_tps, gen_tps = profile.prompt_tokens_per_s, profile.gen_tokens_per_s
    if prompt_tokens >= MEASURE_MIN_TOKENS and prompt_seconds >= MEASURE_MIN_SECONDS:
        prompt_tps = _blend(prompt_tps, prompt_tokens / prompt_seconds)
    if gen_tokens >= MEASURE_MIN_TOKENS and gen_seconds >= MEASURE_MIN_SECONDS:
        gen_tps = _blend(gen_tps, gen_tokens / gen_seconds)
    if (prompt_tps, gen_tps) == (profile.prompt_tokens_per_s, profile.gen_tokens_per_s):
        return profile
    return dataclasses.replace(
        profile,
        prompt_tokens_per_s=None if prompt_tps is None else round(prompt_tps, 1),
        gen_tokens_per_s=None if gen_tps is None else round(gen_tps, 2),
        source="measured",
    )


DEFAULT_PROFILE = ProviderProfile()
# tokens of passages a slow provider reads: a few seconds of prompt reading on two cores
SLOW_PASSAGE_BUDGET = 320


def profile_of(provider: object) -> ProviderProfile:
    """The profile of the provider inside ``provider``'s wrappers (each keeps it as ``inner`` or
    ``primary``); the default profile (a fast provider with native tool calls) if none declares one."""
    for _ in range(10):
        profile = getattr(provider, "profile", None)
        if isinstance(profile, ProviderProfile):
            return profile
        inner = getattr(provider, "inner", None) or getattr(provider, "primary", None)
        if inner is None:
            break
        provider = inner
    return DEFAULT_PROFILE
