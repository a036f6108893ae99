"""Every domain of the knowledge base belongs to one facet, so every article can be cited by the deep
flows (decision 0027)."""

from __future__ import annotations

from careerwise.flows.facets import FACET_OF_DOMAIN, FACETS, situated
from careerwise.knowledge.documents import DOMAINS
from careerwise.knowledge.index import Hit, IndexedChunk


def hit(n: int, document_id: str, domain: str) -> Hit:
    return Hit(IndexedChunk(n, document_id, document_id, "", domain, "text"), 1.0 / n, 0.5, 0.0)


def test_every_domain_belongs_to_exactly_one_facet_and_each_facet_keeps_its_own_first() -> None:
    owned = [domain for facet in FACETS for domain in facet.domains]
    assert sorted(owned) == sorted(DOMAINS) and len(owned) == len(set(owned))
    assert [f.domains[0] for f in FACETS] == ["market_salary", "growth_skills", "interview_practice"]
    assert FACET_OF_DOMAIN["resume"] == "practice" and FACET_OF_DOMAIN["other"] == "growth"


def test_the_situations_articles_go_to_the_facet_that_owns_their_domain() -> None:
    burnout, resume, salary = (
        hit(1, "burnout", "other"),
        hit(2, "cv", "resume"),
        hit(3, "pay", "market_salary"),
    )
    unrelated = hit(4, "tech-interview", "interview_practice")  # a practice hit the message never finds
    per_facet, dropped = situated([[salary], [], [unrelated]], [burnout, resume, salary])
    assert [[h.chunk.document_id for h in hits] for hits in per_facet] == [["pay"], ["burnout"], ["cv"]]
    assert dropped == [unrelated]
