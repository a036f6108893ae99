"""Documents, chunking, BM25 tokenizing and the searchKnowledge argument resolution."""

from __future__ import annotations

import hashlib
import itertools
import re
from pathlib import Path

import numpy as np
import pytest

from careerwise.assistant_settings import AssistantSettings
from careerwise.errors import ToolArgumentsError
from careerwise.knowledge.chunking import chunk_document, embedding_text, split_sentences
from careerwise.knowledge.documents import SourceDocument, UnreadableDocumentError, load_document
from careerwise.knowledge.index import FusionConfig, IndexedChunk, KnowledgeIndex
from careerwise.knowledge.lexical import BM25Index, chunk_text, token_string, tokenize
from careerwise.knowledge.service import BUNDLED_CORPUS
from careerwise.tools.search_knowledge import SearchKnowledgeTool

_CJK = re.compile(r"[\u4e00-\u9fff]")


def test_sentences_split_on_chinese_and_english_marks() -> None:
    text = "第一句。第二句！「第三句？」Then English. And more! 最後"
    assert split_sentences(text) == [
        "第一句。",
        "第二句！",
        "「第三句？」",
        "Then English.",
        "And more!",
        "最後",
    ]


def test_chunks_keep_title_and_section_and_overlap() -> None:
    body = "# 標題\n\n前言。\n\n## 第一節\n\n" + "".join(
        f"這是第{i}句話，內容有一點長度。" for i in range(40)
    )
    doc = SourceDocument(id="d", title="標題", text=body, source_path="d.md")
    chunks = chunk_document(doc, target_chars=120)
    assert chunks[0].section == "" and chunks[0].text == "前言。"
    rest = chunks[1:]
    assert len(rest) > 3 and all(c.section == "第一節" and c.title == "標題" for c in rest)
    for a, b in itertools.pairwise(rest):
        assert b.text.startswith(a.text.split("。")[-2].split("，")[0])  # one sentence of overlap


def test_the_other_language_title_is_read_but_never_part_of_a_chunk(tmp_path: Path) -> None:
    path = tmp_path / "raise.md"
    path.write_text(
        "---\ntitle: 跟主管談加薪\nalt_title: Asking your manager for a raise\n---\n## 準備\n先準備三張牌。\n",
        encoding="utf-8",
    )
    doc = load_document(path)
    assert (doc.title, doc.alt_title) == ("跟主管談加薪", "Asking your manager for a raise")
    [chunk] = chunk_document(doc)
    assert chunk.title == "跟主管談加薪"  # what the sources show
    # the chunk's vector is the one it had before alt titles existed: they have vectors of their own
    assert embedding_text(chunk.title, chunk.section, chunk.text) == "跟主管談加薪 — 準備\n先準備三張牌。"
    assert "Asking" not in chunk_text(chunk.title, chunk.section, chunk.text)
    # a document without one keeps the hash it had, so an install does not re-embed it for nothing
    plain = SourceDocument(id="d", title="t", text="x", source_path="p")
    assert plain.sha256 == hashlib.sha256(b"t\nother\nzh-TW\nx").hexdigest()
    assert plain.sha256 != SourceDocument(id="d", title="t", text="x", source_path="p", alt_title="a").sha256


def test_every_bundled_article_names_its_title_in_the_other_language() -> None:
    for path in sorted(BUNDLED_CORPUS.glob("*.md")):
        doc = load_document(path)
        assert doc.alt_title, path.name
        assert bool(_CJK.search(doc.title)) != bool(_CJK.search(doc.alt_title)), path.name


def test_bundled_corpus_is_substantial() -> None:
    docs = [load_document(p, root=BUNDLED_CORPUS) for p in sorted(BUNDLED_CORPUS.glob("*.md"))]
    assert len(docs) >= 30
    assert all(len(d.text) >= 800 for d in docs)
    assert {d.lang for d in docs} == {"zh-TW", "en"}
    assert sum(d.lang == "zh-TW" for d in docs) > len(docs) / 2
    assert len({d.id for d in docs}) == len(docs)


def test_unreadable_files_are_reported(tmp_path: Path) -> None:
    binary = tmp_path / "x.txt"
    binary.write_bytes(b"\x00\x01\x02" * 10)
    empty = tmp_path / "e.md"
    empty.write_text("  \n")
    other = tmp_path / "a.exe"
    other.write_text("x")
    for path, needle in [(binary, "binary"), (empty, "no text"), (other, "unsupported")]:
        with pytest.raises(UnreadableDocumentError, match=needle):
            load_document(path)


def test_traditional_chinese_is_tokenized_into_words() -> None:
    tokens = tokenize("薪資談判的技巧 Salary negotiations")
    assert "谈判" in tokens and "salary" in tokens and "negotiation" in tokens


def test_bm25_prefers_the_matching_text() -> None:
    index = BM25Index(["面試 準備 技巧", "薪水 談判 技巧", "履歷 格式"])
    scores = index.scores("怎麼談薪水")
    assert scores.argmax() == 1 and scores[2] == 0


class _KB:
    available = True


def _tool() -> SearchKnowledgeTool:
    return SearchKnowledgeTool(_KB())  # type: ignore[arg-type]


