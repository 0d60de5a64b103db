"""Likes and dislikes: "I (don't) like / love / hate X", "I'm (not) a fan of X", "I'd rather X",
"I prefer X", favourites, hobbies, habits ("I always / never …") and wishes ("I want to …"), with the
topic and hobby entities of their objects. Negations come before their positive forms in the priority
order (docs/extraction.md, "Preference rules").
"""

from __future__ import annotations

import re

from apps.memories.extraction.rules._base import (
    _ADVERBS,
    _I,
    _ID,
    _IM,
    _X,
    _Context,
    _entity,
    _Found,
    _group,
    _Handler,
    _is_no_longer,
    _object,
    _predicate,
    _preference,
    _rule,
    _said,
    _topic,
)
from apps.memories.extraction.rules._clauses import _Clause
from apps.memories.extraction.rules._text import (
    _BARE_PRONOUNS,
    _CHUNK_STOP,
    _LIST_SEPARATOR,
    _conjugate,
    _trim,
    _words,
    slugify,
)
from apps.memories.extraction.rules._types import ExtractedEntity

_ABOUT = re.compile(
    r"^(?:talking|chatting|hearing|reading|learning|writing|thinking|watching\s+videos)\s+about\s+(.+)$"
)
_NOT_GERUNDS = frozenset(
    _words("""
    nothing something everything anything morning evening thing king ring spring string going getting being
    having doing making taking trying
    """)
)
_TOPIC_STOP = frozenset(
    _words("a an the your his her their its to it this that when how what being my our some any all")
)


_PLAIN_WORD = re.compile(r"[^\W\d_][\w'-]*")


def _preference_entities(obj: str) -> list[ExtractedEntity]:
    """topic:/hobby: entities for a short preference object: "talking about politics" -> topic:politics,
    "playing guitar" -> hobby:playing-guitar, "sushi" -> topic:sushi."""
    about = _ABOUT.match(obj.lower())
    if about:
        start = len(obj) - len(about.group(1))
        topic = _topic(obj[start:])
        return [topic] if topic else []
    words = obj.split()
    if not words:
        return []
    first = words[0].lower()
    if first.endswith("ing") and len(first) > 4 and first not in _NOT_GERUNDS:
        hobby_words: list[str] = []
        for word in words[:3]:
            if word.lower() in _CHUNK_STOP or word.lower() in _TOPIC_STOP:
                break
            hobby_words.append(word)
        hobby = _entity("hobby", " ".join(hobby_words))
        return [hobby] if hobby else []
    items = [item for item in _LIST_SEPARATOR.split(obj) if item]
    entities: list[ExtractedEntity] = []
    for item in items[:5]:
        item_words = item.split()
        if not 1 <= len(item_words) <= 2 or item_words[0].lower() in _TOPIC_STOP:
            return []
        if not all(_PLAIN_WORD.fullmatch(word) for word in item_words):
            return []
        topic = _topic(item)
        if topic:
            entities.append(topic)
    return entities


_NEGATION = r"(?P<negation>don'?t|do\s+not|never|no\s+longer)\s+"


_NEGATED_VERB = {
    "like": "like",
    "liked": "like",
    "love": "love",
    "loved": "love",
    "enjoy": "enjoy",
    "enjoyed": "enjoy",
    "care for": "care for",
    "eat": "eat",
    "drink": "drink",
    "smoke": "smoke",
    "want": "want",
}
_OBJECTLESS_OK = frozenset({"eat", "drink", "smoke"})


