"""Work and study: "I work at / for / as / in X", "I'm employed by X", "I no longer work at X", "I study
(<subject>) at X", "I go to <… University>" (slots ``workplace`` and ``school``; docs/extraction.md,
"Fact rules").
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


def _simple_fact(verb: str, match: re.Match[str], clause: _Clause) -> list[_Found]:
    obj = _object(match, clause)
    return [_fact(_predicate(verb, obj))] if obj else []


def _organisation_fact(verb: str, entity_type: str, *, slot: str | None) -> _Handler:
    def handle(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
        obj = _object(match, clause)
        if not obj:
            return []
        organisation = _leading_phrase(_group(match, clause, "x"), context.case, max_tokens=5)
        said_verb = verb.format(preposition=_said(match, "preposition") or "at")
        return [
            _fact(_predicate(said_verb, obj), _entity(entity_type, organisation) if organisation else None, slot=slot)
        ]

    return handle


WORK_NOT = _rule(
    "work_not",
    rf"{_I}(?P<negation>no\s+longer|don'?t|do\s+not)\s+work\s+(?P<preposition>at|for)\s+{_X}",
    _no_longer("work at", slot="workplace", entity_type="workplace"),
    triggers=_words("work"),
)

WORK_AT = _rule(
    "work_at",
    rf"{_I}(?:currently\s+|now\s+|still\s+|also\s+|actually\s+)?work\s+(?P<preposition>at|for)\s+{_X}",
    _organisation_fact("works {preposition}", "workplace", slot="workplace"),
    triggers=_words("work"),
)

WORKING_AT = _rule(
    "working_at",
    rf"{_IM}(?:currently\s+|now\s+|still\s+)?(?:working|employed)\s+(?P<preposition>at|for|by)\s+{_X}",
    _organisation_fact("works at", "workplace", slot="workplace"),
    triggers=_words("working employed"),
)

WORK_AS = _rule(
    "work_as",
    rf"(?:{_I}(?:currently\s+|now\s+|also\s+)?work|{_IM}(?:currently\s+|now\s+)?working)"
    r"\s+as\s+(?P<x>(?:a|an)\s+\S.*)",
    lambda match, clause, context: _simple_fact("works as", match, clause),
    triggers=_words("work working"),
)

WORK_IN = _rule(
    "work_in",
    rf"{_I}(?:currently\s+|now\s+|also\s+)?work\s+in\s+{_X}",
    lambda match, clause, context: _simple_fact("works in", match, clause),
    triggers=_words("work"),
)


def _school(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
    obj = _object(match, clause)
    if not obj:
        return []
    subject = _object(match, clause, "subject") if match.group("subject") else None
    school = _leading_phrase(_group(match, clause, "x"), context.case, max_tokens=6)
    verb = f"studies {subject} at" if subject else "studies at"
    return [_fact(_predicate(verb, obj), _entity("school", school) if school else None, slot="school")]


STUDY_AT = _rule(
    "study_at",
    rf"(?:{_I}(?:currently\s+|now\s+)?study|{_IM}(?:currently\s+|now\s+)?studying)\s+"
    r"(?:(?P<subject>[^,;]+?)\s+)?at\s+" + _X,
    _school,
    triggers=_words("study studying"),
)


_EDUCATION = re.compile(r"\b(?:university|college|school|academy|institute|polytechnic|uni)\b", re.IGNORECASE)


def _goes_to_school(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
    raw = _group(match, clause, "x")
    school = _leading_phrase(raw, context.case, max_tokens=6)
    if not school or not _EDUCATION.search(school):
        return []
    obj = _object(match, clause)
    return [_fact(_predicate("goes to", obj or school), _entity("school", school), slot="school")]


GOES_TO_SCHOOL = _rule(
    "goes_to_school",
    rf"{_I}(?:currently\s+|now\s+)?go\s+to\s+{_X}",
    _goes_to_school,
    triggers=_words("go"),
)
