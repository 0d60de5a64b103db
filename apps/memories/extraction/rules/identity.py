"""Who the user is: their name and nickname, age, what they are ("I'm a nurse", "I'm not a morning
person"), stable states ("vegetarian", "married to Priya") and nationality or faith
(docs/extraction.md, "Fact rules").
"""

from __future__ import annotations

import re

from apps.memories.extraction.rules._base import (
    _IM,
    _X,
    _Context,
    _entity,
    _fact,
    _Found,
    _group,
    _negated_fact,
    _object,
    _predicate,
    _rule,
)
from apps.memories.extraction.rules._clauses import _Clause
from apps.memories.extraction.rules._names import _leading_phrase, _person_name
from apps.memories.extraction.rules._text import (
    _CHUNK_WORD,
    _DETERMINERS,
    _alternation,
    _head_noun,
    _squash,
    _trim,
    _words,
    slugify,
)
from apps.memories.extraction.rules._types import ExtractedEntity
from apps.memories.extraction.rules.vocabulary import _NATIONALITIES_AND_FAITHS, COMMON_WORDS


def _my_name(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
    name = _person_name(_group(match, clause, "x"), context.case, accept_lower=True)
    if not name:
        return []
    context.own_name_slugs.add(slugify(name))
    return [_fact(_predicate("name is", name), slot="name", is_possessive=True)]


MY_NAME = _rule(
    "my_name",
    rf"\bmy\s+(?:full\s+|first\s+|real\s+)?name\s*(?:is|'s)\s+{_X}",
    _my_name,
    triggers=_words("name"),
)


def _goes_by(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
    name = _person_name(_group(match, clause, "x"), context.case)
    if not name:
        return []
    context.own_name_slugs.add(slugify(name))
    return [_fact(_predicate("goes by", name), slot="nickname")]


GOES_BY = _rule(
    "goes_by",
    rf"\b(?:call\s+me|i\s+go\s+by|people\s+call\s+me|everyone\s+calls\s+me|friends\s+call\s+me)\s+{_X}",
    _goes_by,
    triggers=_words("call calls go"),
)


def _introduces_self(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
    if not context.case.is_informative:
        return []
    said = _trim(_group(match, clause, "x"))
    name = _person_name(said, context.case)
    if not name or name != said or name.lower() in _NATIONALITIES_AND_FAITHS or name.lower() in COMMON_WORDS:
        return []
    context.own_name_slugs.add(slugify(name))
    return [_fact(_predicate("name is", name), slot="name", is_possessive=True)]


INTRODUCES_SELF = _rule(
    "introduces_self",
    rf"^\W*{_IM}(?P<x>[^\W\d_][\w'-]*(?:\s+[^\W\d_][\w'-]*)?)\s*[.!]*$",
    _introduces_self,
    triggers=_words("i im"),
)


_AGE_FOLLOWERS = frozenset(_words("and but so now btw lol haha too actually already though tho lmao"))


def _age(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
    years = int(match.group("x"))
    if not 1 <= years <= 120:
        return []
    if not match.group("unit"):
        rest = clause.folded[match.end() :].lstrip()
        if rest and rest[0].isalnum():
            if rest.split()[0].lower().strip(".,!?") not in _AGE_FOLLOWERS:
                return []
        elif rest and rest[0] in "%'\"/":
            return []
    return [_fact(f"is {years} years old", slot="age")]


AGE = _rule(
    "age",
    rf"{_IM}(?:now\s+|just\s+)?(?P<x>\d{{1,3}})(?P<unit>\s*(?:years?|yrs?)(?:\s*old)?\b|\s*y\.?\s*/?o\b\.?)?",
    _age,
    triggers=None,  # digits
)

AGE_TURNED = _rule(
    "age_turned",
    r"\bi\s+(?:just\s+|recently\s+)?turned\s+(?P<x>\d{1,3})(?P<unit>)\b",
    _age,
    triggers=_words("turned"),
)

AGE_IS = _rule(
    "age_is",
    r"\bmy\s+age\s+is\s+(?P<x>\d{1,3})(?P<unit>)\b",
    _age,
    triggers=_words("age"),
)


_STABLE_STATES = (
    "vegetarian",
    "vegan",
    "pescatarian",
    "lactose intolerant",
    "gluten intolerant",
    "gluten free",
    "left handed",
    "left-handed",
    "right handed",
    "right-handed",
    "colou?r ?blind",
    "diabetic",
    "celiac",
    "coeliac",
    "epileptic",
    "asthmatic",
    "autistic",
    "dyslexic",
    "deaf",
    "blind",
    "sober",
    "teetotal",
    "single",
    "married",
    "engaged",
    "divorced",
    "separated",
    "widowed",
    "in a relationship",
    "retired",
    "pregnant",
    "unemployed",
    "self[ -]employed",
    "introverted",
    "extroverted",
    "an introvert",
    "an extrovert",
    "allergic to",
    "married to",
    "engaged to",
)
_RELATIONSHIP_STATES = frozenset(
    {"single", "married", "engaged", "divorced", "separated", "widowed", "in a relationship"}
)


_STATE_RE = _alternation(_STABLE_STATES)


_IDENTITY_TRANSIENT_HEADS = frozenset(
    _words("bit little tad lot few couple mess wreck minute second moment day week hour mile way bundle disaster")
)
_STUDENT_HEADS = frozenset(_words("student undergrad undergraduate freshman sophomore junior senior pupil postdoc"))


def _first_content_word(text: str) -> str:
    for word in _CHUNK_WORD.findall(text.lower()):
        if word not in _DETERMINERS:
            return word
    return ""


_AT_ORGANISATION = re.compile(r"\s(?:at|with|for)\s+(?P<org>\S.*)", re.IGNORECASE)


def _identity_negated(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
    raw = _group(match, clause, "x")
    if _head_noun(raw) in _IDENTITY_TRANSIENT_HEADS:
        return []
    return _negated_fact(match, clause, no_longer="is no longer", negated="is not")


IDENTITY_NEGATED = _rule(
    "identity_negated",
    rf"{_IM}(?P<negation>not|no\s+longer)\s+(?P<x>(?:a|an)\s+\S.*)",
    _identity_negated,
    triggers=_words("not longer"),
)


def _stable_state(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
    obj = _object(match, clause)
    if not obj:
        return []
    state = _squash(match.group("state"))
    entities: list[ExtractedEntity | None] = []
    if state in ("married to", "engaged to"):
        name = _person_name(_group(match, clause, "x")[len(match.group("state")) :].lstrip(), context.case)
        entities.append(
            _entity("person", name, relation="spouse" if state == "married to" else "fiance") if name else None
        )
    status = state.removesuffix(" to")
    slot = "attribute:relationship-status" if status in _RELATIONSHIP_STATES else None
    return [_fact(_predicate("is", obj), *entities, slot=slot)]


STABLE_STATE = _rule(
    "stable_state",
    rf"{_IM}(?:also\s+|now\s+|still\s+)?(?P<x>(?P<state>{_STATE_RE})\b.*)",
    _stable_state,
    triggers=None,
)


def _nationality(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
    word = _group(match, clause, "x")
    if word.lower().replace(" ", "-") not in _NATIONALITIES_AND_FAITHS:
        return []
    return [_fact(_predicate("is", word[:1].upper() + word[1:]))]


NATIONALITY = _rule(
    "nationality",
    rf"{_IM}(?P<x>[a-z]+(?:[\s-][a-z]+)?)\s*[.!,]*$",
    _nationality,
    triggers=None,
)


def _identity(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
    raw = _group(match, clause, "x")
    head = _head_noun(raw)
    if not head or head in _IDENTITY_TRANSIENT_HEADS or _first_content_word(raw) in _IDENTITY_TRANSIENT_HEADS:
        return []
    obj = _object(match, clause)
    if not obj:
        return []
    entities: list[ExtractedEntity | None] = []
    at = _AT_ORGANISATION.search(raw)
    if at:
        organisation = _leading_phrase(at.group("org"), context.case, max_tokens=5)
        if organisation:
            entities.append(_entity("school" if head in _STUDENT_HEADS else "workplace", organisation))
    return [_fact(_predicate("is", obj), *entities)]


IDENTITY = _rule(
    "identity",
    rf"{_IM}(?:now\s+|also\s+|still\s+)?(?P<x>(?:a|an)\s+\S.*)",
    _identity,
    triggers=_words("a an"),
)
