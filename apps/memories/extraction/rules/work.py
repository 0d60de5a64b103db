"""Work and study: "I work at / for / as / in X", "I'm employed by X", "I no longer work at X", "I study
(<subject>) at X", "I go to <… University>" (slots ``workplace`` and ``school``; docs/extraction.md,
"Fact rules"). Each rule is a row: its pattern and what it states (`_States`); the readings below are what
differs.
"""

from __future__ import annotations

import re

from apps.memories.extraction.rules._base import (
    _I,
    _IM,
    _X,
    _Context,
    _entity,
    _group,
    _named,
    _no_longer,
    _object,
    _rule,
    _said,
    _States,
)
from apps.memories.extraction.rules._clauses import _Clause
from apps.memories.extraction.rules._names import _leading_phrase
from apps.memories.extraction.rules._text import _words
from apps.memories.extraction.rules._types import ExtractedEntity


def _works_as_said(match: re.Match[str], clause: _Clause) -> str:
    return f"works {_said(match, 'preposition') or 'at'}"  # "works for Acme", "works at Infosys"


def _studies(match: re.Match[str], clause: _Clause) -> str:
    subject = _object(match, clause, "subject") if match.group("subject") else None
    return f"studies {subject} at" if subject else "studies at"


_EDUCATION = re.compile(r"\b(?:university|college|school|academy|institute|polytechnic|uni)\b", re.IGNORECASE)


def _school_attended(
    match: re.Match[str], clause: _Clause, context: _Context
) -> tuple[str | None, list[ExtractedEntity | None]]:
    """ "I go to Stanford University": only a name with a school word in it; the object, else the name."""
    school = _leading_phrase(_group(match, clause, "x"), context.case, max_tokens=6)
    if not school or not _EDUCATION.search(school):
        return None, []
    return _object(match, clause) or school, [_entity("school", school)]


WORK_NOT = _rule(
    "work_not",
    rf"{_I}(?P<negation>no\s+longer|don'?t|do\s+not)\s+work\s+(?P<preposition>at|for)\s+{_X}",
    _no_longer("work at", slot="workplace", entity_type="workplace"),
    triggers=_words("work"),
)

WORK_AT = _rule(
    "work_at",
    rf"{_I}(?:currently\s+|now\s+|still\s+|also\s+|actually\s+)?work\s+(?P<preposition>at|for)\s+{_X}",
    _States(_works_as_said, _named("workplace", max_tokens=5), slot="workplace"),
    triggers=_words("work"),
)

WORKING_AT = _rule(
    "working_at",
    rf"{_IM}(?:currently\s+|now\s+|still\s+)?(?:working|employed)\s+(?P<preposition>at|for|by)\s+{_X}",
    _States("works at", _named("workplace", max_tokens=5), slot="workplace"),
    triggers=_words("working employed"),
)

WORK_AS = _rule(
    "work_as",
    rf"(?:{_I}(?:currently\s+|now\s+|also\s+)?work|{_IM}(?:currently\s+|now\s+)?working)"
    r"\s+as\s+(?P<x>(?:a|an)\s+\S.*)",
    _States("works as"),
    triggers=_words("work working"),
)

WORK_IN = _rule(
    "work_in",
    rf"{_I}(?:currently\s+|now\s+|also\s+)?work\s+in\s+{_X}",
    _States("works in"),
    triggers=_words("work"),
)


STUDY_AT = _rule(
    "study_at",
    rf"(?:{_I}(?:currently\s+|now\s+)?study|{_IM}(?:currently\s+|now\s+)?studying)\s+"
    r"(?:(?P<subject>[^,;]+?)\s+)?at\s+" + _X,
    _States(_studies, _named("school", max_tokens=6), slot="school"),
    triggers=_words("study studying"),
)


GOES_TO_SCHOOL = _rule(
    "goes_to_school",
    rf"{_I}(?:currently\s+|now\s+)?go\s+to\s+{_X}",
    _States("goes to", _school_attended, slot="school"),
    triggers=_words("go"),
)
