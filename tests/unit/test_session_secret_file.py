"""The generated session secret when several worker processes start on a new data folder at once
(`serve --workers N`): each must end with the same secret, and none may fail its start-up."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from careerwise.config import Settings
from careerwise.services import session_secret


def _settings(data_dir: Path) -> Settings:
    return Settings(_env_file=None, data_dir=data_dir)  # type: ignore[call-arg]


def test_a_secret_another_process_wrote_meanwhile_is_the_one_returned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Between this process's check and its write, another worker wrote the secret: this one takes it
    (it failed its start-up with FileExistsError before)."""
    (tmp_path / "session_secret").write_text("the other worker's secret\n")
    monkeypatch.setattr(Path, "exists", lambda self: False)  # the check ran just before the other's write
    assert session_secret(_settings(tmp_path)) == "the other worker's secret"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["session_secret"]  # no temporary file left


def test_workers_starting_together_agree_on_one_secret(tmp_path: Path) -> None:
    barrier = threading.Barrier(8)
    got: list[str] = []
    errors: list[BaseException] = []

    def start() -> None:
        barrier.wait()
        try:
            got.append(session_secret(_settings(tmp_path)))
        except OSError as exc:  # FileExistsError before the fix; anything else fails len(got) below
            errors.append(exc)

    threads = [threading.Thread(target=start) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert errors == []
    assert len(got) == 8 and len(set(got)) == 1 and len(got[0]) >= 32
    assert (tmp_path / "session_secret").read_text().strip() == got[0]
    assert (tmp_path / "session_secret").stat().st_mode & 0o777 == 0o600
