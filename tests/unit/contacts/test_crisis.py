"""Crisis-language detection: positives per language, hard negatives, negation, normalisation (pure)."""

from __future__ import annotations

import pytest

from apps.contacts.intelligence.crisis import NO_CRISIS, CrisisSignal, detect_crisis, normalise_text
from apps.contacts.intelligence.helplines import DEFAULT_HELPLINES, canonical_locale, helpline_guidance

HIGH_POSITIVES = [
    # English
    ("en-want-to-die", "I want to die", "en", ("want to die",)),
    ("en-wanna-die", "i wanna die", "en", ("wanna die",)),
    ("en-just-want-to-die", "honestly I just want to die.", "en", ("want to die",)),
    ("en-makes-me-want-to-die", "everything makes me want to die", "en", ("want to die",)),
    ("en-not-ok-then", "I'm not ok, I want to die", "en", ("want to die",)),
    ("en-kill-myself", "I'm going to kill myself", "en", ("kill myself",)),
    ("en-end-my-life", "I want to end my life", "en", ("end my life",)),
    ("en-suicidal", "I've been feeling suicidal", "en", ("suicidal",)),
    ("en-dont-want-to-live", "I don\u2019t want to live anymore", "en", ("don't want to live anymore",)),
    ("en-no-reason", "there's no reason to live", "en", ("no reason to live",)),
    ("en-better-off-dead", "everyone would be better off dead without me", "en", ("better off dead",)),
    ("en-self-harm", "I started self-harm again", "en", ("self-harm",)),
    ("en-self-harm-space", "thinking about self harm", "en", ("self harm",)),
    ("en-want-to-hurt", "I want to hurt myself", "en", ("want to hurt myself",)),
    ("en-been-cutting", "I've been cutting myself", "en", ("been cutting myself",)),
    ("en-caps", "I WANT TO DIE", "en", ("want to die",)),
    ("en-spaces", "I   want\tto  die", "en", ("want to die",)),
    ("en-two-phrases", "I wanna kill myself and end my life", "en", ("kill myself", "end my life")),
    ("en-for-real", "I want to die for real", "en", ("want to die",)),
    # Spanish
    ("es-quiero-morir", "Quiero morir", "es", ("quiero morir",)),
    ("es-me-quiero-morir", "ya me quiero morir", "es", ("me quiero morir",)),
    ("es-no-quiero-vivir", "no quiero vivir más", "es", ("no quiero vivir mas",)),
    ("es-suicidarme", "estoy pensando en suicidarme", "es", ("suicidarme",)),
    ("es-hacerme-dano", "quiero hacerme daño", "es", ("hacerme dano",)),
    ("es-no-accent", "quiero hacerme dano", "es", ("hacerme dano",)),
    # Portuguese
    ("pt-quero-morrer", "eu quero morrer", "pt", ("quero morrer",)),
    ("pt-nao-quero-viver", "não quero mais viver", "pt", ("nao quero mais viver",)),
    ("pt-me-matar", "vou me matar", "pt", ("vou me matar",)),
    # French
    ("fr-je-veux-mourir", "Je veux mourir", "fr", ("je veux mourir",)),
    ("fr-suicider", "j\u2019ai envie de me suicider", "fr", ("me suicider",)),
    # Hindi / Hinglish
    ("hi-marna-chahta", "main marna chahta hoon", "hi", ("marna chahta hoon",)),
    ("hi-marna-chahti", "marna chahti hu", "hi", ("marna chahti hu",)),
    ("hi-jeena-nahi", "ab jeena nahi chahta", "hi", ("jeena nahi chahta",)),
    ("hi-jina-nhi", "jina nhi chahti", "hi", ("jina nhi chahti",)),
    ("hi-khudkushi", "khudkushi kar lunga", "hi", ("khudkushi",)),
    ("hi-devanagari", "मैं जीना नहीं चाहता", "hi", ("जीना नहीं चाहता",)),
    ("hi-devanagari-nukta", "ख़ुदकुशी", "hi", ("खुदकुशी",)),
]

