"""The business (scope ``tenant``, some also in contact scope): "we are a small bakery in Pune", "our
company is called Acme", "we sell / make / offer X" with product and service entities
(docs/extraction.md, "Business facts").
"""

from __future__ import annotations

import re

from apps.memories.extraction.rules._base import (
    _X,
    _Context,
    _entity,
    _fact,
    _Found,
    _group,
    _object,
    _predicate,
    _rule,
    _said,
)
from apps.memories.extraction.rules._clauses import _Clause
from apps.memories.extraction.rules._names import _leading_phrase
from apps.memories.extraction.rules._text import _LIST_SEPARATOR, _conjugate, _head_noun, _words
from apps.memories.extraction.rules._types import SCOPE_TENANT, ExtractedEntity
from apps.memories.extraction.rules.identity import _IDENTITY_TRANSIENT_HEADS

_BUSINESS_NOUNS = frozenset(
    _words("""
    business company startup agency shop store bakery restaurant cafe café firm brand studio clinic salon
    practice boutique consultancy franchise label manufacturer retailer wholesaler distributor nonprofit
    charity school academy hotel gym team e-commerce ecommerce marketplace platform saas app
    """)
)


_IN_PLACE = re.compile(r"\s(?:in|from)\s+(?P<place>\S.*)", re.IGNORECASE)


def _business_is(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
    raw = _group(match, clause, "x")
    head = _head_noun(raw)
    if context.scope != SCOPE_TENANT and head not in _BUSINESS_NOUNS:
        return []
    if head in _IDENTITY_TRANSIENT_HEADS:
        return []
    obj = _object(match, clause)
    if not obj:
        return []
    located = _IN_PLACE.search(raw)
    place = _leading_phrase(located.group("place"), context.case, max_tokens=4, allow_region=True) if located else None
    return [_fact(_predicate("business is", obj), _entity("location", place) if place else None, is_possessive=True)]


BUSINESS_IS = _rule(
    "business_is",
    r"\b(?:we\s*'\s*re|we\s+are)\s+(?P<x>(?:a|an)\s+\S.*)",
    _business_is,
    triggers=_words("we"),
)


_CALLED = re.compile(r"(?:called|named)\s+(?P<name>\S.*)", re.IGNORECASE)


def _our_business_is(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
    obj = _object(match, clause)
    if not obj:
        return []
    entities: list[ExtractedEntity | None] = []
    called = _CALLED.match(_group(match, clause, "x"))
    if called:
        name = _leading_phrase(called.group("name"), context.case, max_tokens=5)
        entities.append(_entity("organization", name) if name else None)
    return [_fact(_predicate("business is", obj), *entities, is_possessive=True)]


OUR_BUSINESS_IS = _rule(
    "our_business_is",
    rf"\bour\s+(?:business|company|shop|store|startup|brand|agency|firm)\s+is\s+{_X}",
    _our_business_is,
    triggers=_words("our"),
)


_SERVICE_VERBS = frozenset({"offer", "provide"})
_ITEM_DETERMINER = re.compile(r"^(?:a|an|the|some|their|all\s+kinds\s+of|different)\s+", re.IGNORECASE)
_ITEM_TRAILER = re.compile(
    r"(?:\s+(?:sometimes|often|usually|always|online|locally|here|there|mostly|mainly|too|now|these\s+days|"
    r"every\s+\w+|in\s+\S+|at\s+\S+|from\s+\S+|to\s+\S+))+$",
    re.IGNORECASE,
)


def _we_sell(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
    verb = _said(match, "verb")
    if context.scope != SCOPE_TENANT and verb != "sell":
        return []
    obj = _object(match, clause)
    if not obj:
        return []
    entity_type = "service" if verb in _SERVICE_VERBS else "product"
    entities: list[ExtractedEntity | None] = []
    for item in _LIST_SEPARATOR.split(obj)[:5]:
        item = _ITEM_DETERMINER.sub("", item.strip())
        item = _ITEM_TRAILER.sub("", item)
        if item and len(item.split()) <= 4:
            entities.append(_entity(entity_type, item))
    return [_fact(_predicate(_conjugate(verb), obj), *entities)]


WE_SELL = _rule(
    "we_sell",
    r"\bwe\s+(?:also\s+|mainly\s+|mostly\s+|only\s+|primarily\s+|now\s+|just\s+)?"
    r"(?P<verb>sell|make|offer|provide|bake|manufacture|produce|import|export|distribute|design)\s+" + _X,
    _we_sell,
    triggers=_words("we"),
)
