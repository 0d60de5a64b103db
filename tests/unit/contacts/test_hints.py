"""Adaptation hints, the unusual-mood note, stage guidance and the rendered prompt block (pure)."""

from __future__ import annotations

import pytest

from apps.contacts.intelligence.hints import (
    adaptation_hints,
    render_emotional_context,
    stage_guidance,
    unusual_mood_note,
)
from apps.contacts.intelligence.mood import ENERGIES, MOODS
from apps.contacts.intelligence.stages import STAGES


@pytest.mark.parametrize(
    ("mood", "energy", "hints"),
    [
        ("happy", "high", ["Match their energy: be enthusiastic and playful", "Emojis are welcome"]),
        ("happy", "low", ["Gentle warmth: they're content but tired", "Keep replies relaxed and unhurried"]),
        (
            "sad",
            "low",
            [
                "Be supportive and listen first; don't force positivity",
                "Don't minimize their feelings",
                "Shorter, calmer responses that match their energy",
            ],
        ),
        (
            "sad",
            "high",
            [
                "They want to talk about it: engage deeply",
                "Ask gentle follow-up questions and reflect back what you hear",
                "Don't be overly cheerful",
            ],
        ),
        (
            "anxious",
            "low",
            ["Be calm and reassuring; acknowledge the feeling", "Break things into small, manageable steps"],
        ),
        (
            "anxious",
            "high",
            ["Be calm and reassuring; acknowledge the feeling", "Break things into small, manageable steps"],
        ),
        ("frustrated", "high", ["Let them vent: validate first, then offer perspective", "No cheerful emojis"]),
        (
            "frustrated",
            "medium",
            ["Be patient and acknowledge the difficulty", "Offer concrete solutions", "No cheerful emojis"],
        ),
        (
            "angry",
            "high",
            [
                "Stay calm and don't argue",
                "Acknowledge what upset them before anything else",
                "No jokes or cheerful emojis",
            ],
        ),
        ("bored", "low", ["Introduce a new topic they might enjoy", "Ask engaging, open questions"]),
        ("excited", "high", ["Match their energy: be enthusiastic", "Celebrate with them"]),
        ("confused", "medium", ["Explain clearly, using examples", "Ask clarifying questions"]),
        ("grateful", "medium", ["Acknowledge their thanks warmly"]),
        ("neutral", "medium", []),
        ("ecstatic", "high", []),
    ],
    ids=[
        "happy-high",
        "happy-low",
        "sad-low",
        "sad-high",
        "anxious-low",
        "anxious-high",
        "frustrated-high",
        "frustrated-medium",
        "angry",
        "bored",
        "excited",
        "confused",
        "grateful",
        "neutral",
        "unknown",
    ],
)
def test_adaptation_table(mood, energy, hints):
    assert adaptation_hints(mood=mood, energy=energy) == hints


def test_every_mood_and_energy_is_covered():
    for mood in MOODS:
        for energy in ENERGIES:
            hints = adaptation_hints(mood=mood, energy=energy)
            assert (hints == []) == (mood == "neutral"), (mood, energy)


@pytest.mark.parametrize(
    ("persona", "hints"),
    [
        ("redirect", ["Gently redirect the flirting; stay friendly and don't shame them"]),
        ("match", ["Match their flirty, playful tone, within the persona's boundaries"]),
    ],
)
def test_flirty_depends_on_persona(persona, hints):
    assert adaptation_hints(mood="flirty", energy="medium", persona_flirty=persona) == hints


def test_flirty_defaults_to_redirect_and_rejects_unknown_personas():
    assert adaptation_hints(mood="flirty", energy="high") == [
        "Gently redirect the flirting; stay friendly and don't shame them"
    ]
    with pytest.raises(ValueError, match="persona_flirty"):
        adaptation_hints(mood="flirty", energy="high", persona_flirty="always")


@pytest.mark.parametrize(
    ("mood", "energy", "usual_mood", "usual_energy", "note"),
    [
        ("sad", "low", "happy", "medium", "This is unusual: normally happy and medium-energy"),
        ("happy", "low", "happy", "high", "This is unusual: normally happy and high-energy"),
        ("sad", "low", "happy", None, "This is unusual: normally happy"),
        ("happy", "high", "happy", "high", None),
        ("happy", "low", "happy", None, None),
        ("sad", "low", None, "medium", None),
        ("sad", "low", None, None, None),
    ],
    ids=[
        "different-mood",
        "different-energy",
        "usual-energy-unknown",
        "same",
        "same-mood-energy-unknown",
        "usual-unknown",
        "nothing-known",
    ],
)
def test_unusual_mood_note(mood, energy, usual_mood, usual_energy, note):
    assert unusual_mood_note(mood=mood, energy=energy, usual_mood=usual_mood, usual_energy=usual_energy) == note


