"""Mood classification: the keyword/emoji fallback and validation of an LLM's answer (contact-intelligence.txt §4.1).

The LLM classifier is primary; when it times out the service reuses the previous mood, and when the provider is
down it falls back to `classify_mood_keywords`, which needs no network and runs in microseconds.

Keyword matching rules (decided here, pinned by tests/unit/contacts/test_mood_classifier.py):
- Word cues match on word boundaries, so "dismiss" never matches "miss" and "lollipop" never matches "lol".
- "miss" is a sad cue only as the verb of longing ("I miss her", "miss you", "missing home"); "I missed the bus"
  is not sad (it is an event, not a feeling).
- Emoji cues match anywhere (skin-tone modifiers and the emoji variation selector are ignored).
- Negation: a negator ("not", "no", "never", "don't", "isn't", "can't", ...) among the three words before a cue,
  in the same clause (a clause ends at , . ! ? ; : "but" or the previous cue), cancels the cue: "I'm not worried" and
  "not bored at all" are neutral. "can't stop" is not a negation ("I can't stop crying" is sad). A negated
  *positive* cue ("not happy", "not excited") becomes a weak sad cue: the contact is telling us something is
  wrong, and a supportive tone is the safe answer. A negation after the cue ("Bored? Not at all") is not
  understood.
- Each distinct cue counts once; overlapping cues keep the longest ("so excited" over "excited").
- Energy starts from the mood's base level; two or more "!" or a shouted message (mostly capitals) raise it one
  step for a detected mood; tiredness words ("tired", "exhausted", "drained") lower it one step for any mood.
- Confidence: 0.5 for the default; otherwise 0.5 + 0.1 * (summed cue weight of the winning mood), within
  0.6-0.9, and 0.1 lower (never below 0.6) when another mood also had cues.
- Ties between moods go to the mood listed first in `_TIE_ORDER` (negative moods first: a supportive reply to a
  mixed message does less harm than a playful one).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

MOODS = (
    "happy",
    "sad",
    "anxious",
    "excited",
    "neutral",
    "angry",
    "frustrated",
    "flirty",
    "bored",
    "grateful",
    "confused",
)
ENERGIES = ("high", "medium", "low")
STYLES = ("playful", "deep", "casual", "supportive", "romantic", "venting")
SOURCES = ("keywords", "llm", "previous", "default")

NEGATIVE_MOODS = frozenset({"sad", "anxious", "angry"})  # the sustained-negative rule of §4.2

DEFAULT_MOOD, DEFAULT_ENERGY, DEFAULT_STYLE = "neutral", "medium", "casual"
DEFAULT_CONFIDENCE = 0.5
LLM_DEFAULT_CONFIDENCE = 0.9

MOOD_LLM_SYSTEM_PROMPT = (
    "Classify this message's emotion. JSON only.\n"
    '{"mood": "<emotion>", "energy": "<level>", "style": "<approach>"}\n'
    f"mood: {'|'.join(MOODS)}\n"
    f"energy: {'|'.join(ENERGIES)}\n"
    f"style: {'|'.join(STYLES)}"
)

BASE_ENERGY: dict[str, str] = {
    "happy": "high",
    "excited": "high",
    "angry": "high",
    "sad": "low",
    "anxious": "low",
    "bored": "low",
    "frustrated": "medium",
    "grateful": "medium",
    "confused": "medium",
    "flirty": "medium",
    "neutral": "medium",
}

MOOD_STYLE: dict[str, str] = {
    "happy": "playful",
    "excited": "playful",
    "sad": "supportive",
    "anxious": "supportive",
    "frustrated": "venting",
    "angry": "venting",
    "flirty": "romantic",
    "bored": "casual",
    "grateful": "casual",
    "confused": "casual",
    "neutral": "casual",
}

_TIE_ORDER = ("angry", "sad", "anxious", "frustrated", "confused", "flirty", "bored", "grateful", "excited", "happy")


@dataclass(frozen=True)
class MoodReading:
    mood: str
    energy: str
    style: str
    confidence: float
    source: str  # "keywords" | "llm" | "previous" | "default"


def is_negative(mood: str) -> bool:
    return mood in NEGATIVE_MOODS


def style_for(mood: str, energy: str) -> str:
    # sad + high energy: "they want to talk about it — engage deeply" (§4.3)
    if mood == "sad" and energy == "high":
        return "deep"
    return MOOD_STYLE.get(mood, DEFAULT_STYLE)


def default_reading() -> MoodReading:
    return MoodReading(DEFAULT_MOOD, DEFAULT_ENERGY, DEFAULT_STYLE, DEFAULT_CONFIDENCE, "default")


def mood_from_previous(*, mood: str | None, energy: str | None, style: str | None = None) -> MoodReading:
    """The fallback when the LLM times out: the stored mood, re-labelled; the default when nothing valid is stored."""
    if mood not in MOODS or energy not in ENERGIES:
        return default_reading()
    assert mood is not None and energy is not None
    chosen_style = style if style in STYLES else style_for(mood, energy)
    assert chosen_style is not None
    return MoodReading(mood, energy, chosen_style, DEFAULT_CONFIDENCE, "previous")


def mood_from_llm_json(data: Any) -> MoodReading | None:
    """Validate an LLM answer {"mood", "energy", "style"[, "confidence"]}.

    Values are trimmed and lower-cased; a missing style is derived from the mood; any value outside the allowed
    sets (or a non-dict answer) returns None so the caller falls back to the keyword classifier.
    """
    if not isinstance(data, Mapping):
        return None
    mood, energy, style = (_clean_label(data.get(key)) for key in ("mood", "energy", "style"))
    if mood not in MOODS or energy not in ENERGIES:
        return None
    assert mood is not None and energy is not None
    if style is None:
        style = style_for(mood, energy)
    elif style not in STYLES:
        return None
    confidence = data.get("confidence")
    if isinstance(confidence, bool) or not isinstance(confidence, int | float) or not 0.0 <= confidence <= 1.0:
        confidence = LLM_DEFAULT_CONFIDENCE
    return MoodReading(mood, energy, style, round(float(confidence), 2), "llm")


def _clean_label(value: Any) -> str | None:
    if not isinstance(value, str) or not value.strip():
        return None
    return value.strip().lower()


# --- keyword classifier -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Cue:
    mood: str
    pattern: re.Pattern[str]
    weight: float
    is_positive: bool  # a negated positive cue ("not happy") becomes a weak sad cue
    is_negatable: bool = True  # words can be negated; emoji and "!!!" cannot


NORMAL, STRONG, WEAK = 1.0, 2.0, 0.5
_FLIPPED_WEIGHT = 1.0

# (mood, regex fragment, weight, is_positive). Fragments are matched on word boundaries against normalised text.
_WORD_CUES: tuple[tuple[str, str, float, bool], ...] = (
    ("happy", r"a?(?:ha){2,}h?|(?:he){2,}h?|lo+l(?:ol)*|lmf?ao+|rofl", NORMAL, False),
    ("happy", r"amazing|awesome|wonderful|fantastic|delighted|yay+", NORMAL, True),
    ("happy", r"happy|glad|so good|love it|best day(?: ever)?|made my day|great day", NORMAL, True),
    ("happy", r"smil(?:e|es|ing)|grinning", NORMAL, False),
    ("sad", r"sad|crying|cried|tears|unhappy|lonely|upset|depressed|gloomy", NORMAL, False),
    ("sad", r"heartbroken|miserable|devastated|hate my life|broke my heart", STRONG, False),
    ("sad", r"(?:i|we) (?:really )?miss|miss (?:you|u|him|her|them|home|my|it|those|the old)", NORMAL, False),
    ("sad", r"missing (?:you|u|him|her|them|home|my)", NORMAL, False),
    ("sad", r"feel(?:ing)? (?:so |a bit |really |kinda |pretty )?(?:down|low|empty|blue)", NORMAL, False),
    ("sad", r"passed away|broke up|break ?up", NORMAL, False),
    ("anxious", r"worried|worry|worrying|worries|nervous|anxious|anxiety|scared|stressed(?: out)?", NORMAL, False),
    ("anxious", r"panic(?:king|ked)?|freaking out|overthinking|on edge|dreading", NORMAL, False),
    ("anxious", r"terrified|panic attack", STRONG, False),
    ("frustrated", r"u+g+h+|a+r+g+h+|annoyed|annoying|frustrated|frustrating|irritated|irritating", NORMAL, False),
    ("frustrated", r"fed up|sick of|so done with|keeps (?:crashing|failing|breaking)", NORMAL, False),
    ("frustrated", r"still (?:not|doesn't|isn't|won't) work(?:ing)?", NORMAL, False),
    ("angry", r"angry|pissed(?: off)?|mad at|so mad|(?:i'm|im|am) mad|rage|outraged", NORMAL, False),
    ("angry", r"furious|livid|hate (?:this|it|you|everyone|everything|them|him|her)", STRONG, False),
    ("bored", r"bored|boring|meh+|whatever|nothing to do|so dull|ya+wn", NORMAL, False),
    ("excited", r"excited|thrilled|pumped|stoked|hyped|woo+h?o*|let'?s go+", NORMAL, True),
    ("excited", r"so excited|can't wait|cannot wait|cant wait", STRONG, True),
    ("excited", r"omg", WEAK, False),
    ("excited", r"got (?:promoted|the job|engaged|accepted|in)|i did it|we won", NORMAL, True),
    ("grateful", r"thanks|thank (?:you|u)|thx|ty|grateful|thankful|appreciate(?: it)?|means a lot", NORMAL, False),
    ("grateful", r"thank (?:you|u) so much|thanks so much|so grateful|really appreciate", STRONG, False),
    ("confused", r"confused|confusing|don't understand|do not understand|don't get it|i'm lost", NORMAL, False),
    ("confused", r"what do you mean|what does that mean|makes no sense|doesn't make sense|huh", NORMAL, False),
    ("confused", r"idk what|not sure what you mean|i'm not following|lost me", NORMAL, False),
    ("flirty", r"cutie|flirt(?:ing|y)?|sexy|babe|kiss(?:es)?|wink", NORMAL, False),
    ("flirty", r"(?:you're|youre|you are|ur) (?:so )?(?:cute|hot|handsome|beautiful|gorgeous|adorable)", STRONG, False),
)

_EMOJI_CUES: tuple[tuple[str, str, float], ...] = (
    ("happy", "😂🤣😄😁😊🙂😃😆😍🥰☺", NORMAL),
    ("sad", "😢😭😞💔☹🙁😔😿", NORMAL),
    ("anxious", "😰😟😨😬😥", NORMAL),
    ("angry", "😡😠🤬", STRONG),
    ("frustrated", "😤🙄😩😫", NORMAL),
    ("excited", "🎉🥳🤩🙌", NORMAL),
    ("flirty", "😘😉😏💋😻", NORMAL),
    ("bored", "🥱😑😐", NORMAL),
    ("grateful", "🙏", NORMAL),
    ("confused", "🤔😕🤷❓", NORMAL),
)

_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "`": "'", "\u00b4": "'"})
_IGNORED_MARKS = re.compile("[\ufe0f\U0001f3fb-\U0001f3ff\u200d]")  # variation selector, skin tones, ZWJ


def _word_pattern(fragment: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w'])(?:{fragment})(?![\w'])")


_CUES: tuple[_Cue, ...] = tuple(
    [_Cue(mood, _word_pattern(fragment), weight, positive) for mood, fragment, weight, positive in _WORD_CUES]
    + [
        _Cue(mood, re.compile(f"[{re.escape(emojis)}]"), weight, False, is_negatable=False)
        for mood, emojis, weight in _EMOJI_CUES
    ]
    + [_Cue("excited", re.compile(r"!{3,}"), WEAK, False, is_negatable=False)]
)

_NEGATORS = frozenset(
    {
        "not",
        "no",
        "never",
        "nor",
        "neither",
        "without",
        "hardly",
        "cannot",
        "don't",
        "dont",
        "doesn't",
        "doesnt",
        "didn't",
        "didnt",
        "isn't",
        "isnt",
        "aren't",
        "arent",
        "wasn't",
        "wasnt",
        "weren't",
        "ain't",
        "won't",
        "wont",
        "wouldn't",
        "can't",
        "cant",
        "couldn't",
        "shouldn't",
        "haven't",
        "hasn't",
        "hadn't",
        "nothing",
        "nobody",
    }
)
NEGATION_WINDOW_WORDS = 3
_CLAUSE_BREAK = re.compile(r"[,.!?;:\n]|\bbut\b")
_WORD = re.compile(r"[\w']+")
_CANNOT_STOP = re.compile(r"\b(?:can't|cant|cannot|couldn't|won't) stop\b")  # "can't stop smiling" is not a negation
_TIREDNESS = _word_pattern(r"tired|exhausted|sleepy|drained|worn out|knackered")
_ENERGY_STEPS = ("low", "medium", "high")


def normalise_for_mood(text: str) -> str:
    text = unicodedata.normalize("NFC", text).translate(_APOSTROPHES)
    text = _IGNORED_MARKS.sub("", text)
    return " ".join(text.lower().split())


def _is_negated(text: str, start: int, *, floor: int) -> bool:
    # a negator binds to the nearest cue after it: "not sad I'm happy" negates only "sad"
    clause = _CANNOT_STOP.sub(" ", _CLAUSE_BREAK.split(text[floor:start])[-1])
    preceding = _WORD.findall(clause)[-NEGATION_WINDOW_WORDS:]
    return any(word in _NEGATORS for word in preceding)


def _non_overlapping_matches(text: str) -> list[tuple[_Cue, re.Match[str]]]:
    found = [(cue, match) for cue in _CUES for match in cue.pattern.finditer(text)]
    found.sort(key=lambda item: (item[1].start(), -(item[1].end() - item[1].start())))
    kept: list[tuple[_Cue, re.Match[str]]] = []
    covered_until = -1
    for cue, match in found:
        if match.start() < covered_until:
            continue
        kept.append((cue, match))
        covered_until = match.end()
    return kept


def _mood_scores(text: str) -> dict[str, float]:
    scores: dict[str, float] = {}
    counted: set[tuple[int, bool]] = set()  # each cue counts once as itself and once flipped
    previous_end = 0
    for cue, match in _non_overlapping_matches(text):
        is_negated = cue.is_negatable and _is_negated(text, match.start(), floor=previous_end)
        previous_end = match.end()
        if (id(cue), is_negated) in counted or (is_negated and not cue.is_positive):
            continue
        counted.add((id(cue), is_negated))
        mood, weight = ("sad", _FLIPPED_WEIGHT) if is_negated else (cue.mood, cue.weight)
        scores[mood] = scores.get(mood, 0.0) + weight
    return scores


def _is_shouting(original: str) -> bool:
    letters = [char for char in original if char.isalpha()]
    return len(letters) >= 5 and sum(char.isupper() for char in letters) / len(letters) >= 0.7


def _energy(mood: str, *, original: str, text: str, has_mood: bool) -> str:
    level = _ENERGY_STEPS.index(BASE_ENERGY[mood])
    if has_mood and (original.count("!") >= 2 or _is_shouting(original)):
        level += 1
    if _TIREDNESS.search(text):
        level -= 1
    return _ENERGY_STEPS[max(0, min(level, len(_ENERGY_STEPS) - 1))]


def _confidence(scores: dict[str, float], mood: str) -> float:
    confidence = min(0.9, max(0.6, 0.5 + 0.1 * scores[mood]))
    if len(scores) > 1:
        confidence = max(0.6, confidence - 0.1)
    return round(confidence, 2)


def classify_mood_keywords(text: str) -> MoodReading:
    """The offline fallback classifier (rules in the module docstring). Never raises; empty text is neutral."""
    normalised = normalise_for_mood(text or "")
    scores = _mood_scores(normalised)
    if not scores:
        energy = _energy(DEFAULT_MOOD, original=text or "", text=normalised, has_mood=False)
        if energy == DEFAULT_ENERGY:
            return default_reading()
        return MoodReading(DEFAULT_MOOD, energy, DEFAULT_STYLE, 0.6, "keywords")  # only tiredness was found
    best = max(scores.values())
    mood = next(candidate for candidate in _TIE_ORDER if scores.get(candidate) == best)
    energy = _energy(mood, original=text, text=normalised, has_mood=True)
    return MoodReading(mood, energy, style_for(mood, energy), _confidence(scores, mood), "keywords")
