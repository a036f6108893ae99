"""Each document's titles as a ranking signal of their own (issue #23, part 6).

A question in one language tends to rank an article written in the other below same-language articles
(language centring removes most of that, not all). Each document's titles are embedded on their own,
once per document: its title and, when set, its title in the knowledge base's other language (front
matter ``alt_title``). At search time the question is compared with every document's title *in the
question's language, where that is not the document's own language* (for a document in the question's
language the chunks carry its title already), and the ``title_documents`` closest documents get

    bonus = title_weight * max(0, cos(centred question, centred title))

added to the dense score of their best chunk (``raise_best_chunks``) before the dense and BM25 rankings
are fused. On the dense scale, a chunk that matches clearly better keeps its place, while one about as
close as the best is lifted; the document's other chunks keep their places, so one article does not
fill the passages the tool hands over.

The bonus only ever favours the other language, so it is withheld where the question's own language
clearly answers: when, within the searched chunks, the best dense score of a chunk in the question's
language is ``title_max_lead`` or more above the best of any other chunk (``own_language_lead``), the
ranking is the plain one. A same-language search with a clear same-language match (a facet search of
the deep designs, a direct question) is then never reordered toward articles in the other language;
the bonus acts where the encoder's own-language bias leaves the two languages close.

Titles are embedded as queries (e5's ``query:`` side) and centred with the query means of their language:
a title is short and question-like, and e5 compares two queries symmetrically (docs/retrieval.md has the
comparison with titles embedded as passages). The bonus only reorders what the relevance gate let
through: ``index.gate_and_fuse`` decides before it is applied, and the chunks' vectors, the corpus
centroid and the topic margin never see a title.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from careerwise.knowledge.dense import DenseScores
from careerwise.knowledge.embeddings import CachedEmbedder, Embedder, Matrix, Vector, detect_lang
from careerwise.store import Database
from careerwise.store.knowledge_writes import KnowledgeWrites

if TYPE_CHECKING:
    from careerwise.knowledge.index import FusionConfig

log = logging.getLogger(__name__)
IntArray = npt.NDArray[np.intp]
BoolArray = npt.NDArray[np.bool_]


def title_texts(title: str, alt_title: str) -> list[str]:
    """What is embedded for a document, in the stored rows' order: its title, then its alt title when it
    has one that differs."""
    alt = alt_title.strip()
    return [title, alt] if alt and alt != title.strip() else [title]


def embed_titles(embedder: Embedder, texts: Sequence[str]) -> Matrix:
    """Titles as queries, past a query cache (titles are no searches: they would only crowd it out)."""
    inner = embedder.inner if isinstance(embedder, CachedEmbedder) else embedder
    return inner.embed_queries(list(texts))


def encode_vectors(vectors: Matrix) -> bytes:
    return np.ascontiguousarray(vectors, dtype=np.float32).tobytes()


def decode_vectors(raw: bytes | None, rows: int, dim: int) -> Matrix | None:
    """The stored rows, or None when there are none or not ``rows`` of ``dim`` (then they are redone)."""
    if raw is None or len(raw) != 4 * rows * dim:
        return None
    return np.frombuffer(raw, dtype=np.float32).reshape(rows, dim)


@dataclass(frozen=True)
class DocumentTitle:
    document_id: str
    texts: tuple[str, ...]  # ``title_texts``: the title first
    vectors: Matrix  # one raw (uncentred) row per text


async def load_titles(db: Database, embedder: Embedder) -> list[DocumentTitle]:
    """Every stored document's title vectors. Documents without vectors from ``embedder`` (stored before
    migration 0021, or by another model) get them here, written back so that this happens once; a
    failed write is logged, and the vectors computed are used all the same."""
    writes = KnowledgeWrites(db)
    out: list[DocumentTitle] = []
    missing: list[tuple[str, str, str]] = []
    for doc_id, title, alt_title, raw, model in await writes.titles():
        texts = title_texts(title, alt_title)
        vectors = decode_vectors(raw, len(texts), embedder.dim) if model == embedder.name else None
        if vectors is None:
            missing.append((doc_id, title, alt_title))
        else:
            out.append(DocumentTitle(doc_id, tuple(texts), vectors))
    if not missing:
        return out
    texts_of = [title_texts(title, alt) for _, title, alt in missing]
    fresh = await asyncio.to_thread(embed_titles, embedder, [t for texts in texts_of for t in texts])
    start, rows = 0, []
    for (doc_id, title, alt), texts in zip(missing, texts_of, strict=True):
        vectors = fresh[start : start + len(texts)]
        start += len(texts)
        out.append(DocumentTitle(doc_id, tuple(texts), vectors))
        rows.append((doc_id, title, alt, encode_vectors(vectors)))
    if await writes.store_title_vectors(rows, model=embedder.name):
        log.info("knowledge: embedded and stored the titles of %d documents", len(rows))
    return out


@dataclass(frozen=True)
class TitleBoost:
    """A bonus for one document's best chunk (``chunks``: the positions of its chunks in the index)."""

    document_id: str
    chunks: IntArray
    bonus: float


