"""Conversation preferences: what the user does or does not want to talk about, instructions to the
assistant ("please don't use emojis", "always include the units") and length limits ("I don't want replies
longer than 3 lines") (docs/extraction.md, "Preference rules").
"""

from __future__ import annotations

import re

from apps.memories.extraction.rules._base import (
    _ADVERBS,
    _DONT,
    _I,
    _ID,
    _X,
    _Context,
    _Found,
    _object,
    _predicate,
    _preference,
    _rule,
    _said,
    _topic,
)
from apps.memories.extraction.rules._clauses import _Clause
from apps.memories.extraction.rules._text import _words

_TALK = r"(?:talk|speak|chat)"


def _talk_avoid(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
    obj = _object(match, clause)
    if not obj:
        return []
    return [_preference(_predicate("doesn't want to talk about", obj), -1, _topic(obj))]


TALK_AVOID = _rule(
    "talk_avoid",
    rf"(?:\b(?:please\s+)?(?:don'?t|do\s+not|never)\s+(?:ever\s+)?(?:{_TALK}|ask)\s+"
    r"(?:to\s+me\s+|with\s+me\s+|me\s+)?about"
    rf"|{_I}{_ADVERBS}{_DONT}(?:really\s+)?(?:want|wanna|like|love|care)\s+to\s+{_TALK}\s+about"
    rf"|{_ID}(?:much\s+)?rather\s+not\s+{_TALK}\s+about|\blet'?s\s+not\s+{_TALK}\s+about"
    rf"|\bstop\s+(?:talking|asking\s+me)\s+about)\s+{_X}",
    _talk_avoid,
    triggers=_words("talk speak chat ask talking asking"),
)


def _talk_interest(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
    obj = _object(match, clause)
    if not obj:
        return []
    return [_preference(_predicate("wants to talk about", obj), 1, _topic(obj))]


TALK_INTEREST = _rule(
    "talk_interest",
    rf"(?:\b(?:can|could|shall|may)\s+we\s+(?:please\s+)?{_TALK}\s+(?:a\s+bit\s+|more\s+)?about"
    rf"|\blet'?s\s+{_TALK}\s+(?:a\s+bit\s+|more\s+)?about|{_I}{_ADVERBS}(?:want|wanna)\s+(?:to\s+)?{_TALK}\s+about"
    rf"|{_ID}(?:love|like)\s+to\s+{_TALK}\s+about)\s+{_X}",
    _talk_interest,
    triggers=_words("talk speak chat"),
    allow_question=True,
)


def _instruction_avoid(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
    """ "Please don't use emojis" -> "doesn't want you to use emojis" (an instruction to the assistant)."""
    obj = _object(match, clause)
    if not obj:
        return []
    verb = " ".join("them" if word == "me" else word for word in _said(match, "verb").split())
    return [_preference(_predicate(f"doesn't want you to {verb}", obj), -1)]


INSTRUCTION_AVOID = _rule(
    "instruction_avoid",
    r"^\W*(?:please\s+)?(?:don'?t|do\s+not|never)\s+(?:ever\s+)?"
    r"(?P<verb>use|send|call\s+me|mention|bring\s+up|say|add|"
    r"include|write|recommend|suggest|give\s+me|reply\s+with|respond\s+with)\s+" + _X,
    _instruction_avoid,
    triggers=_words("don dont not never"),
)


def _instruction_want(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
    """ "Always include version numbers when I ask about libraries" -> "wants you to always include version
    numbers when they ask about libraries" (a standing instruction to the assistant, the positive form of
    INSTRUCTION_AVOID: kept whole, its condition included, as the instruction is only right with it)."""
    obj = _object(match, clause, cut=False)
    if not obj:
        return []
    verb = " ".join("them" if word == "me" else word for word in _said(match, "verb").split())
    return [_preference(_predicate(f"wants you to always {verb}", obj), 1)]


# "... when I ask about ..." makes any verb after "always" an instruction to the assistant ("Always confirm time
# zones when I ask about meetings", "Always specify currency when…"), if it reads as a verb and its object: a base
# form ("Always wins when I ask him" is about someone else: not a word ending in a single s, "ed" or "ing")
# followed by what it acts on, not by "to", "when" or a preposition ("Always happy to help when I ask",
# "Always available when I need it" are about someone)
_WHEN_I_ASK = r"\bwhen(?:ever)?\s+i\s+(?:ask|request|inquire|mention|bring\s+up|talk|want|need)\b"
_NOT_AN_OBJECT = r"(?:to|when|whenever|if|as|at|for|in|on|about|with|around|there|here|so|too|very)\b"
_ANY_VERB_WHEN_I_ASK = rf"(?=[a-z]+\s+(?!{_NOT_AN_OBJECT})[^.!?\n]*{_WHEN_I_ASK})[a-z]+(?<![^s]s)(?<!ed)(?<!ing)"

INSTRUCTION_WANT = _rule(
    "instruction_want",
    r"^\W*(?:please\s+)?(?:always|make\s+sure\s+(?:to|you)|be\s+sure\s+to)\s+"
    r"(?P<verb>use|send|call\s+me|mention|add|include|write|recommend|suggest|give\s+me|reply\s+with|"
    r"respond\s+with|answer\s+with|format|provide|show|explain|list|cite|highlight|keep|"
    + _ANY_VERB_WHEN_I_ASK
    + r")\s+"
    + _X,
    _instruction_want,
    triggers=_words("always sure"),
)


# The condition of a standing instruction as it is stored ("… wants you to always confirm time zones whenever
# they mention meetings"): what the user will be talking about when it applies ("meetings"). Retrieval matches a
# question against it, not against what the assistant is to do (retrieval/signals/condition.py): "How should I
# plan the call?" is about meetings, not about time zones. The topic alone, without "ask about": on made-up
# pairs "Can you suggest a recipe for dinner?" is at cosine 0.69 of "recipes" and 0.62 of "ask about recipes",
# "When is the concert?" at 0.10 and 0.03.
_STORED_CONDITION = re.compile(
    r"\b(?:wants|doesn't\s+want)\s+you\s+to\s+.+?\bwhen(?:ever)?\s+(?:they|i)\s+"
    r"(?:ask|request|inquire|mention|bring\s+up|talk|want|need)\b(?:\s+(?:you|me|them))?"
    r"(?:\s+(?:about|for|on|regarding|into|with))?\s+(?P<condition>[^.!?\n]*?\S)[\s.!?]*$",
    re.IGNORECASE,
)
CONDITION_MAX_CHARS = 200


def instruction_condition(statement: str) -> str:
    """The condition of a stored instruction to the assistant, what the user talks about when it applies
    ("draft revisions" of "Alex wants you to always use split-screen mode when they ask about draft revisions");
    "" for any other statement."""
    match = _STORED_CONDITION.search(statement)
    if not match:
        return ""
    return " ".join(match.group("condition").split())[:CONDITION_MAX_CHARS]


_LONGER = ("longer", "more", "bigger", "larger", "over", "above")


def _length_limit(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
    thing = _object(match, clause, cut=False)
    if not thing:
        return []
    bound = "under" if _said(match, "comparison") in _LONGER else "over"
    amount = " ".join(part for part in (match.group("amount"), match.group("unit")) if part)
    return [_preference(_predicate("prefers", f"{thing} {bound} {amount}"), 1, _topic(thing))]


LENGTH_LIMIT = _rule(
    "length_limit",
    rf"{_I}{_ADVERBS}{_DONT}(?:really\s+)?want\s+(?P<x>(?:\S+\s+){{0,3}}?\S+)\s+"
    r"(?P<comparison>longer|more|bigger|larger|over|above|shorter|less|fewer|smaller|under|below)(?:\s+than)?\s+"
    r"(?P<amount>\d[\d,.]*k?)\s*(?P<unit>[a-z]+)?",
    _length_limit,
    triggers=_words("want"),
)
