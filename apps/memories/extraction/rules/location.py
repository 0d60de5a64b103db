"""Places: where the user is from, lives, moved to or is based, and where a business is located
(slots ``location:residence`` and ``location:business``; docs/extraction.md, "Fact rules" and "Business
facts").
"""

from __future__ import annotations

import re

from apps.memories.extraction.rules._base import (
    _I,
    _IM,
    _X,
    _Context,
    _entity,
    _fact,
    _Found,
    _group,
    _Handler,
    _no_longer,
    _object,
    _predicate,
    _rule,
    _said,
)
from apps.memories.extraction.rules._clauses import _Clause
from apps.memories.extraction.rules._names import _leading_phrase
from apps.memories.extraction.rules._text import _words
from apps.memories.extraction.rules._types import SCOPE_TENANT, ExtractedEntity


def _place(match: re.Match[str], clause: _Clause, context: _Context) -> tuple[str | None, ExtractedEntity | None]:
    """The place a location rule names, and its entity: "Canada last year" -> ("Canada", location:canada).
    Without a proper place ("a small town near Pune") the trimmed object is stated and no entity made."""
    place = _leading_phrase(_group(match, clause, "x"), context.case, max_tokens=4, allow_region=True)
    if place:
        return place, _entity("location", place)
    return _object(match, clause), None


def _place_fact(verb: str, *, slot: str | None) -> _Handler:
    def handle(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
        place, location = _place(match, clause, context)
        return [_fact(_predicate(verb, place), location, slot=slot)] if place else []

    return handle


def _from(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
    verb = "is originally from" if match.group("originally") else "is from"
    return _place_fact(verb, slot=None)(match, clause, context)


FROM = _rule(
    "from",
    rf"(?:{_IM}|{_I}come\s+)(?P<originally>originally\s+)?from\s+{_X}",
    _from,
    triggers=_words("from"),
)

LIVE_NOT = _rule(
    "live_not",
    rf"{_I}(?P<negation>no\s+longer|don'?t|do\s+not)\s+live\s+in\s+{_X}",
    _no_longer("live in", slot="location:residence", entity_type="location"),
    triggers=_words("live"),
)


def _residence(*, is_move: bool) -> _Handler:
    def handle(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
        place, location = _place(match, clause, context)
        if not place:
            return []
        is_business = context.scope == SCOPE_TENANT and _said(match, "subject").startswith("we")
        if is_business:
            found = _fact(_predicate("is located in", place), location, slot="location:business")
        else:
            found = _fact(_predicate("lives in", place), location, slot="location:residence")
        found.is_correction = is_move
        return [found]

    return handle


LIVE_IN = _rule(
    "live_in",
    rf"\b(?P<subject>i|we)\s+(?:currently\s+|now\s+|still\s+|also\s+|actually\s+)?live\s+in\s+{_X}",
    _residence(is_move=False),
    triggers=_words("live"),
)

LIVING_IN = _rule(
    "living_in",
    rf"(?P<subject>{_IM})(?:currently\s+|now\s+|still\s+)?living\s+in\s+{_X}",
    _residence(is_move=False),
    triggers=_words("living"),
)

MOVED_TO = _rule(
    "moved_to",
    r"\b(?P<subject>i|we|ive)\s*(?:'\s*ve|\s+have)?\s+(?:just\s+|recently\s+|finally\s+|now\s+|since\s+|also\s+)?"
    rf"(?:moved|relocated)\s+to\s+{_X}",
    _residence(is_move=True),
    triggers=_words("moved relocated"),
)


def _based_in(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
    place, location = _place(match, clause, context)
    if not place:
        return []
    is_business = context.scope == SCOPE_TENANT and _said(match, "subject").startswith("we")
    slot = "location:business" if is_business else "location:residence"
    return [_fact(_predicate("is based in", place), location, slot=slot)]


BASED_IN = _rule(
    "based_in",
    rf"(?P<subject>{_IM}|\bwe\s*'\s*re\s+|\bwe\s+are\s+)(?:currently\s+|now\s+)?based\s+in\s+{_X}",
    _based_in,
    triggers=_words("based"),
)


def _business_located(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
    place, location = _place(match, clause, context)
    return [_fact(_predicate("is located in", place), location, slot="location:business")] if place else []


BUSINESS_LOCATED = _rule(
    "business_located",
    r"\b(?:we\s*'\s*re|we\s+are|our\s+(?:[a-z]+\s+){0,2}?(?:shop|store|business|company|office|offices|restaurant|"
    r"cafe|café|studio|clinic|salon|bakery|agency|firm|startup|brand|hq|headquarters|warehouse|factory|showroom|"
    r"outlet|branch|practice)\s+(?:is|are))\s+(?:now\s+|currently\s+)?(?:located|situated)\s+in\s+" + _X,
    _business_located,
    triggers=_words("located situated"),
)

LOCATED_IN = _rule(
    "located_in",
    rf"\blocated\s+in\s+{_X}",
    _business_located,
    triggers=_words("located"),
    scope=SCOPE_TENANT,
)
