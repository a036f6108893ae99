"""A damaged jieba data file names itself (src/careerwise/knowledge/jieba_compact.py; the failure-handling
audit of 2026-11-30): the first Chinese search is what reads these files, and an ``EOFError`` from deep in
a search would not tell the operator which file to repair."""

from __future__ import annotations

import pickle
import shutil
from pathlib import Path

import pytest

from careerwise.knowledge.jieba_compact import Hmm, jieba_dir


def _copy_of_finalseg(tmp_path: Path) -> Path:
    folder = tmp_path / "finalseg"
    folder.mkdir()
    for name in ("prob_start.p", "prob_trans.p", "prob_emit.p"):
        shutil.copyfile(jieba_dir() / "finalseg" / name, folder / name)
    return folder


def test_a_truncated_hmm_table_is_named(tmp_path: Path) -> None:
    folder = _copy_of_finalseg(tmp_path)
    whole = (folder / "prob_trans.p").read_bytes()
    (folder / "prob_trans.p").write_bytes(whole[: len(whole) // 2])
    with pytest.raises(ValueError, match=r"prob_trans\.p cannot be read") as caught:
        Hmm.load(folder)
    assert caught.value.__cause__ is not None  # the unpickler's own error stays attached


def test_a_table_that_is_not_a_table_is_named(tmp_path: Path) -> None:
    folder = _copy_of_finalseg(tmp_path)
    (folder / "prob_start.p").write_bytes(pickle.dumps(["B", "E"]))
    with pytest.raises(ValueError, match=r"prob_start\.p holds a list"):
        Hmm.load(folder)


def test_the_intact_copy_loads(tmp_path: Path) -> None:
    assert Hmm.load(_copy_of_finalseg(tmp_path)) == Hmm.load(jieba_dir() / "finalseg")
