"""The keyword mood classifier, LLM answer validation and the mood helpers (pure: no database)."""

from __future__ import annotations

import pytest

from apps.contacts.intelligence.mood import (
    ENERGIES,
    MOOD_LLM_SYSTEM_PROMPT,
    MOODS,
    NEGATIVE_MOODS,
    STYLES,
    MoodReading,
    classify_mood_keywords,
    is_negative,
    mood_from_llm_json,
    mood_from_previous,
    style_for,
)
from apps.contacts.intelligence.mood_dataset import CHALLENGE_MOODS, LABELLED_MOODS


@pytest.mark.parametrize(
    ("text", "mood", "energy"), LABELLED_MOODS, ids=[case.text or "<empty>" for case in LABELLED_MOODS]
)
def test_labelled_table(text, mood, energy):
    reading = classify_mood_keywords(text)

    assert (reading.mood, reading.energy) == (mood, energy)


def test_labelled_table_covers_every_mood_and_has_60_plus_messages():
    assert len(LABELLED_MOODS) >= 60
    assert {case.mood for case in LABELLED_MOODS} == set(MOODS)
    assert all(case.mood in MOODS and case.energy in ENERGIES for case in LABELLED_MOODS + CHALLENGE_MOODS)


@pytest.mark.parametrize("case", CHALLENGE_MOODS, ids=[case.text for case in CHALLENGE_MOODS])
def test_challenge_messages_always_get_a_valid_reading(case):
    reading = classify_mood_keywords(case.text)

    assert reading.mood in MOODS and reading.energy in ENERGIES and reading.style in STYLES
    assert reading.source in ("keywords", "default")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("what time is it", MoodReading("neutral", "medium", "casual", 0.5, "default")),
        ("ugh", MoodReading("frustrated", "medium", "venting", 0.6, "keywords")),
        ("haha that was amazing 😂", MoodReading("happy", "high", "playful", 0.8, "keywords")),
        ("I'm furious", MoodReading("angry", "high", "venting", 0.7, "keywords")),
        ("I can't wait!!!", MoodReading("excited", "high", "playful", 0.75, "keywords")),
        ("sad sad crying heartbroken 😭 miserable lonely", MoodReading("sad", "low", "supportive", 0.9, "keywords")),
        ("haha but I'm worried", MoodReading("anxious", "low", "supportive", 0.6, "keywords")),
        ("I'm so sad!!!", MoodReading("sad", "medium", "supportive", 0.6, "keywords")),
        ("I'm not happy", MoodReading("sad", "low", "supportive", 0.6, "keywords")),
        ("so tired", MoodReading("neutral", "low", "casual", 0.6, "keywords")),
        ("you're so cute 😘", MoodReading("flirty", "medium", "romantic", 0.8, "keywords")),
    ],
    ids=[
        "default",
        "one-cue",
        "three-cues",
        "strong-cue",
        "strong-plus-weak",
        "capped",
        "contested",
        "sad-excl",
        "negated-positive",
        "tired-only",
        "flirty",
    ],
)
def test_exact_readings_and_confidence(text, expected):
    assert classify_mood_keywords(text) == expected


@pytest.mark.parametrize(
    ("text", "mood"),
    [
        ("I'm not sad", "neutral"),
        ("I'm not really that worried", "neutral"),
        ("not bored at all", "neutral"),
        ("I'm no longer sad", "neutral"),
        ("not sad, just tired", "neutral"),  # the comma closes the negated clause; tiredness is not a mood
        ("I'm not sure why, but I'm sad", "sad"),  # negation in another clause
        ("I'm not fine at all, I'm so sad", "sad"),
        ("not excited about it", "sad"),
        ("I can't stop crying", "sad"),
        ("I can't stop smiling", "happy"),
        ("I'm not sad I'm happy", "happy"),  # the negated sad cue is dropped, happy is not negated
    ],
    ids=[
        "not-sad",
        "not-really-that",
        "not-at-all",
        "no-longer",
        "comma-clause",
        "other-clause",
        "fine-then-sad",
        "not-excited",
        "cant-stop-crying",
        "cant-stop-smiling",
        "not-sad-happy",
    ],
)
def test_negation_window(text, mood):
    assert classify_mood_keywords(text).mood == mood


@pytest.mark.parametrize(
    ("text", "mood"),
    [
        ("I miss you", "sad"),
        ("missing home", "sad"),
        ("I missed the train", "neutral"),
        ("you can dismiss it", "neutral"),
        ("Miss Smith is my teacher", "neutral"),
        ("lollipop", "neutral"),
        ("lolol", "happy"),
        ("ahahaha", "happy"),
        ("the thanksgiving menu", "neutral"),
        ("I\u2019m so excited", "excited"),
        ("🙏🏽", "grateful"),
        ("☹️", "sad"),
    ],
    ids=[
        "miss-you",
        "missing-home",
        "missed-train",
        "dismiss",
        "miss-title",
        "lollipop",
        "lolol",
        "ahahaha",
        "thanksgiving",
        "curly-apostrophe",
        "skin-tone",
        "variation-selector",
    ],
)
def test_word_boundaries_and_emoji(text, mood):
    assert classify_mood_keywords(text).mood == mood


