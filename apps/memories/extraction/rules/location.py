"""Places: where the user is from, lives, moved to or is based, and where a business is located
(slots ``location:residence`` and ``location:business``; docs/extraction.md, "Fact rules" and "Business
facts"). Each rule is a row: its pattern and what it states (`_States`, `_WeOrI`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from apps.memories.extraction.rules._base import (
    _I,
    _IM,
    _X,
    _Context,
    _Found,
    _named,
    _no_longer,
    _rule,
    _said,
    _States,
)
from apps.memories.extraction.rules._clauses import _Clause
from apps.memories.extraction.rules._text import _words
from apps.memories.extraction.rules._types import SCOPE_TENANT

# The place a location rule names, and its entity: "Canada last year" -> ("Canada", location:canada). Without a
# proper place ("a small town near Pune") the trimmed object is stated and no entity made.
_PLACE = _named("location", max_tokens=4, allow_region=True, name_is_said=True)


def _is_from(match: re.Match[str], clause: _Clause) -> str:
    return "is originally from" if match.group("originally") else "is from"


@dataclass(frozen=True)
class _WeOrI:
    """A place rule whose subject decides whose place it is: in the tenant scope "we ..." states the
    business's, anything else the person's."""

    personal: _States
    business: _States

    def __call__(self, match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
        is_business = context.scope == SCOPE_TENANT and _said(match, "subject").startswith("we")
        return (self.business if is_business else self.personal)(match, clause, context)


def _residence(*, is_move: bool) -> _WeOrI:
    return _WeOrI(
        personal=_States("lives in", _PLACE, slot="location:residence", is_correction=is_move),
        business=_States("is located in", _PLACE, slot="location:business", is_correction=is_move),
    )


FROM = _rule(
    "from",
    rf"(?:{_IM}|{_I}come\s+)(?P<originally>originally\s+)?from\s+{_X}",
    _States(_is_from, _PLACE),
    triggers=_words("from"),
)

LIVE_NOT = _rule(
    "live_not",
    rf"{_I}(?P<negation>no\s+longer|don'?t|do\s+not)\s+live\s+in\s+{_X}",
    _no_longer("live in", slot="location:residence", entity_type="location"),
    triggers=_words("live"),
)


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


BASED_IN = _rule(
    "based_in",
    rf"(?P<subject>{_IM}|\bwe\s*'\s*re\s+|\bwe\s+are\s+)(?:currently\s+|now\s+)?based\s+in\s+{_X}",
    _WeOrI(
        personal=_States("is based in", _PLACE, slot="location:residence"),
        business=_States("is based in", _PLACE, slot="location:business"),
    ),
    triggers=_words("based"),
)


_BUSINESS_PLACE = _States("is located in", _PLACE, slot="location:business")

BUSINESS_LOCATED = _rule(
    "business_located",
    r"\b(?:we\s*'\s*re|we\s+are|our\s+(?:[a-z]+\s+){0,2}?(?:shop|store|business|company|office|offices|restaurant|"
    r"cafe|café|studio|clinic|salon|bakery|agency|firm|startup|brand|hq|headquarters|warehouse|factory|showroom|"
    r"outlet|branch|practice)\s+(?:is|are))\s+(?:now\s+|currently\s+)?(?:located|situated)\s+in\s+" + _X,
    _BUSINESS_PLACE,
    triggers=_words("located situated"),
)

LOCATED_IN = _rule(
    "located_in",
    rf"\blocated\s+in\s+{_X}",
    _BUSINESS_PLACE,
    triggers=_words("located"),
    scope=SCOPE_TENANT,
)
