"""``python -m bench``: a name it does not know is refused with the list of names, before anything runs."""

from __future__ import annotations

import pytest

from bench import __main__ as bench_main


def _refuse_to_run(*_: object) -> list[str]:
    raise AssertionError("no benchmark may run")


def test_an_unknown_name_is_refused_before_any_benchmark_runs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for module in bench_main.BENCHMARKS.values():
        monkeypatch.setattr(module, "run", _refuse_to_run)
    assert bench_main.main(["routing", "nosuch"]) == 2
    err = capsys.readouterr().err
    assert "no such benchmark: nosuch" in err
    assert all(name in err for name in bench_main.BENCHMARKS)


def test_help_lists_the_benchmarks_and_the_slow_ones(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for module in bench_main.BENCHMARKS.values():
        monkeypatch.setattr(module, "run", _refuse_to_run)
    assert bench_main.main(["--help"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in bench_main.BENCHMARKS)
    assert all(name in out for name in bench_main.SLOW)


def test_named_benchmarks_run_in_the_suite_order(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    ran: list[str] = []
    for name, module in bench_main.BENCHMARKS.items():
        monkeypatch.setattr(module, "run", lambda name=name: ran.append(name) or [f"table {name}"])
    assert bench_main.main(["injection", "ttft"]) == 0  # a slow one runs when named
    assert ran == ["ttft", "injection"]
    assert "table ttft" in capsys.readouterr().out
    ran.clear()
    assert bench_main.main([]) == 0
    assert ran == [n for n in bench_main.BENCHMARKS if n not in bench_main.SLOW]