class TitleScores:
    """The title rows the search compares questions with: per language, each document's titles in that
    language when it is not the language of the document's own title, centred like queries of it."""

    def __init__(
        self,
        titles: Sequence[DocumentTitle],
        chunk_documents: Sequence[str],
        query_means: dict[str, Vector] | None,
    ) -> None:
        positions: dict[str, list[int]] = {}
        for n, doc_id in enumerate(chunk_documents):
            positions.setdefault(doc_id, []).append(n)
        self.query_means = query_means
        self.documents: list[tuple[str, IntArray]] = []  # (id, its chunks' positions)
        rows: dict[str, list[tuple[int, Vector]]] = {}
        for t in titles:
            chunks = positions.get(t.document_id)
            own = detect_lang(t.texts[0]) if t.texts else ""
            kept = [
                (detect_lang(text), vec)
                for text, vec in zip(t.texts[1:], t.vectors[1:], strict=True)
                if detect_lang(text) != own
            ]
            if not chunks or not kept:
                continue
            for lang, vec in kept:
                rows.setdefault(lang, []).append((len(self.documents), self._centre(vec, lang)))
            self.documents.append((t.document_id, np.array(chunks, dtype=np.intp)))
        self.rows: dict[str, tuple[Matrix, IntArray]] = {
            lang: (np.vstack([v for _, v in found]), np.array([d for d, _ in found], dtype=np.intp))
            for lang, found in rows.items()
        }

    def _centre(self, vec: Vector, lang: str) -> Vector:
        """``vec`` minus the query mean of ``lang`` (none without centring), as a unit vector."""
        if self.query_means is not None and lang in self.query_means:
            vec = vec - self.query_means[lang]
        norm = float(np.linalg.norm(vec))
        out: Vector = (vec / norm if norm > 0 else vec).astype(np.float32)
        return out

    def boosts(self, query: str, qvec: Vector, fusion: FusionConfig) -> list[TitleBoost]:
        """The ``title_documents`` documents whose title in the query's language is closest to it (a
        positive cosine), best first, with their bonus; none when ``title_weight`` is not positive."""
        lang = detect_lang(query)
        found = self.rows.get(lang)
        if found is None or fusion.title_weight <= 0 or fusion.title_documents <= 0:
            return []
        matrix, owners = found
        scores = matrix @ self._centre(qvec, lang)
        best = np.full(len(self.documents), -np.inf)
        np.maximum.at(best, owners, scores)
        candidates = np.flatnonzero(best > 0)
        order = candidates[np.argsort(-best[candidates], kind="stable")][: fusion.title_documents]
        return [
            TitleBoost(self.documents[j][0], self.documents[j][1], fusion.title_weight * float(best[j]))
            for j in order
        ]


def own_language_lead(dense: DenseScores, own: BoolArray) -> float:
    """The best dense score of a chunk in the question's language (``own``, over ``dense``'s rows) minus
    the best of the others: +inf when no other chunk has a score, -inf when no own-language one has."""
    own_best, other_best = dense.best(np.flatnonzero(own)), dense.best(np.flatnonzero(~own))
    if not np.isfinite(other_best):
        return float("inf")
    if not np.isfinite(own_best):
        return float("-inf")
    return own_best - other_best


def raise_best_chunks(
    dense: DenseScores,
    boosts: Sequence[TitleBoost],
    rows: IntArray | None,
    *,
    own_language: BoolArray | None = None,
    max_lead: float | None = None,
) -> DenseScores:
    """``dense`` with each boost's bonus added to the dense score of its document's best chunk (the
    first of equal ones), for the fused ranking. ``rows``: the index positions ``dense`` covers (a domain
    subset, ascending; None: every chunk). ``own_language``: which of ``dense``'s rows are in the
    question's language; with ``max_lead``, ``dense`` is returned as it is when those lead the others by
    ``max_lead`` or more (``own_language_lead``). Scores with NaN are returned as they are."""
    if not boosts or dense.has_nan():
        return dense
    if (
        own_language is not None
        and max_lead is not None
        and own_language_lead(dense, own_language) >= max_lead
    ):
        return dense
    best: list[int] = []
    bonus: list[float] = []
    for boost in boosts:
        members = boost.chunks
        if rows is not None:
            at = np.minimum(np.searchsorted(rows, members), max(len(rows) - 1, 0))
            members = at[rows[at] == members] if len(rows) else at[:0]
        if len(members):
            best.append(int(members[int(np.argmax(dense.at(members)))]))
            bonus.append(boost.bonus)
    if not best:
        return dense
    return dense.raised(np.array(best, dtype=np.intp), np.array(bonus, dtype=np.float64))
