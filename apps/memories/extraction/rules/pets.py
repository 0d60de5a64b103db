"""Pets: species and breeds, "my dog Bruno", "a golden retriever named Bruno", and the pets of a list
("two cats, Milo and Luna") (docs/extraction.md, "Fact rules" and "Entities").
"""

from __future__ import annotations

import re

from apps.memories.extraction.rules._base import _X, _Context, _entity, _fact, _Found, _group, _predicate, _rule, _said
from apps.memories.extraction.rules._clauses import _Clause
from apps.memories.extraction.rules._names import _person_name
from apps.memories.extraction.rules._text import _LIST_SEPARATOR, _fold, _last_words, _squash
from apps.memories.extraction.rules._types import ExtractedEntity
from apps.memories.extraction.rules.vocabulary import _BREED_SPECIES, _PET_RE, _SPECIES_CANONICAL


def _pet_species(said: str) -> tuple[str, str | None]:
    said = _squash(said)
    if said in _SPECIES_CANONICAL:
        return _SPECIES_CANONICAL[said], None
    return _BREED_SPECIES.get(said, said), said


def _pet_entity(name: str, said_species: str) -> ExtractedEntity | None:
    species, breed = _pet_species(said_species)
    return _entity("pet", name, species=species, breed=breed) if breed else _entity("pet", name, species=species)


def _is_pet(said: str) -> bool:
    said = _squash(said)
    return said in _SPECIES_CANONICAL or said in _BREED_SPECIES


def _pet_appositive(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
    """ "my dog Bruno", "a golden retriever named Bruno": the pet entity; owning determiners add the fact."""
    is_named = bool(match.group("named"))
    if not is_named and not context.case.is_informative:
        return []  # "my dog barked": without capitals or "named" the next word is not a name
    name = _person_name(_group(match, clause, "x"), context.case, accept_lower=is_named)
    if not name:
        return []
    said = _said(match, "who")
    pet = _pet_entity(name, said)
    if _said(match, "determiner") in ("my", "our"):
        return [_fact(_predicate(f"has a {said} named", name), pet)]
    return [_fact("", pet)]  # entity only: "I have a dog named Bruno" states the fact itself


PET_APPOSITIVE = _rule(
    "pet_appositive",
    r"\b(?P<determiner>my|our|a|an)\s+(?:(?:new|little|old|baby|rescue|sweet|adopted|senior|young)\s+)?"
    rf"(?P<who>{_PET_RE})(?:\s*,\s*|\s+(?P<named>named|called)\s+|\s+){_X}",
    _pet_appositive,
    triggers=[*_last_words(_SPECIES_CANONICAL), *_last_words(_BREED_SPECIES)],
    is_independent=True,
)


_PET_LIST = re.compile(
    rf"\b(?:two|three|four|five|\d)\s+(?P<who>{_PET_RE}|dogs|cats|puppies|kittens|rabbits|birds|hamsters)\s*"
    r"(?:,\s*|\s+(?:named|called)\s+)(?P<x>\S.*)",
    re.IGNORECASE,
)


def _plural_pet_entities(raw: str, context: _Context) -> list[ExtractedEntity | None]:
    """ "two cats, Milo and Luna" -> pet:milo, pet:luna."""
    listed = _PET_LIST.search(_fold(raw))
    if not listed:
        return []
    said = listed.group("who").lower()
    singular = said[:-3] + "y" if said.endswith("ies") else said.removesuffix("s")
    entities: list[ExtractedEntity | None] = []
    for part in _LIST_SEPARATOR.split(raw[listed.start("x") :])[:6]:
        name = _person_name(part, context.case)
        if not name:
            break
        entities.append(_pet_entity(name, singular))
    return entities
