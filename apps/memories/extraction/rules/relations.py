"""Relatives: "my manager is Ravi", "my sister is called Maya", "my wife Priya …", "my mom lives in
Chennai", "my dad was a teacher" (these rules also read pets: "my dog's name is Bruno"), and the
unnamed one-at-a-time relatives a turn mentions ("my mom" → ``person:mom``) (docs/extraction.md,
"Fact rules" and "Entities").
"""

from __future__ import annotations

import re

from apps.memories.extraction.rules._base import (
    _MY,
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
from apps.memories.extraction.rules._names import _CaseMode, _leading_phrase, _person_name
from apps.memories.extraction.rules._text import _alternation, _fold, _last_words, _squash, _trim, _words, slugify
from apps.memories.extraction.rules._types import MEMORY_TYPE_FACT, MEMORY_TYPE_PREFERENCE, ExtractedEntity
from apps.memories.extraction.rules.pets import _is_pet, _pet_entity
from apps.memories.extraction.rules.vocabulary import (
    _BREED_SPECIES,
    _PET_RE,
    _RELATION_CANONICAL,
    _RELATION_MODIFIERS,
    _RELATION_RE,
    _SINGLE_RELATION_WORDS,
    _SINGLE_RELATIONS,
    _SPECIES_CANONICAL,
)


def _relation_parts(said: str) -> tuple[str, str]:
    """("older sister", "older sister"), ("mother", "mom"): the words as said and the canonical relation."""
    said = _squash(said)
    for modifier in _RELATION_MODIFIERS:
        for joiner in (" ", "-"):
            if said.startswith(modifier + joiner) and said[len(modifier) + 1 :] in _RELATION_CANONICAL:
                return said, f"{modifier} {_RELATION_CANONICAL[said[len(modifier) + 1 :]]}"
    return said, _RELATION_CANONICAL.get(said, said)


def _is_relation(said: str) -> bool:
    said = _squash(said)
    if said in _RELATION_CANONICAL:
        return True
    modifier, _, rest = said.replace("-", " ", 1).partition(" ")
    return modifier in _RELATION_MODIFIERS and rest in _RELATION_CANONICAL


def _named_relation_facts(relation_said: str, name: str) -> list[_Found]:
    said, canonical = _relation_parts(relation_said)
    person = _entity("person", name, relation=canonical)
    if canonical in _SINGLE_RELATIONS:
        return [
            _fact(_predicate(f"{said} is", name), person, slot=f"relation:{slugify(canonical)}", is_possessive=True)
        ]
    return [_fact(_predicate(f"has a {said} named", name), person)]


_KIN_AND_PET_WORDS = [*_last_words(_RELATION_CANONICAL), *_last_words(_SPECIES_CANONICAL), *_last_words(_BREED_SPECIES)]


def _pet_or_relation_name(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
    """ "my dog's name is Bruno", "my sister is called Maya"."""
    said = _said(match, "who")
    name = _person_name(_group(match, clause, "x"), context.case, accept_lower=True)
    if not name:
        return []
    if _is_pet(said):
        return [_fact(_predicate(f"has a {said} named", name), _pet_entity(name, said))]
    if _is_relation(said):
        return _named_relation_facts(said, name)
    return []


PET_OR_RELATION_NAME = _rule(
    "pet_or_relation_name",
    rf"{_MY}(?P<who>{_PET_RE}|{_RELATION_RE})\s*"
    rf"(?:'s\s+name\s+is|\s+is\s+(?:called|named)|\s+name\s+is|'s\s+called)\s+{_X}",
    _pet_or_relation_name,
    triggers=_words("name named called"),
)


def _relation_appositive(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
    """ "my wife Priya ..." -> "wife is Priya"; "my friend Sam ..." -> "has a friend named Sam"."""
    if not context.case.is_informative:
        return []  # "my sister visited": without capitals the next word is not a name
    name = _person_name(_group(match, clause, "x"), context.case)
    if not name:
        return []
    return _named_relation_facts(_said(match, "who"), name)


RELATION_APPOSITIVE = _rule(
    "relation_appositive",
    rf"{_MY}(?P<who>{_RELATION_RE}),?\s+{_X}",
    _relation_appositive,
    triggers=_last_words(_RELATION_CANONICAL),
    is_independent=True,
)


# verb as said -> (verb as stated, entity type of its object)
_RELATIVE_VERB: dict[str, tuple[str, str | None]] = {
    "lives in": ("lives in", "location"),
    "lives with": ("lives with", None),
    "works at": ("works at", "organization"),
    "works for": ("works for", "organization"),
    "works as": ("works as", None),
    "studies at": ("studies at", "school"),
    "goes to": ("goes to", None),
    "is from": ("is from", "location"),
    "comes from": ("comes from", "location"),
    "moved to": ("moved to", "location"),
    "is allergic to": ("is allergic to", None),
    "loves": ("loves", None),
    "likes": ("likes", None),
    "hates": ("hates", None),
    "doesn't like": ("doesn't like", None),
    "does not like": ("doesn't like", None),
    "adores": ("adores", None),
    "enjoys": ("enjoys", None),
}
_RELATIVE_POLARITY = {"loves": 1, "likes": 1, "adores": 1, "enjoys": 1, "hates": -1, "doesn't like": -1}


def _relative_does(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
    """ "my mom lives in Chennai", "my dog Bruno loves belly rubs": facts and preferences of a relative or pet."""
    who = _said(match, "who")
    name_raw = _group(match, clause, "name")
    name = _person_name(name_raw, context.case) if name_raw else None
    if name_raw and not name:
        return []
    obj = _object(match, clause)
    if not obj:
        return []
    verb, object_type = _RELATIVE_VERB[_said(match, "verb")]
    entities: list[ExtractedEntity | None] = []
    if _is_pet(who):
        entities.append(_pet_entity(name, who) if name else None)
    else:
        _said_relation, canonical = _relation_parts(who)
        if name:
            entities.append(_entity("person", name, relation=canonical))
        elif canonical in _SINGLE_RELATIONS:
            entities.append(_entity("person", canonical, relation=canonical))
    if object_type:
        place = _leading_phrase(_group(match, clause, "x"), context.case, max_tokens=4, allow_region=True)
        entities.append(_entity(object_type, place) if place else None)
    subject = f"{who} {name}" if name else who
    polarity = _RELATIVE_POLARITY.get(verb, 0)
    kind = MEMORY_TYPE_PREFERENCE if polarity else MEMORY_TYPE_FACT
    found = _Found(kind, _predicate(f"{subject} {verb}", obj), [e for e in entities if e], polarity=polarity)
    found.is_possessive = True
    return [found]


RELATIVE_DOES = _rule(
    "relative_does",
    rf"{_MY}(?P<who>{_PET_RE}|{_RELATION_RE})(?:\s+(?P<name>[^\W\d_][\w'-]*))??"
    r"(?:\s+(?:really|also|still|now|currently|just|absolutely))?\s+"
    rf"(?P<verb>{_alternation(_RELATIVE_VERB)})\s+{_X}",
    _relative_does,
    triggers=_KIN_AND_PET_WORDS,
)


_DESCRIPTION_START = re.compile(
    r"^(?:(?:a|an)\s|(?:\d{1,3}|one|two|three|four|five|six|seven|eight|nine|ten)\b|(?:originally\s+)?from\s|"
    r"allergic\s|retired\b|married\b|pregnant\b|in\s+(?:the\s+)?(?:army|navy|hospital|college|school|university)\b)",
    re.IGNORECASE,
)


_LEADING_NOW = re.compile(r"^now\s+", re.IGNORECASE)
_FROM = re.compile(r"(?:originally\s+)?from\s+", re.IGNORECASE)


def _relative_is(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
    """ "my manager is Ravi" (named, slot for one-at-a-time relations) or "my mom is a teacher" (description)."""
    who = _said(match, "who")
    raw = _group(match, clause, "x")
    raw_after_now = _LEADING_NOW.sub("", raw)
    name = _person_name(raw_after_now, context.case)
    verb = _said(match, "verb").replace("'s", "is")
    if name and verb == "is" and _trim(raw_after_now[len(name) :]) == "" and _is_relation(who):
        return _named_relation_facts(who, name)
    if _is_pet(who) and name and verb == "is" and _trim(raw_after_now[len(name) :]) == "":
        return [_fact(_predicate(f"has a {who} named", name), _pet_entity(name, who))]
    if not _DESCRIPTION_START.match(raw.lstrip()):
        return []
    obj = _object(match, clause)
    if not obj:
        return []
    entities: list[ExtractedEntity | None] = []
    if _is_relation(who):
        _said_relation, canonical = _relation_parts(who)
        if canonical in _SINGLE_RELATIONS:
            entities.append(_entity("person", canonical, relation=canonical))
    from_place = _FROM.match(raw.lstrip())
    if from_place:
        place = _leading_phrase(raw.lstrip()[from_place.end() :], context.case, max_tokens=4, allow_region=True)
        entities.append(_entity("location", place) if place else None)
    return [_fact(_predicate(f"{who} {verb}", obj), *entities, is_possessive=True)]


RELATIVE_IS = _rule(
    "relative_is",
    rf"{_MY}(?P<who>{_PET_RE}|{_RELATION_RE})\s*(?P<verb>is|'s|was)\s+{_X}",
    _relative_is,
    triggers=_KIN_AND_PET_WORDS,
)


_UNNAMED_RELATIVE = re.compile(
    rf"\b(?:my|our)\s+(?P<who>{_alternation(_SINGLE_RELATION_WORDS)})(?!\w)(?P<after>\s*\S*)", re.IGNORECASE
)


def _relative_mentions(text: str, case: _CaseMode) -> list[tuple[int, ExtractedEntity]]:
    """ "my mom", "my boss" without a name: person:mom, person:boss (one person per such relation)."""
    mentions: list[tuple[int, ExtractedEntity]] = []
    for match in _UNNAMED_RELATIVE.finditer(_fold(text)):
        after = text[match.start("after") : match.end("after")].strip()
        if case.is_informative and after and _person_name(after, case):
            continue  # "my wife Priya": the named person is the entity
        canonical = _RELATION_CANONICAL[_squash(match.group("who"))]
        entity = _entity("person", canonical, relation=canonical)
        if entity:
            mentions.append((match.start(), entity))
    return mentions
