"""What a rule is made of: the pattern fragments the families share, a rule (pattern, handler, trigger
words), what a handler finds, and the helpers handlers use to cut an object and state a fact or a
preference.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from apps.memories.extraction.rules._clauses import _ANYMORE, _Clause
from apps.memories.extraction.rules._names import _CaseMode, _leading_phrase
from apps.memories.extraction.rules._text import (
    _BARE_PRONOUNS,
    _CONJUNCTION_CUT,
    _cap,
    _conjugate,
    _squash,
    _third_person,
    _trim,
    slugify,
)
from apps.memories.extraction.rules._types import MEMORY_TYPE_FACT, MEMORY_TYPE_PREFERENCE, ExtractedEntity

# Pattern fragments (matched case-insensitively against a same-length copy with apostrophes folded)
_I = r"\bi\s+"
_IM = r"\b(?:i\s*'\s*m|i\s+am|im)\s+"
_ID = r"\b(?:i\s*'\s*d|i\s+would)\s+"
_IVE = r"\b(?:i\s*'\s*ve|ive|i\s+have)\s+"
_DONT = r"(?:don'?t|do\s+not)\s+"
_ADVERBS = (
    r"(?:(?:really|just|honestly|truly|genuinely|also|still|actually|totally|absolutely|kinda|kind\s+of|"
    r"sort\s+of|definitely|generally|personally|seriously|do|always|so|quite|much|secretly|now)\s+)*"
)
_MY = r"\b(?:my|our)\s+"
_X = r"(?P<x>\S.*)"


@dataclass
class _Found:
    memory_type: str
    predicate: str
    entities: list[ExtractedEntity]
    slot: str | None = None
    polarity: int = 0
    is_possessive: bool = False
    is_correction: bool = False
    position: int = 0


@dataclass
class _Context:
    scope: str
    case: _CaseMode
    own_name_slugs: set[str]


_Handler = Callable[[re.Match[str], _Clause, _Context], list[_Found]]


@dataclass(frozen=True)
class _Rule:
    name: str
    pattern: re.Pattern[str]
    handle: _Handler
    allow_question: bool = False
    check_hedge: bool = True
    scope: str | None = None  # only in this scope
    # Cheap prefilter: the rule is tried only on clauses containing one of these words (None: always).
    triggers: frozenset[str] | None = None
    # Appositives ("my wife Priya", "a dog named Bruno") run alongside the other rules: they neither block nor
    # are blocked, so "my dog Bruno loves belly rubs" yields both "has a dog named Bruno" and the preference.
    is_independent: bool = False


def _rule(
    name: str,
    pattern: str,
    handle: _Handler,
    *,
    triggers: Iterable[str] | None,
    allow_question: bool = False,
    check_hedge: bool = True,
    scope: str | None = None,
    is_independent: bool = False,
) -> _Rule:
    """A rule: its pattern (case-insensitive, on the folded clause), its handler and its trigger words."""
    return _Rule(
        name,
        re.compile(pattern, re.IGNORECASE),
        handle,
        allow_question,
        check_hedge,
        scope,
        None if triggers is None else frozenset(triggers),
        is_independent,
    )


def _group(match: re.Match[str], clause: _Clause, name: str) -> str:
    start, end = match.span(name)
    return clause.text[start:end] if start >= 0 else ""


def _said(match: re.Match[str], name: str) -> str:
    """A trigger word as matched, lower-case with single spaces."""
    return _squash(match.group(name) or "")


def _is_no_longer(match: re.Match[str]) -> bool:
    return _said(match, "negation") == "no longer"


def _object(match: re.Match[str], clause: _Clause, name: str = "x", *, cut: bool = True) -> str | None:
    raw = _group(match, clause, name)
    if cut:
        raw = _CONJUNCTION_CUT.sub("", raw)
    trimmed = _trim(raw)
    if not trimmed or trimmed.lower() in _BARE_PRONOUNS:
        return None
    return _third_person(trimmed)


def _predicate(verb_phrase: str, obj: str = "") -> str:
    return _cap(f"{verb_phrase} {obj}".strip())


def _fact(
    predicate: str, *entities: ExtractedEntity | None, slot: str | None = None, is_possessive: bool = False
) -> _Found:
    present = [entity for entity in entities if entity]
    return _Found(MEMORY_TYPE_FACT, predicate, present, slot=slot, is_possessive=is_possessive)


def _preference(
    predicate: str,
    polarity: int,
    *entities: ExtractedEntity | None,
    slot: str | None = None,
    is_possessive: bool = False,
) -> _Found:
    present = [entity for entity in entities if entity]
    return _Found(MEMORY_TYPE_PREFERENCE, predicate, present, slot=slot, polarity=polarity, is_possessive=is_possessive)


# What a fact rule reads from its match: the words it states (None: the rule found nothing) and the entities
# they name. The family modules keep only these readings; `_States` / `_Denies` are the rest of every handler.
_Reading = Callable[[re.Match[str], _Clause, _Context], tuple[str | None, Sequence[ExtractedEntity | None]]]


def _the_object(match: re.Match[str], clause: _Clause, context: _Context) -> tuple[str | None, list[None]]:
    """The trimmed object as said, no entity: "I work as a nurse" -> "a nurse"."""
    return _object(match, clause), []


def _named(entity_type: str, *, max_tokens: int, allow_region: bool = False, name_is_said: bool = False) -> _Reading:
    """The object and the entity its leading proper-name phrase names ("Tata Consultancy Services as a dev");
    with ``name_is_said`` the phrase, when there is one, is what is stated (a place: "Canada last year" ->
    "Canada")."""

    def read(
        match: re.Match[str], clause: _Clause, context: _Context
    ) -> tuple[str | None, list[ExtractedEntity | None]]:
        phrase = _leading_phrase(
            _group(match, clause, "x"), context.case, max_tokens=max_tokens, allow_region=allow_region
        )
        entity = _entity(entity_type, phrase) if phrase else None
        if name_is_said and phrase:
            return phrase, [entity]
        return _object(match, clause), [entity]

    return read


_Verb = str | Callable[[re.Match[str], _Clause], str]
_Slot = str | None | Callable[[re.Match[str]], str | None]


@dataclass(frozen=True)
class _States:
    """A fact rule's handler, as data: ``<verb> <what the reading found>`` with the entities it names, in
    ``slot``. A verb or slot that depends on the words matched is a function of the match."""

    verb: _Verb
    reading: _Reading = _the_object
    slot: _Slot = None
    is_possessive: bool = False
    is_correction: bool = False

    def __call__(self, match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
        said, entities = self.reading(match, clause, context)
        if not said:
            return []
        verb = self.verb if isinstance(self.verb, str) else self.verb(match, clause)
        slot = self.slot(match) if callable(self.slot) else self.slot
        found = _fact(_predicate(verb, said), *entities, slot=slot, is_possessive=self.is_possessive)
        found.is_correction = self.is_correction
        return [found]


@dataclass(frozen=True)
class _Denies:
    """A negated fact rule's handler, as data: "I'm not a nurse" -> ``negated`` + the object; "no longer" or
    "anymore" -> ``no_longer`` + the object, a correction. Nothing where ``unless`` holds for the object
    ("I don't have time")."""

    no_longer: str
    negated: str
    unless: Callable[[str], bool] | None = None

    def __call__(self, match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
        if self.unless is not None and self.unless(_group(match, clause, "x")):
            return []
        return _negated_fact(match, clause, no_longer=self.no_longer, negated=self.negated)


def _negated_fact(match: re.Match[str], clause: _Clause, *, no_longer: str, negated: str) -> list[_Found]:
    """ "I'm not a nurse" / "I don't have a car": `negated` + the object; with "no longer" or "anymore",
    `no_longer` + the object, a correction."""
    obj = _object(match, clause)
    if not obj:
        return []
    is_no_longer = _is_no_longer(match) or bool(_ANYMORE.search(clause.folded))
    found = _fact(_predicate(no_longer if is_no_longer else negated, obj))
    found.is_correction = is_no_longer
    return [found]


def _no_longer(verb: str, *, slot: str, entity_type: str) -> _Handler:
    """ "I no longer work at X", "I don't live in X anymore" (a correction in ``slot``); without "no longer"
    or "anymore" only "doesn't <verb> X"."""

    def handle(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
        if not _is_no_longer(match) and not _ANYMORE.search(clause.folded):
            obj = _object(match, clause)
            return [_fact(_predicate(f"doesn't {verb}", obj))] if obj else []
        obj = _object(match, clause)
        if not obj:
            return []
        phrase = _leading_phrase(_group(match, clause, "x"), context.case, max_tokens=5, allow_region=True)
        obj = phrase or obj
        found = _fact(
            _predicate(f"no longer {_conjugate(verb.split()[0])} {' '.join(verb.split()[1:])}".strip(), obj),
            _entity(entity_type, phrase) if phrase else None,
            slot=slot,
        )
        found.is_correction = True
        return [found]

    return handle


def _entity(entity_type: str, display_name: str, **metadata: str) -> ExtractedEntity | None:
    slug = slugify(display_name)
    if not slug:
        return None
    return ExtractedEntity(entity_type=entity_type, slug=slug, display_name=display_name, metadata=metadata)


_LEADING_DETERMINER = re.compile(r"^(?:their|the|a|an|my|our|your)\s+", re.IGNORECASE)


def _topic(text: str) -> ExtractedEntity | None:
    text = _LEADING_DETERMINER.sub("", text)
    words = text.split()
    if not words or len(words) > 4:
        return None
    return _entity("topic", text)
