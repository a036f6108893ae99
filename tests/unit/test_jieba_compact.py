"""The compact segmenter (knowledge/jieba_compact.py) gives exactly plain jieba's tokens.

Stored chunk tokens and query tokens must agree, and the stored ones may have been made by plain jieba
(before session 7, or by another version of this code): so the whole lexical pipeline is compared, text
by text, on the bundled corpus, every eval question and recorded query (Chinese and English), and
generated runs of characters; and a compact table with one word dropped must be caught.
"""

from __future__ import annotations

import json
import logging
import os
import random
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from careerwise.knowledge.chunking import chunk_document
from careerwise.knowledge.documents import load_document
from careerwise.knowledge.evaluation import default_eval_dir, load_questions, model_query_path
from careerwise.knowledge.jieba_compact import CompactJieba, Hmm, jieba_dir, read_dictionary
from careerwise.knowledge.lexical import (
    _WORD,
    _converter,
    _segmenter,
    chunk_text,
    tokenize,
    tokenize_with,
)
from careerwise.knowledge.service import BUNDLED_CORPUS


@pytest.fixture(scope="module")
def plain() -> object:
    import jieba

    jieba.setLogLevel(logging.WARNING)
    jieba.initialize()
    return jieba


def _corpus_texts() -> list[str]:
    return [
        chunk_text(c.title, c.section, c.text)
        for p in sorted(BUNDLED_CORPUS.iterdir())
        for c in chunk_document(load_document(p, root=BUNDLED_CORPUS))
    ]


def _questions() -> list[str]:
    paths = [default_eval_dir()]
    if model_query_path().is_file():
        paths.append(model_query_path())
    return [q.question for q in load_questions(paths)]


def _pieces(texts: list[str]) -> list[str]:
    """The Chinese pieces lexical hands the segmenter (Simplified, lower-cased, CJK runs)."""
    converter = _converter()
    return [
        p
        for t in texts
        for p in _WORD.findall(converter.convert(t.lower()))  # type: ignore[attr-defined]
        if not p[0].isascii()
    ]


def _generated(pieces: list[str], n: int = 1500) -> Iterator[str]:
    """Runs of characters the dictionary and the HMM have not seen together: random draws from the
    corpus's characters, and a few edge characters (U+9FD6..U+9FFF are outside jieba's Han range)."""
    rng = random.Random(20261130)
    chars = "".join(sorted(set("".join(pieces)))) + "\u9fd6\u9fea\u9fff\u4e00\u9fd5"
    for _ in range(n):
        yield "".join(rng.choice(chars) for _ in range(rng.randint(1, 40)))


def test_the_texts_are_there() -> None:
    """The comparisons below are only as good as what they cover."""
    texts, questions = _corpus_texts(), _questions()
    assert len(texts) > 200
    assert len(questions) > 100
    assert any(q.isascii() for q in questions)  # English questions too
    assert len(_pieces(texts + questions)) > 3000


def test_same_tokens_as_plain_jieba_on_corpus_and_questions(plain: object) -> None:
    reference = plain.cut_for_search  # type: ignore[attr-defined]
    differ = [t for t in _corpus_texts() + _questions() if tokenize(t) != tokenize_with(t, segment=reference)]
    assert differ == []


def test_same_tokens_as_plain_jieba_on_generated_runs(plain: object) -> None:
    compact = _segmenter()
    runs = list(_generated(_pieces(_corpus_texts())))
    differ = [r for r in runs if compact.cut_for_search(r) != list(plain.cut_for_search(r))]  # type: ignore[attr-defined]
    assert differ == []


def test_counts_and_total_are_jiebas(plain: object) -> None:
    """Every key of jieba's FREQ (words and the count-0 prefixes) and a few strangers."""
    freq: dict[str, int] = plain.dt.FREQ  # type: ignore[attr-defined]
    compact = _segmenter()
    wrong = [w for w, c in freq.items() if compact.count(w) != c]
    assert wrong == []
    assert [compact.count(w) for w in ("", "薪水谈判技巧之王", "xyz")] == [0, 0, 0]
    assert compact.total == plain.dt.total  # type: ignore[attr-defined]


def test_hmm_tables_are_the_ones_jieba_imports() -> None:
    from jieba.finalseg import emit_P, start_P, trans_P

    assert Hmm.load(jieba_dir() / "finalseg") == Hmm.from_tables(start_P, trans_P, emit_P)


def test_a_dropped_word_is_caught(plain: object) -> None:
    """The comparison can fail: the compact table without one word the corpus uses (its most frequent
    two-character token) gives other tokens."""
    pieces = _pieces(_corpus_texts())
    seen = Counter(t for p in pieces for t in plain.cut_for_search(p) if len(t) == 2)  # type: ignore[attr-defined]
    dropped = seen.most_common(1)[0][0]
    folder = jieba_dir()
    broken = CompactJieba.from_entries(
        lambda: ((w, c) for w, c in read_dictionary(folder / "dict.txt") if w != dropped),
        hmm=Hmm.load(folder / "finalseg"),
    )
    assert broken.count(dropped) == 0
    differ = [p for p in pieces if broken.cut_for_search(p) != list(plain.cut_for_search(p))]  # type: ignore[attr-defined]
    assert len(differ) > 10


def test_only_cjk_runs_are_taken() -> None:
    compact = _segmenter()
    for bad in ("", "abc", "面试 准备", "面试abc"):
        with pytest.raises(ValueError, match="CJK"):
            compact.cut_for_search(bad)


def test_a_bad_dictionary_line_is_named(tmp_path: Path) -> None:
    path = tmp_path / "dict.txt"
    path.write_bytes("面试 12 n\n准备\n".encode())
    with pytest.raises(ValueError, match="line 2"):
        list(read_dictionary(path))


_SERVING = """
import json, sys
from careerwise.knowledge.lexical import tokenize
tokens = tokenize('面試怎麼準備？ How should I prepare for interviews')
print(json.dumps({'tokens': tokens, 'jieba': 'jieba' in sys.modules}))
"""


def test_tokenizing_does_not_import_jieba() -> None:
    """The ~80 MB stays out of the process: jieba's files are read, the package is never imported."""
    out = subprocess.run(
        [sys.executable, "-c", _SERVING],
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["jieba"] is False
    assert "面试" in got["tokens"] and "prepare" in got["tokens"]
