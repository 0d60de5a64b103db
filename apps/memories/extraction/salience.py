"""Salience heuristic (memory-logic §1.5): content signals that make a chunk worth keeping.

named entity (person, pet, organisation, place, product)  +0.3
number or date                                            +0.2
preference signal ("I prefer", "I always", "I hate", …)   +0.4
rare technical term                                       +0.1
capped at 1.0
"""

from __future__ import annotations

import re

from apps.core.cleaning import clean_text
from apps.memories.extraction.rules import COMMON_WORDS, extract

ENTITY_WEIGHT = 0.3
NUMBER_OR_DATE_WEIGHT = 0.2
PREFERENCE_WEIGHT = 0.4
TECHNICAL_TERM_WEIGHT = 0.1

# topic: and hobby: entities are common nouns ("sushi", "cooking"), not named entities.
NAMED_ENTITY_TYPES = frozenset(
    {"person", "pet", "workplace", "school", "location", "organization", "product", "service", "name"}
)

_NUMBER_OR_DATE = re.compile(
    r"\d"
    r"|\b(?:january|february|april|june|july|august|september|october|november|december)\b"
    r"|\b(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)s?\b"
    r"|\b(?:yesterday|today|tomorrow|tonight)\b"
    r"|\b(?:last|next|this)\s+(?:week|weekend|month|year|quarter|summer|winter|spring|autumn|fall)\b"
    r"|\b(?:two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|forty|fifty|sixty|seventy|"
    r"eighty|ninety|hundred|thousand|million|billion|dozen)\b",
    re.IGNORECASE,
)
# Capitalised only: "may" and "march" are also a verb, "Mar"/"Dec" are abbreviations.
_CAPITALISED_MONTH = re.compile(
    r"\bMarch\b|\bMay\s+\d|\d(?:st|nd|rd|th)?\s+May\b|\b(?:in|since|until|by|of)\s+May\b"
    r"|\b(?:Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)\b\.?"
)
_PREFERENCE_SIGNAL = re.compile(
    r"\bi\s+(?:really\s+|truly\s+|absolutely\s+|just\s+|generally\s+)?(?:prefer|like|love|hate|enjoy|adore|dislike|"
    r"always|never)\b"
    r"|\b(?:i\s*'\s*d|i\s+would)\s+(?:much\s+)?(?:rather|prefer)\b"
    r"|\bi\s+(?:don'?t|do\s+not)\s+(?:really\s+)?(?:like|love|enjoy|want)\b"
    r"|\bmy\s+(?:all[\s-]time\s+)?(?:favou?rite|fave)\b"
    r"|\bi\s+can'?t\s+stand\b|\b(?:i'm|i\s+am)\s+(?:not\s+)?a\s+(?:big\s+|huge\s+)?fan\s+of\b",
    re.IGNORECASE,
)
_TOKEN = re.compile(r"[A-Za-z0-9_]+(?:['\u2019][A-Za-z]+)?")
_SNAKE_CASE = re.compile(r"^[A-Za-z0-9]+(?:_[A-Za-z0-9]+)+$")
_CAMEL_CASE = re.compile(r"^[a-z]+(?:[A-Z][a-z0-9]*)+$")
_DIGITS_AND_LETTERS = re.compile(r"^(?=[A-Za-z0-9]*[A-Za-z])(?=[A-Za-z0-9]*\d)[A-Za-z0-9]+$")
_NUMBER_WITH_UNIT = re.compile(
    r"^\d+(?:st|nd|rd|th|am|pm|k|m|b|s|x|h|hr|hrs|min|mins|km|kg|g|lb|lbs|mb|gb|tb|cm|mm|ml|l|yo|d|y|mo|w|yrs)$",
    re.IGNORECASE,
)
_RARE_WORD_LETTERS = 9
_SUFFIXES = (
    "'s",
    "s",
    "es",
    "ed",
    "d",
    "ing",
    "ly",
    "er",
    "ers",
    "est",
    "ness",
    "ment",
    "ments",
    "ful",
    "less",
    "able",
)


def _is_common_word(word: str) -> bool:
    """In the embedded common-word list, directly or after one English suffix ("recommended" -> "recommend")."""
    if word in COMMON_WORDS:
        return True
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            stem = word[: -len(suffix)]
            candidates = {stem, stem + "e"}
            if stem[-1] == stem[-2]:
                candidates.add(stem[:-1])  # "running" -> "run"
            if stem.endswith("i"):
                candidates.add(stem[:-1] + "y")  # "studies" -> "study"
            if candidates & COMMON_WORDS:
                return True
    return False


def _is_technical(token: str) -> bool:
    if _SNAKE_CASE.match(token) or _CAMEL_CASE.match(token):
        return True
    if _DIGITS_AND_LETTERS.match(token):
        return not _NUMBER_WITH_UNIT.match(token)
    return token.isalpha() and len(token) >= _RARE_WORD_LETTERS and not _is_common_word(token.lower())


def has_number_or_date(text: str) -> bool:
    return bool(_NUMBER_OR_DATE.search(text) or _CAPITALISED_MONTH.search(text))


def has_preference_signal(text: str) -> bool:
    return bool(_PREFERENCE_SIGNAL.search(text.replace("\u2019", "'")))


def has_technical_term(text: str) -> bool:
    return any(_is_technical(token) for token in _TOKEN.findall(text))


def salience(text: str, *, has_entity: bool | None = None) -> float:
    """Heuristic salience in [0, 1], rounded to 4 decimals. ``has_entity`` overrides the entity check
    (by default: does ``extract(text)`` find a named entity)."""
    cleaned = clean_text(text)
    if has_entity is None:
        has_entity = any(entity.entity_type in NAMED_ENTITY_TYPES for entity in extract(cleaned).entities)
    score = 0.0
    if has_entity:
        score += ENTITY_WEIGHT
    if has_number_or_date(cleaned):
        score += NUMBER_OR_DATE_WEIGHT
    if has_preference_signal(cleaned):
        score += PREFERENCE_WEIGHT
    if has_technical_term(cleaned):
        score += TECHNICAL_TERM_WEIGHT
    return round(min(score, 1.0), 4)
