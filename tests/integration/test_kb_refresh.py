"""A knowledge-base change made by one process is searched by another from its next turn on: each
search compares the stored version with the loaded index's and reloads when they differ."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from careerwise.knowledge.ingest import ingest_paths
from careerwise.services import Services
from tests.conftest import ready

NEW_DOC = """# 遠距工作面談的燈光與收音

視訊面試前一天，先在同一個房間、同一個時段試錄一分鐘。臉部正前方要有柔和的光源，背後不要是窗戶。
收音比畫質重要：有線耳機麥克風通常比筆電內建麥克風清楚，面試官聽得清楚，才會記得你說了什麼。
"""


async def test_an_ingest_in_another_process_is_searched_on_the_next_turn(
    make_services: Callable[..., Services], tmp_path: Path
) -> None:
    serving = await ready(make_services())
    # "another process": its own services (engine, pool, index) on the same database file
    other = make_services()
    before = await serving.kb.search("視訊面試 燈光 收音 耳機麥克風", top_k=3, candidates=12)
    assert all("燈光" not in h.chunk.title for h in before.hits)
    version_before = serving.kb.status().version

    doc = tmp_path / "remote-interview-lighting.md"
    doc.write_text(NEW_DOC, encoding="utf-8")
    report = await ingest_paths(other.db, other.kb.embedder, [doc])
    assert report.chunks_written >= 1

    after = await serving.kb.search("視訊面試 燈光 收音 耳機麥克風", top_k=3, candidates=12)
    assert after.hits[0].chunk.title == "遠距工作面談的燈光與收音"
    assert serving.kb.status().version != version_before
    # an unchanged version does not reload
    assert await serving.kb.refresh_if_stale() is False