@pytest.mark.parametrize(
    ("stage", "guidance"),
    [
        (
            "new",
            [
                "New contact: you know little about them yet",
                "Ask 1-2 discovery questions per reply, naturally (name, interests, pets, work)",
                "Be warm and welcoming; focus on building rapport",
            ],
        ),
        (
            "building",
            [
                "Use the basic facts you know about them",
                "Keep learning about them; an occasional discovery question is fine",
            ],
        ),
        (
            "established",
            [
                "Draw on their facts, preferences and recent episodes naturally",
                "Follow up on things they told you recently",
            ],
        ),
        (
            "deep",
            [
                "Use the full context: you know this person well",
                "Reference the people, pets and places in their life naturally",
            ],
        ),
        (
            "fading",
            [
                "They haven't chatted in a while: re-engage warmly using a key fact about them",
                "Don't guilt them about the absence",
            ],
        ),
        (
            "dormant",
            [
                "Long absence: greet them by name and, if natural, pick up the last topic",
                "Keep it light; don't assume details are unchanged",
            ],
        ),
    ],
    ids=list(STAGES),
)
def test_stage_guidance(stage, guidance):
    assert stage_guidance(stage) == guidance


def test_stage_guidance_rejects_unknown_stage():
    with pytest.raises(ValueError, match="stage must be one of"):
        stage_guidance("acquainted")


def test_render_established_sad_contact():
    text = render_emotional_context(
        mood="sad",
        energy="low",
        stage="established",
        usual_mood="happy",
        usual_energy="medium",
        sessions_count=22,
        active_streak=20,
    )

    assert text.splitlines() == [
        "CONTACT EMOTIONAL CONTEXT:",
        "- Current mood: sad (energy: low)",
        "- This is unusual: normally happy and medium-energy",
        "- Relationship stage: established (22 sessions, active streak: 20)",
        "ADAPTATION:",
        "- Be supportive and listen first; don't force positivity",
        "- Don't minimize their feelings",
        "- Shorter, calmer responses that match their energy",
        "- Draw on their facts, preferences and recent episodes naturally",
        "- Follow up on things they told you recently",
    ]
    assert text.endswith("\n")


def test_render_new_neutral_contact_without_usual_mood():
    text = render_emotional_context(
        mood="neutral",
        energy="medium",
        stage="new",
        usual_mood=None,
        usual_energy=None,
        sessions_count=1,
        active_streak=1,
    )

    assert text == (
        "CONTACT EMOTIONAL CONTEXT:\n"
        "- Current mood: neutral (energy: medium)\n"
        "- Relationship stage: new (1 session, active streak: 1)\n"
        "ADAPTATION:\n"
        "- New contact: you know little about them yet\n"
        "- Ask 1-2 discovery questions per reply, naturally (name, interests, pets, work)\n"
        "- Be warm and welcoming; focus on building rapport\n"
    )


def test_render_flirty_persona_match():
    text = render_emotional_context(
        mood="flirty",
        energy="medium",
        stage="building",
        usual_mood="flirty",
        usual_energy="medium",
        sessions_count=5,
        active_streak=3,
        persona_flirty="match",
    )

    assert "- Match their flirty, playful tone, within the persona's boundaries\n" in text
    assert "This is unusual" not in text


def test_render_crisis_puts_safety_first_and_replaces_cheerful_adaptation():
    text = render_emotional_context(
        mood="happy",
        energy="high",
        stage="new",
        usual_mood=None,
        usual_energy=None,
        sessions_count=0,
        active_streak=0,
        crisis_guidance="Call or text 988.",
    )

    assert text.splitlines() == [
        "SAFETY:",
        "- The contact may be in crisis. Respond with care: take it seriously, be calm and kind, stay with them",
        "- Share this support information in your reply: Call or text 988.",
        "- Encourage them to reach out to someone they trust or a professional now",
        "CONTACT EMOTIONAL CONTEXT:",
        "- Current mood: happy (energy: high)",
        "- Relationship stage: new (0 sessions, active streak: 0)",
        "ADAPTATION:",
        "- Be warm and genuinely supportive, not cheerful",
        "- Don't minimize their feelings",
        "- Shorter, calmer responses; no jokes, no emojis",
    ]
