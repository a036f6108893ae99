"""Facet hits kept to the articles that the user's message finds (``flows/facets.situated``)."""

from __future__ import annotations

from careerwise.flows.facets import FACET_TOP_K, best_of_articles, situated
from careerwise.knowledge.index import Hit, IndexedChunk

_ids = iter(range(1, 10_000))


def hit(doc: str, domain: str) -> Hit:
    chunk = IndexedChunk(id=next(_ids), document_id=doc, title=doc, section="", domain=domain, text=doc)
    return Hit(chunk=chunk, score=1.0, dense=0.5, lexical=1.0)


def docs(hits: list[Hit]) -> list[str]:
    return [h.chunk.document_id for h in hits]


def test_a_facet_keeps_its_hits_from_the_situation_then_the_situation_hits_of_its_domain() -> None:
    counter = hit("counter", "market_salary")  # the same passage, found by both searches
    market = [hit("salary", "market_salary"), counter]
    growth = [hit("skills", "growth_skills"), hit("skills", "growth_skills")]
    practice = [hit("tech-interview", "interview_practice"), hit("rounds", "interview_practice")]
    situation = [counter, hit("promotion", "growth_skills"), hit("burnout", "other")]
    out, dropped = situated([market, growth, practice], situation)
    assert docs(out[0]) == ["counter"]  # its own hit first; the situation's copy of it is not added twice
    # none of its own: the situation's hits in its domains (burnout's domain is growth's, decision 0027)
    assert docs(out[1]) == ["promotion", "burnout"]
    assert out[2] == []  # the situation reaches no interview or resume article: no analysis for this facet
    assert docs(dropped) == ["salary", "skills", "skills", "tech-interview", "rounds"]


def test_when_the_message_finds_nothing_the_facet_searches_stand() -> None:
    per_facet = [[hit("salary", "market_salary")], [], [hit("rounds", "interview_practice")]]
    assert situated(per_facet, []) == (per_facet, [])


def test_only_the_first_hits_of_a_facet_count_as_dropped() -> None:
    own = [hit(f"m{i}", "market_salary") for i in range(4)]
    _, dropped = situated([own, [], []], [hit("other", "other")])
    assert len(dropped) == FACET_TOP_K


def test_the_situation_is_the_best_hit_of_each_of_its_first_articles() -> None:
    hits = [hit("a", "x"), hit("a", "x"), hit("b", "x"), hit("a", "x"), hit("c", "x"), hit("d", "x")]
    best = best_of_articles(hits, 3)
    assert docs(best) == ["a", "b", "c"] and best[0] is hits[0]
