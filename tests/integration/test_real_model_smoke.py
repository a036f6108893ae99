"""A smoke test of real behaviour on the embedded model (greedy decoding, short answers): the turn ends
with ``done``, nothing of the model's machinery shows, the text is Traditional Chinese, and a question
whose answer is plainly in one article leads to a search. Structure only: never wording, never time.
The answer evaluation itself (``careerwise eval answers``) is not part of the test run."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from careerwise.config import Settings
from careerwise.engine import TurnRequest
from careerwise.evals import answers as ev
from careerwise.events import DeltaEvent, DoneEvent, ReportEvent, ToolCallEvent
from careerwise.llm.local import ensure_model_file
from careerwise.services import Services
from tests.conftest import ready

pytestmark = [pytest.mark.local_model, pytest.mark.timeout(240)]

# (question, must it search?): the first is answered by one article and names its method
QUESTIONS = [
    ("Summer 的「探、錨、換」談薪水三步驟是什麼？", True),
    ("幫我寫一首關於貓的詩", False),
    ("How long should my self-introduction at an interview be?", False),
]


@pytest.fixture
def embedded(make_services: Callable[..., Services]) -> Services:
    return make_services(
        llm_base_url=None,
        local_model_path=ensure_model_file(Settings(_env_file=None).data_dir / "models"),  # type: ignore[call-arg]
        phase1_temperature=0.0,
        phase3_temperature=0.0,
        phase1_max_tokens=96,
        phase3_max_tokens=96,
        turn_deadline=200.0,
        zh_variant_conversion=True,  # the tests turn it off by default (tests/conftest.py)
    )


async def test_real_answers_are_complete_clean_traditional_and_search_when_plainly_covered(
    embedded: Services,
) -> None:
    await ready(embedded)
    detect = ev.simplified_detector()
    for question, must_search in QUESTIONS:
        events: list[Any] = [
            e async for e in embedded.engine.run(TurnRequest(message=question, channel="cli"))
        ]
        done = events[-1]
        assert isinstance(done, DoneEvent) and done.status == "ok", (question, events[-3:])
        shown = "".join(e.text for e in events if isinstance(e, DeltaEvent)) + "".join(
            s.body for e in events if isinstance(e, ReportEvent) for s in e.sections
        )
        assert shown.strip(), question
        assert ev.find_leaks(shown) == [], (question, shown)
        assert detect(shown) == [], (question, shown)
        if must_search:
            assert any(isinstance(e, ToolCallEvent) for e in events), (question, shown)
