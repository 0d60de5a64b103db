"""What the user has: "I have / I've got X" (children, pets, conditions, …; not transient things like a
headache or a meeting) and "I don't have / no longer have X" (docs/extraction.md, "Fact rules"). Each rule is
a row: its pattern and what it states (`_States`, `_Denies`).
"""

from __future__ import annotations

import re

from apps.memories.extraction.rules._base import (
    _I,
    _X,
    _Context,
    _Denies,
    _entity,
    _group,
    _object,
    _rule,
    _States,
)
from apps.memories.extraction.rules._clauses import _Clause
from apps.memories.extraction.rules._names import _person_name
from apps.memories.extraction.rules._text import _fold, _head_noun, _words
from apps.memories.extraction.rules._types import ExtractedEntity
from apps.memories.extraction.rules.pets import _is_pet, _plural_pet_entities
from apps.memories.extraction.rules.relations import _is_relation, _relation_parts
from apps.memories.extraction.rules.vocabulary import _RELATION_RE

_HAVE_STARTS = frozenset(
    _words("""
    a an one two three four five six seven eight nine ten twin twins some several many lots kids children pets
    dogs cats siblings brothers sisters sons daughters grandkids grandchildren diabetes asthma adhd autism
    allergies celiac epilepsy arthritis migraines insomnia anxiety depression ocd ptsd dyslexia tattoos
    piercings braces glasses roommates any
    """)
)
_TRANSIENT_HEADS = frozenset(
    _words("""
    headache cold fever flu cough rash hangover cramps meeting meetings exam exams test interview question
    questions problem problems issue issues idea appointment date flight call presentation deadline doubt
    feeling minute minutes moment second chance day days night week weekend time class shift party lot ton
    bunch plan plans nightmare fight argument surgery trip vacation holiday report errand errands work
    homework assignment quick way lot mess thing things sec clue idea point bit few couple
    """)
)


_NAMED_RELATIVE = re.compile(rf"\b(?P<who>{_RELATION_RE})\s+(?:named|called)\s+(?P<x>\S.*)", re.IGNORECASE)


def _owned_entities(raw: str, context: _Context) -> list[ExtractedEntity | None]:
    """ "a sister named Maya" -> person:maya {relation: sister}; single pets are typed by the appositive rule."""
    entities: list[ExtractedEntity | None] = _plural_pet_entities(raw, context)
    for named in _NAMED_RELATIVE.finditer(_fold(raw)):
        name = _person_name(raw[named.start("x") :], context.case, accept_lower=True)
        if name:
            entities.append(_entity("person", name, relation=_relation_parts(named.group("who"))[1]))
    return entities


def _is_no_possession(raw: str) -> bool:
    return _head_noun(raw) in _TRANSIENT_HEADS or _head_noun(raw) in ("idea", "time", "clue", "money")


HAVE_NOT = _rule(
    "have_not",
    rf"{_I}(?P<negation>don'?t|do\s+not|no\s+longer)\s+have\s+{_X}",
    _Denies(no_longer="no longer has", negated="doesn't have", unless=_is_no_possession),
    triggers=_words("have"),
)


def _possession(
    match: re.Match[str], clause: _Clause, context: _Context
) -> tuple[str | None, list[ExtractedEntity | None]]:
    """ "two kids", "a sister named Maya" (and Maya): only what starts like a lasting possession."""
    raw = _group(match, clause, "x")
    first = raw.split()[0].lower().strip(",.") if raw.split() else ""
    if not (first in _HAVE_STARTS or first.isdigit() or _is_pet(first) or _is_relation(first)):
        return None, []
    if _head_noun(raw) in _TRANSIENT_HEADS:
        return None, []
    obj = _object(match, clause)
    if not obj:
        return None, []
    return obj, _owned_entities(raw, context)


HAVE = _rule(
    "have",
    rf"(?:\bi\s*(?:'\s*ve|\s+have)\s+got|\bive\s+got|{_I}(?:also\s+|still\s+|now\s+|even\s+|actually\s+)?have"
    rf"|\bi\s*'\s*ve|\bive)\s+{_X}",
    _States("has", _possession),
    triggers=_words("have ve ive got"),
)
