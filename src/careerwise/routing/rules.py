"""Layer 1: free, deterministic rules, each with an id, in Traditional Chinese and English.

The first rule that matches decides. Order is the mixed-intent policy: an explicit booking request wins
over a resume request, which wins over a career question; a greeting rule only matches a message that
is *nothing but* small talk (「你好，我想問怎麼談薪水」 is a career question). Every rule carries the
examples it must match; the tests run them, and docs/routing.md lists the ids.

Rules are precise, not complete: what they miss goes to the embedding layer. The tables live one per
intent (``_rules_booking``, ``_rules_resume``, ``_rules_offtopic``, ``_rules_greeting``) over the shared
word lists of ``_rule_base``; this module orders them and holds the matching and the vetoes that bind
layers 2 and 3.
"""

from __future__ import annotations

from careerwise.routing._rule_base import (
    _CAREER_WORDS,
    _INTERVIEW_ZH,
    _OTHERS_BOOKING_ZH,
    _OTHERS_EN,
    _OTHERS_RESUMES,
    _SOMEONE_ELSES_COUNSELLING,
    CLAUSE_END,
    SUMMERS_SESSION,
    Rule,
    _r,
)
from careerwise.routing._rules_booking import BOOKING_RULES
from careerwise.routing._rules_greeting import GREETING_RULES
from careerwise.routing._rules_offtopic import OFFTOPIC_RULES
from careerwise.routing._rules_resume import RESUME_RULES
from careerwise.routing._text import normalise, strip_opener, units
from careerwise.routing.tier import asks_a_question

__all__ = ["ASKS_UNITS", "RULES", "Rule", "match_rules", "vetoed"]

ASKS_UNITS = 6  # «面試要穿什麼», "how do I ask for a raise": a question; «你幾歲», «你人真好»: small talk

# The order is the mixed-intent policy: booking > resume > off-topic (vetoed by any word of work) >
# greeting (only a message that is nothing but small talk).
RULES: tuple[Rule, ...] = BOOKING_RULES + RESUME_RULES + OFFTOPIC_RULES + GREETING_RULES


# Layer 2 reads the same words: a booking verdict on a message that is about someone else's appointment,
# a job interview, an employer's counselling or a membership is not sure (the LLM, or the no-LLM guess,
# decides instead). The booking rules' vetoes, in one pattern.
_BOOKING_VETO = _r(
    rf"{_INTERVIEW_ZH}|{_OTHERS_BOOKING_ZH}|{_SOMEONE_ELSES_COUNSELLING}|{_OTHERS_EN}"
    r"|會員|訂閱|\b(?:membership|subscription)s?\b"
)

_MOCK_INTERVIEW = _r(r"模擬面試|\bmock interviews?\b")
# a general question about a document's length (「履歷要寫幾頁？」, "is a two-page resume too long"): career,
# unless the message asks for something to be done to the user's own document (「可以幫我精簡嗎」)
_DOC_LENGTH = _r(
    r"幾頁|幾個字|多少字|幾段|幾行|寫多長|\bhow long should\b|\bhow many (?:pages|words|paragraphs)\b"
    r"|\b(?:one|two|1|2)[- ]pages?\b|\btoo long\b"
    # whether something belongs in a document at all: 「要不要寫期望薪資」, "is it a good idea to mention…"
    r"|要不要(?:寫|放|附|提)|\b(?:should i|is it (?:a good idea|ok|okay|smart|wise) to) (?:mention|include|put|list|add)\b"
)
_DOC_REQUEST = _r(
    r"幫|替我|請你|可以.{0,4}(?:看|改|刪|精簡|縮)|以下是|附上|\b(?:help|review|check|look at|look over|fix|"
    r"rewrite|shorten|cut|trim|edit|proofread|here'?s my|attached)\b"
)
_CAREER = _r(_CAREER_WORDS)
_OTHERS_RESUMES_RE = _r(_OTHERS_RESUMES)


def vetoed(intent: str, message: str) -> str | None:
    """Why a model (layer 2, or the LLM) must not be taken at its word for ``intent`` on ``message``,
    or None: the words the booking rules veto for booking, a word of work or careers for off-topic (the
    off-topic rules' veto: a career question wins over whatever else it asks), for resume other people's
    resumes in the user's hands (screening applicants at work) or a question about a document's length
    without a request to work on the user's own (「履歷要寫幾頁？」 is career).

    A booking stays un-vetoed for a mock interview (one of Summer's sessions) and for a message whose
    last clause, where a long message states its request, asks for one of Summer's sessions without a
    veto word of its own: a story about failed interviews that ends «請問一對一諮詢要怎麼報名？» is a
    booking, «HR 約我明天面試，可以改到後天嗎？» is not.

    A greeting is vetoed when what follows a leading greeting, thanks or 請問-style opener asks a question
    of work (at least ``ASKS_UNITS`` units, with a word of work or careers): such a message is labelled by
    its question (docs/routing.md), «嗨～想問一下面試要穿什麼？», not «你好呀，最近過得好嗎»."""
    text = normalise(message)
    if intent == "greeting":
        core = strip_opener(text)
        asks = (
            core != text  # an opener was there: «這個 app 是哪間公司做的» asks about Summer herself
            and units(core) >= ASKS_UNITS
            and asks_a_question(core)
            and _CAREER.search(core) is not None
        )
        return "a question after the greeting" if asks else None
    if intent == "offtopic":
        found = _CAREER.search(text)
        return found.group(0) if found else None
    if intent == "resume":
        others = _OTHERS_RESUMES_RE.search(text)
        if others is not None:
            return others.group(0)
        found = _DOC_LENGTH.search(text)
        return found.group(0) if found and not _DOC_REQUEST.search(text) else None
    if intent != "booking" or _MOCK_INTERVIEW.search(text):
        return None  # a mock interview is one of Summer's sessions, whatever else the message says
    found = _BOOKING_VETO.search(text)
    if found is None:
        return None
    clauses = [part for part in CLAUSE_END.split(text) if part.strip()]
    last = clauses[-1] if clauses else text
    if len(clauses) > 1 and SUMMERS_SESSION.search(last) and not _BOOKING_VETO.search(last):
        return None
    return found.group(0)


def match_rules(message: str) -> Rule | None:
    """The first rule that applies to the normalised message, or None."""
    text = normalise(message)
    for rule in RULES:
        if rule.applies(text):
            return rule
    return None
