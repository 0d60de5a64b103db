"""Attributes and metrics: "my birthday / email / timezone … is X" (slot ``attribute:<attribute>``) and
"our traffic / revenue / followers … is N" (slot ``metric:<metric>``) (docs/extraction.md, "Fact
rules").
"""

from __future__ import annotations

import re

from apps.memories.extraction.rules._base import _X, _Context, _fact, _Found, _group, _object, _predicate, _rule, _said
from apps.memories.extraction.rules._clauses import _Clause
from apps.memories.extraction.rules._text import _alternation, _last_words, _squash, slugify

_METRIC_TERMS = (
    "traffic",
    "revenue",
    "sales",
    "mrr",
    "arr",
    "followers",
    "subscribers",
    "users",
    "customers",
    "clients",
    "signups",
    "sign-ups",
    "visitors",
    "visits",
    "pageviews",
    "page views",
    "views",
    "downloads",
    "installs",
    "orders",
    "leads",
    "conversion rate",
    "conversions",
    "bounce rate",
    "churn rate",
    "churn",
    "retention",
    "open rate",
    "click rate",
    "click-through rate",
    "ctr",
    "engagement rate",
    "engagement",
    "profit",
    "profits",
    "margin",
    "margins",
    "growth",
    "headcount",
    "team size",
    "rating",
    "ranking",
    "rank",
    "score",
    "budget",
    "ad spend",
    "spend",
    "burn rate",
    "runway",
    "valuation",
    "salary",
    "income",
    "rent",
    "aov",
    "ltv",
    "cac",
    "roas",
    "weight",
    "mortgage",
)


_METRIC_VERB = {"was": "was", "were": "were", "are": "are", "are now": "are"}


def _metric(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
    metric = " ".join(
        word if word.isupper() and len(word) > 1 else word.lower() for word in _group(match, clause, "metric").split()
    )
    value = _object(match, clause)
    if not value or len(value.split()) > 8:
        return []
    verb = _METRIC_VERB.get(_said(match, "verb"), "is")
    head = _squash(match.group("head"))
    return [_fact(_predicate(f"{metric} {verb}", value), slot=f"metric:{slugify(head)}", is_possessive=True)]


METRIC = _rule(
    "metric",
    r"(?:\b(?:my|our|the)\s+|^\W*)(?P<metric>(?:[a-z]+\s+){0,2}?(?P<head>"
    + _alternation(_METRIC_TERMS)
    + r"))\s+(?P<verb>is\s+now|is\s+currently|are\s+now|is|are|was|were"
    r"|has\s+(?:grown|gone\s+up|risen|dropped|fallen|gone\s+down)\s+to"
    r"|(?:grew|rose|went\s+up|dropped|fell|went\s+down)\s+to|hit|reached)\s+"
    r"(?P<x>(?:about|around|roughly|nearly|almost|over|under|just\s+over|just\s+under|approximately|~)?\s*"
    r"[$€£₹]?\d.*)",
    _metric,
    triggers=_last_words(_METRIC_TERMS),
)


_ATTRIBUTE_NOUNS = (
    "birthday",
    "birth date",
    "date of birth",
    "email address",
    "email",
    "phone number",
    "address",
    "hometown",
    "home town",
    "job title",
    "job",
    "title",
    "role",
    "position",
    "occupation",
    "profession",
    "major",
    "degree",
    "nationality",
    "religion",
    "zodiac sign",
    "star sign",
    "sign",
    "pronouns",
    "native language",
    "first language",
    "mother tongue",
    "timezone",
    "time zone",
    "height",
    "blood type",
    "diet",
    "goal",
    "dream",
    "dream job",
    "instagram",
    "handle",
    "username",
    "website",
    "shoe size",
)


def _attribute(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
    attribute = _squash(_group(match, clause, "attribute"))
    value = _object(match, clause)
    if not value:
        return []
    verb = "are" if _said(match, "verb") == "are" else "is"
    return [_fact(_predicate(f"{attribute} {verb}", value), slot=f"attribute:{slugify(attribute)}", is_possessive=True)]


ATTRIBUTE = _rule(
    "attribute",
    rf"\bmy\s+(?P<attribute>{_alternation(_ATTRIBUTE_NOUNS)})\s*(?P<verb>is|'s|are)\s+{_X}",
    _attribute,
    triggers=_last_words(_ATTRIBUTE_NOUNS),
)