ELEVATED_POSITIVES = [
    ("en-cant-take", "I can\u2019t take this anymore", "en", ("can't take this anymore",)),
    ("en-cant-take-ascii", "i cant take it any more", "en", ("cant take it any more",)),
    ("en-cannot-go-on", "I cannot go on.", "en", ("cannot go on",)),
    ("en-cant-go-on-like-this", "I can't go on like this", "en", ("can't go on",)),
    ("en-hurt-myself-bare", "I hurt myself again", "en", ("hurt myself",)),
    ("es-no-puedo-mas", "ya no puedo más", "es", ("ya no puedo mas",)),
    ("pt-nao-aguento", "não aguento mais", "pt", ("nao aguento mais",)),
    ("fr-nen-peux-plus", "je n'en peux plus", "fr", ("je n'en peux plus",)),
]

HARD_NEGATIVES = [
    ("to-die-for", "this movie is to die for"),
    ("dying-to", "I'm dying to see it"),
    ("kill-for-pizza", "I could kill for a pizza"),
    ("joke-killed-me", "that joke killed me"),
    ("phone-dying", "my phone is dying"),
    ("dying-of-laughter", "I was dying of laughter"),
    ("killing-it", "killing it at work today"),
    ("die-for-coffee", "I'd die for a coffee"),
    ("character-wants-to-die", "the character wants to die in the book"),
    ("kill-process", "how do I kill a process in linux"),
    ("dont-want-to-die", "I don't want to die"),
    ("dont-want-to-die-curly", "I don\u2019t want to die on this hill"),
    ("do-not-want-to-die", "I do not want to die"),
    ("never-kill-myself", "I'm never going to kill myself"),
    ("want-to-die-laughing", "I want to die laughing"),
    ("want-to-die-embarrassment", "I wanna die of embarrassment"),
    ("die-happy", "I want to die happy and old"),
    ("kill-myself-laughing", "I nearly killed myself laughing"),
    ("they-want-to-die", "they want to die in the game"),
    ("do-you-want-to-die", "do you want to die in Minecraft?"),
    ("cut-myself-shaving", "I cut myself shaving"),
    ("cut-myself-a-slice", "I'll cut myself a slice of cake"),
    ("hurt-myself-gym", "I hurt myself at the gym"),
    ("cant-go-on-trip", "I can't go on the trip"),
    ("live-in-london", "I don't want to live in London"),
    ("suicide-squad", "watching Suicide Squad tonight"),
    ("es-no-quiero-morir", "no quiero morir"),
    ("es-muero-de-risa", "me muero de risa"),
    ("es-no-quiero-vivir-aqui", "no quiero vivir aquí"),
    ("pt-nao-quero-morrer", "não quero morrer"),
    ("fr-ne-veux-pas-mourir", "je ne veux pas mourir"),
    ("hi-marna-nahi", "main marna nahi chahta"),
    ("empty", ""),
]


@pytest.mark.parametrize(
    ("text", "language", "matched"), [case[1:] for case in HIGH_POSITIVES], ids=[case[0] for case in HIGH_POSITIVES]
)
def test_high_severity_positives(text, language, matched):
    assert detect_crisis(text) == CrisisSignal(is_crisis=True, severity="high", matched=matched, language=language)


@pytest.mark.parametrize(
    ("text", "language", "matched"),
    [case[1:] for case in ELEVATED_POSITIVES],
    ids=[case[0] for case in ELEVATED_POSITIVES],
)
def test_elevated_severity_positives(text, language, matched):
    assert detect_crisis(text) == CrisisSignal(is_crisis=True, severity="elevated", matched=matched, language=language)


@pytest.mark.parametrize("text", [case[1] for case in HARD_NEGATIVES], ids=[case[0] for case in HARD_NEGATIVES])
def test_hard_negatives_do_not_trigger(text):
    assert detect_crisis(text) == NO_CRISIS
    assert (NO_CRISIS.is_crisis, NO_CRISIS.severity, NO_CRISIS.matched, NO_CRISIS.language) == (False, "none", (), "")


def test_most_severe_match_sets_severity_and_language():
    signal = detect_crisis("no puedo más, I want to die")

    assert signal == CrisisSignal(
        is_crisis=True, severity="high", matched=("no puedo mas", "want to die"), language="en"
    )