def _negative_like(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
    verb = _NEGATED_VERB[_said(match, "verb")]
    obj = _object(match, clause) if match.group("x") else None
    if not obj and verb not in _OBJECTLESS_OK:
        return []
    entities = _preference_entities(obj) if obj and verb != "want" else []
    found = _preference(_predicate(f"doesn't {verb}", obj or ""), -1, *entities)
    found.is_correction = _is_no_longer(match)
    return [found]


NEGATIVE_LIKE = _rule(
    "negative_like",
    rf"{_I}{_ADVERBS}{_NEGATION}(?:really\s+|even\s+|particularly\s+|much\s+|actually\s+)?"
    r"(?P<verb>like|liked|love|loved|enjoy|enjoyed|care\s+for|eat|drink|smoke|want)\b\s*(?P<x>\S.*)?",
    _negative_like,
    triggers=_words("don dont not never longer"),
)


_DISLIKE_VERB = {
    "hate": "hates",
    "hated": "hates",
    "dislike": "dislikes",
    "detest": "detests",
    "despise": "despises",
    "loathe": "loathes",
    "can't stand": "can't stand",
    "cant stand": "can't stand",
    "cannot stand": "can't stand",
    "avoid": "avoids",
    "can't eat": "can't eat",
    "cant eat": "can't eat",
    "cannot eat": "can't eat",
}


def _dislike(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
    obj = _object(match, clause)
    if not obj:
        return []
    verb = _DISLIKE_VERB[_said(match, "verb")]
    return [_preference(_predicate(verb, obj), -1, *_preference_entities(obj))]


DISLIKE = _rule(
    "dislike",
    rf"{_I}{_ADVERBS}(?P<verb>hate|hated|dislike|detest|despise|loathe|can'?t\s+stand|cannot\s+stand|avoid"
    rf"|can'?t\s+eat|cannot\s+eat)\s+{_X}",
    _dislike,
    triggers=_words("hate hated dislike detest despise loathe stand avoid eat"),
)


def _not_a_fan(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
    obj = _object(match, clause)
    if not obj:
        return []
    is_no_longer = _is_no_longer(match)
    kind = "a fan of" if _said(match, "kind").startswith("fan") else "into"
    verb = f"is no longer {kind}" if is_no_longer else f"is not {kind}"
    found = _preference(_predicate(verb, obj), -1, *_preference_entities(obj))
    found.is_correction = is_no_longer
    return [found]


NOT_A_FAN = _rule(
    "not_a_fan",
    rf"{_IM}(?:really\s+|just\s+)?(?P<negation>not|no\s+longer)\s+(?:really\s+)?(?:a\s+)?"
    rf"(?:(?:big|huge|great|massive)\s+)?(?P<kind>fan\s+of|into)\s+{_X}",
    _not_a_fan,
    triggers=_words("fan into"),
)


def _simple_preference(verb: str, polarity: int, *, typed: bool = True) -> _Handler:
    def handle(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
        obj = _object(match, clause)
        if not obj:
            return []
        entities = _preference_entities(obj) if typed else []
        return [_preference(_predicate(verb, obj), polarity, *entities)]

    return handle


RATHER_NOT = _rule(
    "rather_not",
    rf"{_ID}(?:much\s+)?rather\s+not\s+{_X}",
    _simple_preference("would rather not", -1, typed=False),
    triggers=_words("rather"),
)

FAN_OF = _rule(
    "fan_of",
    rf"{_IM}(?:really\s+|such\s+|so\s+|also\s+)?(?:a\s+)?(?:(?:big|huge|massive|great|total|real|die[\s-]hard)\s+)?"
    rf"fan\s+of\s+{_X}",
    _simple_preference("is a fan of", 1),
    triggers=_words("fan"),
)

INTO = _rule(
    "into",
    rf"{_IM}(?:really\s+|so\s+|also\s+)?into\s+{_X}",
    _simple_preference("is into", 1),
    triggers=_words("into"),
)

RATHER = _rule(
    "rather",
    rf"{_ID}(?:much\s+)?rather\s+{_X}",
    _simple_preference("would rather", 1, typed=False),
    triggers=_words("rather"),
)

PREFER = _rule(
    "prefer",
    rf"(?:{_I}{_ADVERBS}|{_ID})prefer\s+{_X}",
    _simple_preference("prefers", 1),
    triggers=_words("prefer"),
)


_LIKE_VERB = {"like": "likes", "love": "loves", "enjoy": "enjoys", "adore": "adores"}


def _like(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
    obj = _object(match, clause)
    if not obj:
        return []
    verb = _LIKE_VERB[_said(match, "verb")]
    return [_preference(_predicate(verb, obj), 1, *_preference_entities(obj))]


LIKE = _rule(
    "like",
    rf"{_I}{_ADVERBS}(?P<verb>like|love|enjoy|adore)\s+{_X}",
    _like,
    triggers=_words("like love enjoy adore"),
)


def _favourite(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
    what = _trim(_group(match, clause, "what")).lower()
    obj = _object(match, clause)
    if not obj or not what or what in _BARE_PRONOUNS:
        return []
    verb = "are" if _said(match, "verb") == "are" else "is"
    entities = [_entity("hobby", obj)] if what.startswith("hobb") else []
    slot = f"attribute:favourite-{slugify(what)}"
    return [_preference(_predicate(f"favourite {what} {verb}", obj), 1, *entities, slot=slot, is_possessive=True)]


FAVOURITE = _rule(
    "favourite",
    r"\bmy\s+(?:(?:all[\s-]time|absolute|current|most)\s+)?(?:favou?rite|fave|fav)\s+"
    r"(?P<what>[a-z][a-z'-]*(?:\s+[a-z][a-z'-]*){0,2}?)\s*(?P<verb>is|are|'s|has\s+always\s+been)\s+" + _X,
    _favourite,
    triggers=_words("favourite favorite fave fav"),
)


def _favourite_reverse(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
    obj = _object(match, clause, "subject")
    what = _trim(_group(match, clause, "what")).lower()
    if not obj or not what or len(obj.split()) > 6:
        return []
    slot = f"attribute:favourite-{slugify(what)}"
    return [_preference(_predicate(f"favourite {what} is", obj), 1, slot=slot, is_possessive=True)]


FAVOURITE_REVERSE = _rule(
    "favourite_reverse",
    r"^\W*(?P<subject>[^,;]+?)\s+(?:is|are|'s)\s+(?:probably\s+|definitely\s+)?"
    r"my\s+(?:(?:all[\s-]time|absolute)\s+)?"
    r"(?:favou?rite|fave|fav)\s+(?P<what>[a-z][a-z'-]*(?:\s+[a-z][a-z'-]*)?)\s*[.!]*$",
    _favourite_reverse,
    triggers=_words("favourite favorite fave fav"),
)


def _hobbies(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
    obj = _object(match, clause)
    if not obj:
        return []
    items = [item.strip() for item in _LIST_SEPARATOR.split(obj)[:5]]
    entities = [_entity("hobby", item) for item in items if item and len(item.split()) <= 3]
    noun = _said(match, "noun")
    verb = "are" if noun == "hobbies" else "is"
    return [_preference(_predicate(f"{noun} {verb}", obj), 1, *entities, is_possessive=True)]


HOBBIES = _rule(
    "hobbies",
    rf"\bmy\s+(?:main\s+)?(?P<noun>hobby|hobbies)\s+(?:is|are|include)\s+{_X}",
    _hobbies,
    triggers=_words("hobby hobbies"),
)


_HABIT_SKIP_VERBS = frozenset(_words("am was were is can could will would should must might may did do does get"))


def _habit(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
    verb = _group(match, clause, "verb")
    if verb.lower() in _HABIT_SKIP_VERBS:
        return []
    adverb = _said(match, "adverb")
    obj = _object(match, clause) if match.group("x") else ""
    return [_preference(_predicate(f"{adverb} {_conjugate(verb)}", obj or ""), -1 if adverb == "never" else 1)]


HABIT = _rule(
    "habit",
    rf"{_I}(?P<adverb>always|usually|normally|typically|often|never)\s+(?P<verb>[a-z]+)\b\s*(?P<x>\S.*)?",
    _habit,
    triggers=_words("always usually normally typically often never"),
)


_REQUEST_VERBS = frozenset(
    _words("""
    know ask check see cancel book order return change update confirm say tell speak talk chat reset delete
    remove add report understand try clarify mention share make get go sleep
    """)
)


def _want_to(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
    verb = _group(match, clause, "verb")
    if verb.lower() in _REQUEST_VERBS:
        return []
    rest = _object(match, clause) if match.group("x") else ""
    lead = "wants to" if match.group("want") else f"would {_said(match, 'wish')} to"
    return [_preference(_predicate(f"{lead} {verb}", rest or ""), 1)]


WANT_TO = _rule(
    "want_to",
    rf"(?:{_I}{_ADVERBS}(?P<want>want\s+to|wanna)\s+|{_ID}(?P<wish>love|like)\s+to\s+)"
    r"(?P<verb>[a-z]+)\b\s*(?P<x>\S.*)?",
    _want_to,
    triggers=_words("want wanna love like"),
)