@pytest.mark.parametrize(
    ("text", "energy"),
    [
        ("I'm bored", "low"),
        ("I'm bored!!", "medium"),
        ("I'M SO BORED", "medium"),
        ("I'M SO BORED!!", "medium"),  # one step, however many signals
        ("ugh!", "medium"),  # a single "!" is not intensity
        ("ugh!!", "high"),
        ("haha I'm exhausted", "medium"),
        ("OK", "medium"),  # no mood: intensity does not apply
        ("WHAT TIME IS IT!!", "medium"),
    ],
    ids=[
        "base",
        "exclamations",
        "caps",
        "both",
        "single-excl",
        "frustrated-excl",
        "tired",
        "short-caps",
        "neutral-shouting",
    ],
)
def test_energy_intensity(text, energy):
    assert classify_mood_keywords(text).energy == energy


def test_sad_with_high_energy_has_the_deep_style():
    assert style_for("sad", "high") == "deep"
    assert style_for("sad", "low") == "supportive"
    assert style_for("unknown", "low") == "casual"


@pytest.mark.parametrize(
    ("mood", "style"),
    [
        ("happy", "playful"),
        ("sad", "supportive"),
        ("anxious", "supportive"),
        ("frustrated", "venting"),
        ("angry", "venting"),
        ("flirty", "romantic"),
        ("bored", "casual"),
        ("neutral", "casual"),
    ],
)
def test_style_mapping(mood, style):
    assert style_for(mood, "medium") == style


def test_negative_moods():
    assert sorted(NEGATIVE_MOODS) == ["angry", "anxious", "sad"]
    assert [mood for mood in MOODS if is_negative(mood)] == ["sad", "anxious", "angry"]
    assert not is_negative("frustrated")


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"mood": "sad", "energy": "low", "style": "supportive"}, MoodReading("sad", "low", "supportive", 0.9, "llm")),
        (
            {"mood": " Happy ", "energy": "HIGH", "style": "Playful"},
            MoodReading("happy", "high", "playful", 0.9, "llm"),
        ),
        ({"mood": "sad", "energy": "high"}, MoodReading("sad", "high", "deep", 0.9, "llm")),
        (
            {"mood": "anxious", "energy": "low", "style": "supportive", "confidence": 0.72},
            MoodReading("anxious", "low", "supportive", 0.72, "llm"),
        ),
        (
            {"mood": "anxious", "energy": "low", "confidence": 7},
            MoodReading("anxious", "low", "supportive", 0.9, "llm"),
        ),
        (
            {"mood": "anxious", "energy": "low", "confidence": True},
            MoodReading("anxious", "low", "supportive", 0.9, "llm"),
        ),
        ({"mood": "ecstatic", "energy": "high", "style": "playful"}, None),
        ({"mood": "happy", "energy": "extreme"}, None),
        ({"mood": "happy", "energy": "high", "style": "sarcastic"}, None),
        ({"mood": "happy"}, None),
        ({"mood": 3, "energy": "high"}, None),
        (["happy", "high"], None),
        (None, None),
    ],
    ids=[
        "valid",
        "trimmed-lowercased",
        "style-derived",
        "confidence-kept",
        "confidence-out-of-range",
        "confidence-bool",
        "unknown-mood",
        "unknown-energy",
        "unknown-style",
        "missing-energy",
        "non-string",
        "not-a-dict",
        "none",
    ],
)
def test_mood_from_llm_json(data, expected):
    assert mood_from_llm_json(data) == expected


def test_llm_prompt_lists_every_allowed_value_and_stays_short():
    assert MOOD_LLM_SYSTEM_PROMPT.startswith("Classify this message's emotion. JSON only.")
    for value in MOODS + ENERGIES + STYLES:
        assert value in MOOD_LLM_SYSTEM_PROMPT
    assert len(MOOD_LLM_SYSTEM_PROMPT.split()) <= 20


@pytest.mark.parametrize(
    ("mood", "energy", "style", "expected"),
    [
        ("bored", "low", None, MoodReading("bored", "low", "casual", 0.5, "previous")),
        ("sad", "low", "deep", MoodReading("sad", "low", "deep", 0.5, "previous")),
        ("sad", "low", "bogus", MoodReading("sad", "low", "supportive", 0.5, "previous")),
        (None, None, None, MoodReading("neutral", "medium", "casual", 0.5, "default")),
        ("grumpy", "low", None, MoodReading("neutral", "medium", "casual", 0.5, "default")),
    ],
    ids=["stored", "stored-style", "invalid-style", "nothing-stored", "invalid-mood"],
)
def test_mood_from_previous(mood, energy, style, expected):
    assert mood_from_previous(mood=mood, energy=energy, style=style) == expected