def test_intent_phrase_wins_over_the_bare_phrase_inside_it():
    signal = detect_crisis("I want to hurt myself")

    assert (signal.severity, signal.matched) == ("high", ("want to hurt myself",))


def test_negation_in_another_clause_does_not_cancel():
    assert detect_crisis("I don't know why but I want to die").severity == "high"
    assert detect_crisis("I never said much. I want to die").severity == "high"


def test_normalise_text():
    assert normalise_text("  I\u2019M   Not\tOK\u2018  ") == "i'm not ok'"
    assert normalise_text("cafe\u0301") == "caf\u00e9"  # NFC


INTERNATIONAL_TEXT = (
    "If you are in immediate danger call your local emergency number. Find a helpline: https://findahelpline.com"
)


@pytest.mark.parametrize(
    ("locale", "key"),
    [
        ("en-US", "en-US"),
        ("en_us", "en-US"),
        ("en-GB", "en-GB"),
        ("en-IN", "en-IN"),
        ("en-AU", "en"),
        ("en", "en"),
        ("es-MX", "es"),
        ("hi-IN", "hi"),
        ("pt-BR", "pt"),
        ("fr-CA", "fr"),
        ("de-DE", "international"),
        ("", "international"),
        (None, "international"),
    ],
    ids=[
        "us",
        "underscore-lowercase",
        "uk",
        "india",
        "australia-to-en",
        "en",
        "mexico-to-es",
        "hindi",
        "brazil",
        "canada-fr",
        "unknown",
        "empty",
        "none",
    ],
)
def test_helpline_fallback(locale, key):
    assert helpline_guidance(locale) == DEFAULT_HELPLINES[key]


def test_default_helplines_use_the_real_numbers():
    assert DEFAULT_HELPLINES["international"] == INTERNATIONAL_TEXT
    assert "988" in DEFAULT_HELPLINES["en-US"]
    assert "116 123" in DEFAULT_HELPLINES["en-GB"]
    assert "14416" in DEFAULT_HELPLINES["en-IN"] and "14416" in DEFAULT_HELPLINES["hi"]
    assert "024" in DEFAULT_HELPLINES["es"]
    assert "3114" in DEFAULT_HELPLINES["fr"]
    assert "188" in DEFAULT_HELPLINES["pt"]
    assert set(DEFAULT_HELPLINES) == {"international", "en", "en-US", "en-GB", "en-IN", "es", "hi", "pt", "fr"}


@pytest.mark.parametrize(
    ("locale", "overrides", "text"),
    [
        ("en-IN", {"en-IN": "Call our partner line 1800-000."}, "Call our partner line 1800-000."),
        ("en-in", {"EN_in": "Tenant India text"}, "Tenant India text"),
        ("en-IN", {"en": "Tenant English text"}, DEFAULT_HELPLINES["en-IN"]),  # the more specific default wins
        ("en-AU", {"en": "Tenant English text"}, "Tenant English text"),
        ("de", {"international": "Tenant fallback"}, "Tenant fallback"),
        ("en-US", {"international": "Tenant fallback"}, DEFAULT_HELPLINES["en-US"]),
        ("en-US", {"en-US": "   "}, DEFAULT_HELPLINES["en-US"]),  # a blank override is ignored
        ("en-US", None, DEFAULT_HELPLINES["en-US"]),
    ],
    ids=[
        "exact-override",
        "override-key-normalised",
        "language-override-vs-regional-default",
        "language-override",
        "international-override",
        "regional-default-beats-international-override",
        "blank-override",
        "no-overrides",
    ],
)
def test_helpline_overrides(locale, overrides, text):
    assert helpline_guidance(locale, overrides) == text


@pytest.mark.parametrize(
    ("locale", "canonical"),
    [
        ("en_in", "en-IN"),
        ("EN-gb", "en-GB"),
        ("zh-Hant-TW", "zh-TW"),
        ("es-419", "es-419"),
        ("fr", "fr"),
        ("  ", None),
        (None, None),
    ],
)
def test_canonical_locale(locale, canonical):
    assert canonical_locale(locale) == canonical