def test_resolution_defaults_and_clamps() -> None:
    tool, settings = _tool(), AssistantSettings()
    r = tool.resolve({"query": " 薪水 "}, settings)
    assert r.effective == {"query": "薪水", "top_k": 3} and "default" in r.reason
    r = tool.resolve({"query": "q", "top_k": 99}, settings)
    assert r.effective["top_k"] == 20 and "clamped" in r.reason
    r = tool.resolve({"query": "q", "top_k": "4"}, settings)
    assert r.effective["top_k"] == 4 and r.reason == "as requested"


def test_full_retrieval_range_overrides_the_model() -> None:
    r = _tool().resolve(
        {"query": "q", "top_k": 5}, AssistantSettings(use_full_retrieval_range=True, configured_top_k=15)
    )
    assert r.requested == {"query": "q", "top_k": 5}
    assert r.effective == {"query": "q", "top_k": 15}
    assert "configured_top_k=15" in r.reason


@pytest.mark.parametrize("args", [{}, {"query": ""}, {"query": 3}, {"query": "q", "top_k": "many"}])
def test_bad_arguments_raise(args: dict[str, object]) -> None:
    with pytest.raises(ToolArgumentsError):
        _tool().resolve(args, AssistantSettings())


def test_bm25_from_stored_tokens_scores_like_tokenizing() -> None:
    texts = ["面試 準備 技巧 interviews", "薪水 談判 技巧", "履歷 格式 resume formats", "薪資談判的技巧"]
    stored = [token_string(t) for t in texts]
    assert all(" " not in t for s in stored for t in s.split(" "))
    fresh, loaded = BM25Index(texts), BM25Index.from_tokens(stored)
    for q in ["怎麼談薪水", "resume format", "面試技巧", "nothing here"]:
        assert np.array_equal(fresh.scores(q), loaded.scores(q))
    assert loaded.scores("談判").argmax() in (1, 3)


def _quantized_pair(n: int, seed: int) -> tuple[KnowledgeIndex, KnowledgeIndex, np.ndarray]:
    """The same chunks twice: scored by the int8 first pass, and by the exact scan."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((12, 32)).astype(np.float32)
    vectors = centres[rng.integers(0, 12, n)] + 0.7 * rng.standard_normal((n, 32)).astype(np.float32)
    vectors[5] = vectors[9]  # exact ties: the lower position must rank first, as in a stable sort
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    words = ["薪水", "談判", "面試", "履歷", "salary", "resume", "remote", "轉職", "主管", "加薪"]
    domains = ["market_salary", "resume", "other"]
    chunks = [
        IndexedChunk(i, f"d{i // 4}", "t", "", domains[i % 3], " ".join(rng.choice(words, 5)))
        for i in range(n)
    ]
    queries = rng.standard_normal((12, 32)).astype(np.float32)
    queries[:6] = centres[:6] + 0.3 * queries[:6]  # near a cluster, where the top rows crowd together
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    quantized = KnowledgeIndex(chunks, vectors, version="v", quantize_from=0)
    exact = KnowledgeIndex(chunks, vectors, version="v", quantize_from=n + 1)
    assert quantized.quantized is not None and exact.quantized is None
    return quantized, exact, queries


@pytest.mark.parametrize("seed", [1, 2])
def test_int8_first_pass_returns_exactly_what_the_exact_scan_returns(seed: int) -> None:
    quantized, exact, queries = _quantized_pair(3000, seed)
    for gate in (True, False):
        fusion = FusionConfig(gate=gate, min_dense=0.3, domain_weight=0.0, min_lexical=3.0)
        for qvec, (query, domains) in zip(
            queries, itertools.cycle([("薪水 談判", None), ("resume", ["resume"]), ("xyz", None)])
        ):
            got = quantized.search(query, qvec, top_k=3, candidates=12, fusion=fusion, domains=domains)
            want = exact.search(query, qvec, top_k=3, candidates=12, fusion=fusion, domains=domains)
            assert got.matched == want.matched
            assert [(h.chunk.id, h.score, h.lexical) for h in got.hits] == [
                (h.chunk.id, h.score, h.lexical) for h in want.hits
            ]
            assert np.allclose([h.dense for h in got.hits], [h.dense for h in want.hits], atol=1e-6)


def test_int8_scores_stay_within_their_bound_and_rescore_few_rows() -> None:
    quantized, _, queries = _quantized_pair(3000, 3)
    assert quantized.quantized is not None
    for q in queries:
        scores = quantized.quantized.scores(q)
        exact = quantized.vectors.astype(np.float64) @ q.astype(np.float64)
        assert np.all(np.abs(scores.approx - exact) <= scores.bound)
        top = scores.top(24)
        assert list(top) == list(np.argsort(-exact.astype(np.float32), kind="stable")[:24])
        assert scores.rescored < len(exact) // 4  # the point of it: most rows never get an exact score
        rows = np.arange(0, len(exact), 50)  # more than 16 rows: the sorted path
        floors = scores.rank_floor(rows)
        assert list(floors) == [np.count_nonzero(scores.low > scores.high[r]) for r in rows]
        assert list(scores.rank_floor(rows[:5])) == list(floors[:5])
        assert all(f <= scores.rank(int(r)) for f, r in zip(floors, rows, strict=True))


@pytest.mark.parametrize("token_strings", [[], [""], ["", "  "]])
def test_bm25_over_no_tokens_scores_nothing(token_strings: list[str]) -> None:
    # an empty knowledge base once failed to load here (more posting ends than starts)
    index = BM25Index.from_tokens(token_strings)
    assert index.scores("面試 準備").tolist() == [0.0] * len(token_strings)
