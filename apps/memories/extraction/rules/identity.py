"""Who the user is: their name and nickname, age, what they are ("I'm a nurse", "I'm not a morning
person"), stable states ("vegetarian", "married to Priya") and nationality or faith
(docs/extraction.md, "Fact rules"). Each rule is a row: its pattern and what it states (`_States`, `_Denies`);
the readings below are what differs. The age rules state "is N years old" themselves.
"""

from __future__ import annotations

import re

from apps.memories.extraction.rules._base import (
    _IM,
    _X,
    _Context,
    _Denies,
    _entity,
    _fact,
    _Found,
    _group,
    _object,
    _Reading,
    _rule,
    _States,
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

_Named = tuple[str | None, list[ExtractedEntity | None]]


def _own_name(*, accept_lower: bool = False) -> _Reading:
    """The user's own name, remembered so the name scan does not also make it an entity of someone else."""

    def read(match: re.Match[str], clause: _Clause, context: _Context) -> _Named:
        name = _person_name(_group(match, clause, "x"), context.case, accept_lower=accept_lower)
        if name:
            context.own_name_slugs.add(slugify(name))
        return name, []

    return read


MY_NAME = _rule(
    "my_name",
    rf"\bmy\s+(?:full\s+|first\s+|real\s+)?name\s*(?:is|'s)\s+{_X}",
    _States("name is", _own_name(accept_lower=True), slot="name", is_possessive=True),
    triggers=_words("name"),
)


GOES_BY = _rule(
    "goes_by",
    rf"\b(?:call\s+me|i\s+go\s+by|people\s+call\s+me|everyone\s+calls\s+me|friends\s+call\s+me)\s+{_X}",
    _States("goes by", _own_name(), slot="nickname"),
    triggers=_words("call calls go"),
)


def _introduced_name(match: re.Match[str], clause: _Clause, context: _Context) -> _Named:
    """ "I'm Arjun": a whole clause that is a capitalised name, not a nationality or a common word."""
    if not context.case.is_informative:
        return None, []
    said = _trim(_group(match, clause, "x"))
    name = _person_name(said, context.case)
    if not name or name != said or name.lower() in _NATIONALITIES_AND_FAITHS or name.lower() in COMMON_WORDS:
        return None, []
    context.own_name_slugs.add(slugify(name))
    return name, []


INTRODUCES_SELF = _rule(
    "introduces_self",
    rf"^\W*{_IM}(?P<x>[^\W\d_][\w'-]*(?:\s+[^\W\d_][\w'-]*)?)\s*[.!]*$",
    _States("name is", _introduced_name, slot="name", is_possessive=True),
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


def _is_transient(raw: str) -> bool:
    return _head_noun(raw) in _IDENTITY_TRANSIENT_HEADS  # "I'm not a bit tired" is no identity


IDENTITY_NEGATED = _rule(
    "identity_negated",
    rf"{_IM}(?P<negation>not|no\s+longer)\s+(?P<x>(?:a|an)\s+\S.*)",
    _Denies(no_longer="is no longer", negated="is not", unless=_is_transient),
    triggers=_words("not longer"),
)


def _stable_state(match: re.Match[str], clause: _Clause, context: _Context) -> _Named:
    """ "vegetarian", "married to Priya" (and Priya, the spouse)."""
    obj = _object(match, clause)
    if not obj:
        return None, []
    state = _squash(match.group("state"))
    if state not in ("married to", "engaged to"):
        return obj, []
    name = _person_name(_group(match, clause, "x")[len(match.group("state")) :].lstrip(), context.case)
    relation = "spouse" if state == "married to" else "fiance"
    return obj, [_entity("person", name, relation=relation) if name else None]


def _state_slot(match: re.Match[str]) -> str | None:
    status = _squash(match.group("state")).removesuffix(" to")
    return "attribute:relationship-status" if status in _RELATIONSHIP_STATES else None


STABLE_STATE = _rule(
    "stable_state",
    rf"{_IM}(?:also\s+|now\s+|still\s+)?(?P<x>(?P<state>{_STATE_RE})\b.*)",
    _States("is", _stable_state, slot=_state_slot),
    triggers=None,
)


def _nationality(match: re.Match[str], clause: _Clause, context: _Context) -> _Named:
    word = _group(match, clause, "x")
    if word.lower().replace(" ", "-") not in _NATIONALITIES_AND_FAITHS:
        return None, []
    return word[:1].upper() + word[1:], []


NATIONALITY = _rule(
    "nationality",
    rf"{_IM}(?P<x>[a-z]+(?:[\s-][a-z]+)?)\s*[.!,]*$",
    _States("is", _nationality),
    triggers=None,
)


def _identity(match: re.Match[str], clause: _Clause, context: _Context) -> _Named:
    """ "a nurse at Apollo Hospital" (and Apollo Hospital, the workplace; a school for a student)."""
    raw = _group(match, clause, "x")
    head = _head_noun(raw)
    if not head or head in _IDENTITY_TRANSIENT_HEADS or _first_content_word(raw) in _IDENTITY_TRANSIENT_HEADS:
        return None, []
    obj = _object(match, clause)
    if not obj:
        return None, []
    at = _AT_ORGANISATION.search(raw)
    organisation = _leading_phrase(at.group("org"), context.case, max_tokens=5) if at else None
    if not organisation:
        return obj, []
    return obj, [_entity("school" if head in _STUDENT_HEADS else "workplace", organisation)]


IDENTITY = _rule(
    "identity",
    rf"{_IM}(?:now\s+|also\s+|still\s+)?(?P<x>(?:a|an)\s+\S.*)",
    _States("is", _identity),
    triggers=_words("a an"),
)
