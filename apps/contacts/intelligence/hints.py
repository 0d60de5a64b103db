"""Tone adaptation hints for the chatbot's system prompt (contact-intelligence.txt §4.3, §5;
chat-engine-memory.txt §3.3).

`render_emotional_context` produces the text block injected into the prompt. When crisis language was detected
the SAFETY section comes first, and the adaptation is the supportive one whatever the classified mood (a keyword
reading of "haha I want to die" says "happy"); stage behaviour such as discovery questions is left out then.
"""

from __future__ import annotations

from apps.contacts.intelligence.stages import STAGES

FLIRTY_PERSONAS = ("match", "redirect")
ANY_ENERGY = "any"

# (mood, energy) → hints; energy "any" applies when no exact entry exists.
ADAPTATION_TABLE: dict[tuple[str, str], tuple[str, ...]] = {
    ("happy", "high"): (
        "Match their energy: be enthusiastic and playful",
        "Emojis are welcome",
    ),
    ("happy", "medium"): ("Be warm and upbeat; keep it light and playful",),
    ("happy", "low"): (
        "Gentle warmth: they're content but tired",
        "Keep replies relaxed and unhurried",
    ),
    ("sad", "low"): (
        "Be supportive and listen first; don't force positivity",
        "Don't minimize their feelings",
        "Shorter, calmer responses that match their energy",
    ),
    ("sad", "medium"): (
        "Be empathetic and supportive; don't be overly cheerful",
        "Don't minimize their feelings",
    ),
    ("sad", "high"): (
        "They want to talk about it: engage deeply",
        "Ask gentle follow-up questions and reflect back what you hear",
        "Don't be overly cheerful",
    ),
    ("anxious", ANY_ENERGY): (
        "Be calm and reassuring; acknowledge the feeling",
        "Break things into small, manageable steps",
    ),
    ("frustrated", "high"): (
        "Let them vent: validate first, then offer perspective",
        "No cheerful emojis",
    ),
    ("frustrated", ANY_ENERGY): (
        "Be patient and acknowledge the difficulty",
        "Offer concrete solutions",
        "No cheerful emojis",
    ),
    ("angry", ANY_ENERGY): (
        "Stay calm and don't argue",
        "Acknowledge what upset them before anything else",
        "No jokes or cheerful emojis",
    ),
    ("bored", ANY_ENERGY): (
        "Introduce a new topic they might enjoy",
        "Ask engaging, open questions",
    ),
    ("excited", ANY_ENERGY): (
        "Match their energy: be enthusiastic",
        "Celebrate with them",
    ),
    ("confused", ANY_ENERGY): (
        "Explain clearly, using examples",
        "Ask clarifying questions",
    ),
    ("grateful", ANY_ENERGY): ("Acknowledge their thanks warmly",),
    ("neutral", ANY_ENERGY): (),
}

FLIRTY_HINTS: dict[str, tuple[str, ...]] = {
    "match": ("Match their flirty, playful tone, within the persona's boundaries",),
    "redirect": ("Gently redirect the flirting; stay friendly and don't shame them",),
}

CRISIS_ADAPTATION: tuple[str, ...] = (
    "Be warm and genuinely supportive, not cheerful",
    "Don't minimize their feelings",
    "Shorter, calmer responses; no jokes, no emojis",
)

STAGE_GUIDANCE: dict[str, tuple[str, ...]] = {
    "new": (
        # "no memories yet" (the spec's words) was false beside a caller's token_budget, which opens the memory block
        "New contact: you know little about them yet",
        "Ask 1-2 discovery questions per reply, naturally (name, interests, pets, work)",
        "Be warm and welcoming; focus on building rapport",
    ),
    "building": (
        "Use the basic facts you know about them",
        "Keep learning about them; an occasional discovery question is fine",
    ),
    "established": (
        "Draw on their facts, preferences and recent episodes naturally",
        "Follow up on things they told you recently",
    ),
    "deep": (
        "Use the full context: you know this person well",
        "Reference the people, pets and places in their life naturally",
    ),
    "fading": (
        "They haven't chatted in a while: re-engage warmly using a key fact about them",
        "Don't guilt them about the absence",
    ),
    "dormant": (
        "Long absence: greet them by name and, if natural, pick up the last topic",
        "Keep it light; don't assume details are unchanged",
    ),
}


def adaptation_hints(*, mood: str, energy: str, persona_flirty: str = "redirect") -> list[str]:
    """Hints for a mood and energy; an unknown mood or neutral gives none. persona_flirty: "match" | "redirect"."""
    if persona_flirty not in FLIRTY_PERSONAS:
        raise ValueError(f"persona_flirty must be one of {FLIRTY_PERSONAS}, not {persona_flirty!r}")
    if mood == "flirty":
        return list(FLIRTY_HINTS[persona_flirty])
    hints = ADAPTATION_TABLE.get((mood, energy))
    if hints is None:
        hints = ADAPTATION_TABLE.get((mood, ANY_ENERGY), ())
    return list(hints)


def unusual_mood_note(*, mood: str, energy: str, usual_mood: str | None, usual_energy: str | None) -> str | None:
    """A note like "This is unusual: normally happy and medium-energy"; None when the usual is unknown or the same."""
    if usual_mood is None:
        return None
    if mood == usual_mood and (usual_energy is None or energy == usual_energy):
        return None
    if usual_energy is None:
        return f"This is unusual: normally {usual_mood}"
    return f"This is unusual: normally {usual_mood} and {usual_energy}-energy"


def stage_guidance(stage: str) -> list[str]:
    if stage not in STAGE_GUIDANCE:
        raise ValueError(f"stage must be one of {STAGES}, not {stage!r}")
    return list(STAGE_GUIDANCE[stage])


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def render_emotional_context(
    *,
    mood: str,
    energy: str,
    stage: str,
    usual_mood: str | None,
    usual_energy: str | None,
    sessions_count: int,
    active_streak: int,
    crisis_guidance: str | None = None,
    persona_flirty: str = "redirect",
) -> str:
    """The emotional-context block of §4.3, one "- " line per item, ending with a newline."""
    lines: list[str] = []
    if crisis_guidance:
        lines += [
            "SAFETY:",
            "- The contact may be in crisis. Respond with care: take it seriously, be calm and kind, stay with them",
            f"- Share this support information in your reply: {crisis_guidance}",
            "- Encourage them to reach out to someone they trust or a professional now",
        ]
    lines += ["CONTACT EMOTIONAL CONTEXT:", f"- Current mood: {mood} (energy: {energy})"]
    note = unusual_mood_note(mood=mood, energy=energy, usual_mood=usual_mood, usual_energy=usual_energy)
    if note:
        lines.append(f"- {note}")
    lines.append(
        f"- Relationship stage: {stage} ({_plural(sessions_count, 'session')}, active streak: {active_streak})"
    )
    if crisis_guidance:
        adaptation = list(CRISIS_ADAPTATION)
    else:
        adaptation = adaptation_hints(mood=mood, energy=energy, persona_flirty=persona_flirty) + stage_guidance(stage)
    if adaptation:
        lines.append("ADAPTATION:")
        lines += [f"- {hint}" for hint in adaptation]
    return "\n".join(lines) + "\n"
