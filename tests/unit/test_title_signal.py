"""The title signal (knowledge/titles.py): which titles count for which question, the ranking it gives
(the bonus added to the best chunk's dense score, then every chunk fused: the same positions and floats
on both dense paths and with domain filters), and that it never changes what the relevance gate decides."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import numpy.typing as npt
import pytest

from careerwise.knowledge.dense import ExactScores, QuantizedMatrix
from careerwise.knowledge.embeddings import detect_lang
from careerwise.knowledge.index import FusionConfig, IndexedChunk, KnowledgeIndex, fuse
from careerwise.knowledge.titles import (
    DocumentTitle,
    TitleScores,
    decode_vectors,
    encode_vectors,
    own_language_lead,
    title_texts,
)

DIM = 16
EN_WORDS = ["salary", "offer", "raise", "resume", "interview", "manager", "promotion", "remote", "team"]
ZH_WORDS = ["薪水", "面試", "履歷", "主管", "加薪", "升遷", "團隊", "遠端", "轉職"]


def _unit(v: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    out: npt.NDArray[np.float32] = (v / np.linalg.norm(v)).astype(np.float32)
    return out


def test_title_texts_and_stored_vectors() -> None:
    assert title_texts("跟主管談加薪", "Asking your manager for a raise") == [
        "跟主管談加薪",
        "Asking your manager for a raise",
    ]
    assert title_texts("Remote work", "") == title_texts("Remote work", " Remote work ") == ["Remote work"]
    vectors = np.arange(2 * DIM, dtype=np.float32).reshape(2, DIM)
    raw = encode_vectors(vectors)
    decoded = decode_vectors(raw, 2, DIM)
    assert decoded is not None and np.array_equal(decoded, vectors)
    # another number of titles (an alt title added since) or another model's size: redone
    assert decode_vectors(raw, 1, DIM) is None and decode_vectors(raw, 2, 8) is None
    assert decode_vectors(None, 1, DIM) is None


def _title(doc: str, texts: list[str], vectors: list[npt.NDArray[np.float32]]) -> DocumentTitle:
    return DocumentTitle(doc, tuple(texts), np.vstack(vectors).astype(np.float32))


def test_only_a_title_in_the_questions_language_that_is_not_the_documents_own_counts() -> None:
    e = np.eye(DIM, dtype=np.float32)
    titles = [
        _title("zh-with-en", ["跟主管談加薪", "Asking your manager for a raise"], [e[0], e[1]]),
        _title("en-with-zh", ["Frontend or backend", "前端還是後端"], [e[1], e[2]]),
        _title("en-alone", ["Remote work"], [e[1]]),  # an uploaded document without an alt title
        _title("zh-twice", ["面試準備", "面試的準備"], [e[0], e[1]]),  # its "alt" is in its own language
        _title("no-chunks", ["轉職", "Switching careers"], [e[0], e[1]]),
    ]
    scores = TitleScores(titles, ["zh-with-en", "zh-with-en", "en-with-zh", "en-alone", "zh-twice"], None)
    fusion = FusionConfig(title_weight=0.5, title_documents=5)
    english = scores.boosts("how do I ask for a raise", e[1], fusion)
    assert [(b.document_id, b.bonus, b.chunks.tolist()) for b in english] == [("zh-with-en", 0.5, [0, 1])]
    chinese = scores.boosts("前端還是後端比較好", _unit(e[2] + 0.5 * e[1]), fusion)
    assert [b.document_id for b in chinese] == ["en-with-zh"]
    assert chinese[0].bonus == pytest.approx(0.5 * float(_unit(e[2] + 0.5 * e[1])[2]))
    # nothing for a cosine that is not positive, for a weight of 0, or past title_documents
    assert scores.boosts("how do I ask for a raise", -e[1], fusion) == []
    assert scores.boosts("how do I ask for a raise", e[1], replace(fusion, title_weight=0.0)) == []
    both = TitleScores(
        [*titles[:1], _title("zh-b", ["前端", "Frontend"], [e[3], _unit(e[1] + e[4])])],
        ["zh-with-en", "zh-b"],
        None,
    )
    assert [b.document_id for b in both.boosts("raise", e[1], fusion)] == ["zh-with-en", "zh-b"]
    assert [b.document_id for b in both.boosts("raise", e[1], replace(fusion, title_documents=1))] == [
        "zh-with-en"
    ]


def test_titles_are_centred_like_queries_of_their_language() -> None:
    e = np.eye(DIM, dtype=np.float32)
    means = {"en": 0.5 * e[5], "zh": 0.5 * e[6]}
    scores = TitleScores(
        [_title("d", ["跟主管談加薪", "Asking for a raise"], [e[0], _unit(e[1] + 0.5 * e[5])])], ["d"], means
    )
    # the English title minus the English query mean is e[1]; so is the question once centred
    [boost] = scores.boosts("a raise", _unit(e[1] + 0.5 * e[5]), FusionConfig(title_weight=1.0))
    assert boost.bonus == pytest.approx(1.0, abs=1e-6)


def _corpus(
    rng: np.random.Generator,
) -> tuple[list[IndexedChunk], npt.NDArray[np.float32], list[DocumentTitle]]:
    """Documents of 1 to 12 chunks in both languages, vectors drawn from a few directions (many exact
    ties), texts from a small vocabulary (BM25 ties), titles in one language or both."""
    base = rng.normal(size=(12, DIM)).astype(np.float32)
    chunks: list[IndexedChunk] = []
    vectors: list[npt.NDArray[np.float32]] = []
    titles: list[DocumentTitle] = []
    for d in range(40):
        zh = d % 3 != 0
        words = ZH_WORDS if zh else EN_WORDS
        title = "".join(rng.choice(ZH_WORDS, 2)) if zh else " ".join(rng.choice(EN_WORDS, 2))
        alt = " ".join(rng.choice(EN_WORDS, 3)) if zh else "".join(rng.choice(ZH_WORDS, 3))
        texts = [title, alt] if d % 5 else [title]
        titles.append(_title(f"d{d}", texts, [rng.normal(size=DIM).astype(np.float32) for _ in texts]))
        for _ in range(int(rng.integers(1, 13))):
            text = ("" if zh else " ").join(rng.choice(words, int(rng.integers(2, 6))))
            domain = "a" if d % 2 else "b"
            chunks.append(IndexedChunk(len(chunks), f"d{d}", title, "", domain, text))
            vectors.append(
                base[int(rng.integers(0, len(base)))]
                + (0 if rng.random() < 0.3 else 0.1) * rng.normal(size=DIM)
            )
    matrix = np.vstack(vectors).astype(np.float32)
    return chunks, matrix / np.linalg.norm(matrix, axis=1, keepdims=True), titles


def _reference(
    index: KnowledgeIndex,
    query: str,
    qvec: npt.NDArray[np.float32],
    fusion: FusionConfig,
    domains: list[str] | None,
    pool: int,
) -> tuple[list[int], list[float]]:
    """Unless the searched chunks in the query's language lead the others by ``title_max_lead``, each
    boost added to the dense score of its document's best chunk (summed in float64, kept in float32);
    every chunk fused, a full stable sort."""
    dense, lexical = index.dense_scores(query, qvec), index.lexical_scores(query)
    idx = np.flatnonzero(index.domain_mask_for(domains)) if domains else np.arange(len(index.chunks))
    d, lex = dense[idx].copy(), lexical[idx]
    own = np.array([detect_lang(f"{index.chunks[i].title} {index.chunks[i].text}") for i in idx])
    own = own == detect_lang(query)
    lead = float(d[own].max()) - float(d[~own].max()) if own.any() and (~own).any() else -1.0
    boosts = index.title_boosts(query, qvec, fusion)
    if fusion.title_max_lead is not None and (lead >= fusion.title_max_lead or own.all()):
        boosts = []
    for boost in boosts:
        members = [p for p, g in enumerate(idx.tolist()) if g in set(boost.chunks.tolist())]
        if members:
            best = members[int(np.argmax(d[members]))]
            d[best] = np.float32(float(d[best]) + boost.bonus)
    fused = fuse(d, lex, fusion)
    order = np.argsort(-fused, kind="stable")[:pool]
    return [index.chunks[int(i)].id for i in idx[order]], fused[order].tolist()


@pytest.mark.parametrize("quantize_from", [10_000, 64], ids=["exact", "int8"])
def test_the_ranking_is_the_bonus_added_before_ranking_everything(quantize_from: int) -> None:
    rng = np.random.default_rng(7)
    chunks, vectors, titles = _corpus(rng)
    means = {
        "zh": rng.normal(size=DIM).astype(np.float32) * 0.1,
        "en": rng.normal(size=DIM).astype(np.float32) * 0.1,
    }
    index = KnowledgeIndex(
        chunks, vectors, version="t", query_means=means, titles=titles, quantize_from=quantize_from
    )
    assert len(chunks) > 4 * 12  # fused_top takes its partial path
    fusion = FusionConfig(
        gate=False, min_topic_margin=None, title_weight=0.5, title_documents=3, title_max_lead=0.05
    )
    plain = replace(fusion, title_weight=0.0)
    moved = held = 0
    for n in range(60):
        query = " ".join(rng.choice(EN_WORDS, 3)) if n % 2 else "".join(rng.choice(ZH_WORDS, 3))
        qvec = _unit(rng.normal(size=DIM).astype(np.float32))
        for domains in (None, ["a"]):
            for pool in (3, 12):
                got = index.search(query, qvec, top_k=pool, candidates=pool, fusion=fusion, domains=domains)
                ids, scores = _reference(index, query, qvec, fusion, domains, pool)
                assert [h.chunk.id for h in got.hits] == ids
                assert [h.score for h in got.hits] == scores  # the same floats, not close ones
                cosines = index.dense_scores(query, qvec)  # what hits report: the scores the gate saw
                assert [h.dense for h in got.hits] == [float(cosines[h.chunk.id]) for h in got.hits]
                before = index.search(query, qvec, top_k=pool, candidates=pool, fusion=plain, domains=domains)
                moved += [h.chunk.id for h in before.hits] != ids
                unlimited = replace(fusion, title_max_lead=None)
                free = index.search(
                    query, qvec, top_k=pool, candidates=pool, fusion=unlimited, domains=domains
                )
                held += [h.chunk.id for h in free.hits] != ids  # the lead withheld a bonus that moves
    assert moved > 20  # the titles did move the ranking
    assert held > 5  # and the lead kept it as it was for some questions


def test_titles_never_open_or_close_the_gate() -> None:
    rng = np.random.default_rng(11)
    chunks, vectors, titles = _corpus(rng)
    index = KnowledgeIndex(chunks, vectors, version="t", titles=titles)
    gated = FusionConfig(
        min_dense=0.5, domain_weight=0.0, min_lexical=5.5, min_topic_margin=None, title_weight=2.0
    )
    untitled = replace(gated, title_weight=0.0)
    outcomes, boosted = set(), 0
    for n in range(80):
        query = " ".join(rng.choice(EN_WORDS, 2)) if n % 2 else "".join(rng.choice(ZH_WORDS, 2))
        qvec = _unit(rng.normal(size=DIM).astype(np.float32))
        boosted += bool(index.title_boosts(query, qvec, gated))
        with_titles = index.search(query, qvec, top_k=5, candidates=12, fusion=gated)
        without = index.search(query, qvec, top_k=5, candidates=12, fusion=untitled)
        assert with_titles.matched == without.matched
        assert bool(with_titles.hits) == bool(without.hits)
        outcomes.add(bool(with_titles.hits))
    assert outcomes == {True, False}  # both verdicts were seen
    assert boosted > 60  # with large bonuses for most questions


def test_the_own_languages_lead_is_exact_on_both_dense_paths() -> None:
    rng = np.random.default_rng(5)
    vectors = rng.normal(size=(300, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    q = _unit(rng.normal(size=DIM).astype(np.float32))
    exact = vectors @ q
    for _ in range(20):
        own = rng.random(300) < rng.uniform(0.05, 0.95)
        want = float(exact[own].max()) - float(exact[~own].max())
        for scores in (ExactScores(exact), QuantizedMatrix(vectors).scores(q)):
            assert own_language_lead(scores, own) == pytest.approx(want, abs=1e-6)
    quantized = QuantizedMatrix(vectors).scores(q)
    own_language_lead(quantized, rng.random(300) < 0.5)
    assert quantized.rescored < 100  # only the rows that could be the best were scored exactly
    everything = np.ones(300, dtype=bool)
    assert own_language_lead(ExactScores(exact), everything) == np.inf  # nothing to lift
    assert own_language_lead(ExactScores(exact), ~everything) == -np.inf
    unscored = np.where(everything, -np.inf, exact).astype(np.float32)  # the HNSW path's missing scores
    unscored[:10] = exact[:10]
    assert own_language_lead(ExactScores(unscored), np.arange(300) >= 10) == -np.inf


def test_a_clear_lead_of_the_questions_language_keeps_the_plain_ranking() -> None:
    """A Chinese question whose Chinese article leads the English one by more than the limit is ranked
    as without titles, however close the English article's Chinese title is; within the limit, the
    English article is lifted above it."""
    e = np.eye(DIM, dtype=np.float32)
    chunks = [
        IndexedChunk(0, "zh-doc", "薪資行情", "", "market", "二〇二六年基本工資每月兩萬九千五百元"),
        IndexedChunk(1, "zh-doc", "薪資行情", "", "market", "各產業的薪資中位數與跳槽漲幅"),
        IndexedChunk(
            2, "en-doc", "Counter-offers", "", "market", "Should you stay when your company pays more"
        ),
    ]
    titles = [_title("en-doc", ["Counter-offers", "公司加薪留人該留下嗎"], [e[3], e[4]])]
    fusion = FusionConfig(gate=False, min_topic_margin=None, lexical_weight=0.0, title_weight=1.0)
    query = "薪資行情 該不該離職"

    def ranking(chunk_vectors: list[npt.NDArray[np.float32]], limit: float | None) -> list[str]:
        index = KnowledgeIndex(chunks, np.vstack(chunk_vectors), version="t", titles=titles)
        qvec = _unit(e[0] + 0.6 * e[4])  # close to the first chunk and to the English article's title
        hits = index.search(
            query, qvec, top_k=3, candidates=3, fusion=replace(fusion, title_max_lead=limit)
        ).hits
        return [f"{h.chunk.document_id}:{h.chunk.id}" for h in hits]

    # the chunks' cosines with the question: 0.86, 0.73 and 0.68 (a lead of 0.18), then 0.84 (0.02)
    clear = [e[0], _unit(e[0] + 0.6 * e[5]), _unit(e[0] + 0.6 * e[1] + 0.5 * e[2])]
    close = [e[0], _unit(e[0] + 0.6 * e[5]), _unit(e[0] + 0.2 * e[1])]
    plain = ["zh-doc:0", "zh-doc:1", "en-doc:2"]
    assert ranking(clear, 0.03) == plain
    assert ranking(clear, None)[:2] == ["en-doc:2", "zh-doc:0"]  # what the lead prevents
    assert ranking(close, 0.03)[0] == "en-doc:2"
