"""Crisis-language detection, independent of any LLM (contact-intelligence.txt §4.2).

It runs on every inbound message before anything else, so a provider outage can never suppress the helpline
reply. Recall matters more than precision here, yet everyday idioms must not fire, because a helpline reply to
"this cake is to die for" destroys trust too.

Decisions (pinned by tests/unit/contacts/test_crisis.py):
- Text is normalised first: NFC, lower case, curly/modifier apostrophes unified to ', whitespace collapsed.
  Matching then runs on an accent-folded copy (Latin diacritics removed, Devanagari nukta removed), so
  "hacerme daño" and "hacerme dano", "não" and "nao", "ख़ुदकुशी" and "खुदकुशी" all match. `matched` holds the
  folded text of each hit.
- Languages: English, Spanish, Portuguese, French, Hindi (romanised/Hinglish and Devanagari).
- Severity "high": explicit suicidal or self-harm intent ("I want to die", "kill myself", "suicidal",
  "quiero morir", "marna chahta hoon", ...). "elevated": acute distress without explicit intent ("can't take
  this anymore", "cannot go on", "no puedo más") and a bare "hurt/cut myself" that is not clearly an accident.
  Both are crises (`is_crisis`); the caller decides whether "elevated" also flags for human review.
- Idioms are negatives because no phrase matches them: "to die for", "dying to", "dying of laughter",
  "I could kill for", "that joke killed me", "my phone is dying", "killing it", "kill a process". Explicit
  continuations are excluded too: "want to die laughing / of embarrassment / for ...", "kill myself laughing",
  "cut myself shaving / while cooking", "hurt myself at the gym", "can't go on the trip",
  "don't want to live in London".
- Negation: a negator reached from the phrase by skipping only filler words ("i", "really", "going", "to",
  ...) cancels it: "I don't want to die", "I'm never going to kill myself", "no quiero morir", "não quero
  morrer". A negation elsewhere in the sentence does not ("I'm not ok, I want to die" is a crisis).
- Third person: "want to die" counts only for the speaker; "he/she/they/you want to die" and "the character
  wants to die in the book" are not the contact's crisis (a concern about someone else is for the
  conversation, not for this detector).
- Limits: hyperbole that uses a positive phrase verbatim ("this homework makes me want to die", "I want to
  die lol") is reported as a crisis on purpose; quoted speech is not distinguished; other languages are not
  covered.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

SEVERITIES = ("none", "elevated", "high")
NO_LANGUAGE = ""


@dataclass(frozen=True)
class CrisisSignal:
    is_crisis: bool
    severity: str  # "none" | "elevated" | "high"
    matched: tuple[str, ...]
    language: str  # language of the most severe match ("en", "es", "pt", "fr", "hi"); "" when none


NO_CRISIS = CrisisSignal(is_crisis=False, severity="none", matched=(), language=NO_LANGUAGE)

_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "`": "'", "\u00b4": "'", "\u2032": "'"})
_NUKTA = "\u093c"


def normalise_text(text: str) -> str:
    """NFC, lower case, one kind of apostrophe, single spaces."""
    text = unicodedata.normalize("NFC", text).translate(_APOSTROPHES).lower()
    return " ".join(text.split())


def _fold(text: str) -> str:
    decomposed = unicodedata.normalize("NFD", text)
    kept = "".join(char for char in decomposed if not ("\u0300" <= char <= "\u036f" or char == _NUKTA))
    return unicodedata.normalize("NFC", kept)


@dataclass(frozen=True)
class _Phrase:
    language: str
    severity: str
    pattern: re.Pattern[str]
    excluded_after: re.Pattern[str] | None = None  # idiomatic continuations right after the phrase
    is_speaker_only: bool = False  # reject when the subject before it is someone else ("he wants to die")


def _phrase(
    language: str, severity: str, fragment: str, *, not_before: str | None = None, is_speaker_only: bool = False
) -> _Phrase:
    # word boundaries only around Latin text; Devanagari phrases are matched as substrings
    pattern = re.compile(rf"(?<![\w'])(?:{_fold(fragment)})(?![\w'])")
    excluded = re.compile(rf"\s*(?:{not_before})(?![\w'])") if not_before else None
    return _Phrase(language, severity, pattern, excluded, is_speaker_only)


HIGH, ELEVATED = "high", "elevated"
_ACCIDENT = (
    r"off|a|some|short|slack|free|loose|while|when|shaving|cooking|chopping|playing|lifting|running|at|in|during"
    r"|on|by accident|accidentally|earlier|today|yesterday|lol|lmao"
)
_PLACE = r"in|at|on|near|with|there|here|abroad|together|somewhere|anywhere|next|close|far|by|under"

_PHRASES: tuple[_Phrase, ...] = (
    # English
    _phrase(
        "en",
        HIGH,
        r"(?:want(?:ed)? to|wanna|want 2|wish i could|wish to) (?:just )?die",
        not_before=(
            r"laughing|of (?:laughter|embarrassment|cringe|shame)|for(?! (?:real|reals|sure))|old|happy|peacefully"
        ),
        is_speaker_only=True,
    ),
    _phrase("en", HIGH, r"(?:want(?:ed)? to|wanna) be dead|wish i (?:was|were) (?:dead|never born)"),
    _phrase("en", HIGH, r"wish i (?:wasn't|weren't) alive|don't want to be alive|do not want to be alive"),
    _phrase("en", HIGH, r"kill(?:ing)? myself|off myself|unalive myself", not_before=r"laughing|lol"),
    _phrase("en", HIGH, r"end(?:ing)? my (?:own )?life|take my (?:own )?life|end(?:ing)? it all"),
    _phrase("en", HIGH, r"suicidal|commit(?:ting)? suicide|(?:thinking|thoughts) (?:about|of) suicide"),
    _phrase(
        "en",
        HIGH,
        r"(?:don't|dont|do not) (?:even |really )?want to live(?: anymore| any more)?",
        not_before=_PLACE,
    ),
    _phrase("en", HIGH, r"no reason to live|nothing to live for|better off dead|better off without me"),
    _phrase("en", HIGH, r"self[- ]?harm(?:ing)?"),
    _phrase(
        "en",
        HIGH,
        r"(?:want to|wanna|going to|gonna|urge to|urges to|thinking about|feel like|been|started|keep|kept) "
        r"(?:hurt|harm|cut|hurting|"
        r"harming|cutting) myself",
    ),
    _phrase("en", ELEVATED, r"(?:cut|hurt|harm|cutting|hurting|harming) myself", not_before=_ACCIDENT),
    _phrase("en", ELEVATED, r"(?:can't|cant|cannot|can not) (?:take|handle|do) (?:this|it) (?:anymore|any more)"),
    _phrase(
        "en",
        ELEVATED,
        r"(?:can't|cant|cannot|can not) go on(?=\s*(?:$|[.!?,;]|like this|anymore|any more|any longer|living))",
    ),
    # Spanish
    _phrase("es", HIGH, r"(?:me )?quiero morir(?:me)?", not_before=r"de (?:risa|verguenza)"),
    _phrase("es", HIGH, r"no quiero (?:seguir )?vivir(?: mas)?", not_before=r"en|con|aqui|alli|alla|cerca|lejos"),
    _phrase("es", HIGH, r"suicidarme|quitarme la vida|hacerme dano|(?:quiero|voy a) matarme|me quiero matar"),
    _phrase("es", ELEVATED, r"(?:ya )?no puedo mas|(?:ya )?no aguanto mas"),
    # Portuguese
    _phrase("pt", HIGH, r"quero morrer", not_before=r"de (?:rir|vergonha)"),
    _phrase("pt", HIGH, r"nao quero (?:mais )?viver(?: mais)?", not_before=r"em|com|aqui|ali|la|perto|longe"),
    _phrase("pt", HIGH, r"(?:vou|quero) me matar|me suicidar|tirar (?:a )?minha (?:propria )?vida"),
    _phrase("pt", HIGH, r"(?:quero|vou) me machucar"),
    _phrase("pt", ELEVATED, r"nao aguento mais"),
    # French
    _phrase("fr", HIGH, r"je veux mourir|j'ai envie de mourir|me suicider|(?:je veux|je vais|envie de) me tuer"),
    _phrase("fr", HIGH, r"je ne veux plus vivre|en finir avec (?:la|ma) vie", not_before=r"a|ici|avec|en|dans|chez"),
    _phrase("fr", ELEVATED, r"je n'en peux plus|j'en peux plus"),
    # Hindi: romanised / Hinglish
    _phrase("hi", HIGH, r"(?:marna|mar jana|mar jaana) chaht[aie](?: h(?:oo|u|o)n?)?|mujhe mar(?:na|\s?jana) hai"),
    _phrase(
        "hi",
        HIGH,
        r"j(?:ee|i)na (?:nahi|nahin|nhi) chaht[aie]|zinda (?:nahi|nahin|nhi) rehna|khud ?kh?ushi|aa?tmahatya",
    ),
    _phrase("hi", HIGH, r"suicide kar (?:lunga|lungi|leta|leti|lena)"),
)

# Hindi in Devanagari: no \w boundaries (vowel signs are not word characters), plain substrings
_DEVANAGARI: tuple[_Phrase, ...] = tuple(
    _Phrase("hi", HIGH, re.compile(_fold(phrase)))
    for phrase in ("मरना चाहता", "मरना चाहती", "जीना नहीं चाहता", "जीना नहीं चाहती", "आत्महत्या", "ख़ुदकुशी")
)

_NEGATORS = frozenset(
    {
        "not",
        "never",
        "no",
        "don't",
        "dont",
        "doesn't",
        "didn't",
        "won't",
        "wont",
        "wouldn't",
        "nunca",
        "jamas",
        "jamais",
        "nao",
        "nahi",
        "nahin",
        "nhi",
    }
)
_FILLERS = frozenset(
    {
        "i",
        "i'm",
        "im",
        "am",
        "really",
        "even",
        "just",
        "actually",
        "honestly",
        "ever",
        "going",
        "to",
        "gonna",
        "will",
        "would",
        "do",
        "did",
        "me",
        "yo",
        "eu",
        "ya",
        "se",
        "te",
        "want",
        "wanna",
    }
)
_OTHER_SUBJECTS = frozenset(
    {
        "he",
        "she",
        "they",
        "you",
        "u",
        "we",
        "it",
        "who",
        "someone",
        "somebody",
        "everyone",
        "people",
        "character",
        "he's",
        "she's",
        "they're",
        "you're",
        "we're",
    }
)
_ADVERBS = frozenset({"really", "just", "actually", "honestly", "still", "also", "sometimes", "literally", "kinda"})
_CLAUSE_BREAK = re.compile(r"[,.!?;:\n\"]|\bbut\b|\bpero\b|\bmas\b|\bmais\b")
_WORD = re.compile(r"[\w']+")
_LOOKBACK_WORDS = 4


def _preceding_words(text: str, start: int) -> list[str]:
    clause = _CLAUSE_BREAK.split(text[:start])[-1]
    return _WORD.findall(clause)[-_LOOKBACK_WORDS:]


def _is_negated(preceding: list[str]) -> bool:
    for word in reversed(preceding):
        if word in _NEGATORS:
            return True
        if word not in _FILLERS:
            return False
    return False


def _is_about_someone_else(preceding: list[str]) -> bool:
    for word in reversed(preceding):
        if word in _ADVERBS:
            continue
        return word in _OTHER_SUBJECTS
    return False


def _hits(text: str) -> list[tuple[_Phrase, re.Match[str]]]:
    hits: list[tuple[_Phrase, re.Match[str]]] = []
    for phrase in _PHRASES + _DEVANAGARI:
        for match in phrase.pattern.finditer(text):
            if phrase.excluded_after is not None and phrase.excluded_after.match(text, match.end()):
                continue
            preceding = _preceding_words(text, match.start())
            if _is_negated(preceding) or (phrase.is_speaker_only and _is_about_someone_else(preceding)):
                continue
            hits.append((phrase, match))
    return hits


def detect_crisis(text: str) -> CrisisSignal:
    """Report crisis language in one message (rules in the module docstring). Never raises; no I/O."""
    folded = _fold(normalise_text(text or ""))
    hits = _hits(folded)
    if not hits:
        return NO_CRISIS
    hits.sort(key=lambda hit: (hit[1].start(), -len(hit[1].group())))
    matched: list[str] = []
    covered_until = -1
    most_severe: _Phrase | None = None
    for phrase, match in hits:
        if match.start() >= covered_until and match.group() not in matched:
            matched.append(match.group())
        covered_until = max(covered_until, match.end())
        if most_severe is None or SEVERITIES.index(phrase.severity) > SEVERITIES.index(most_severe.severity):
            most_severe = phrase
    assert most_severe is not None
    return CrisisSignal(
        is_crisis=True, severity=most_severe.severity, matched=tuple(matched), language=most_severe.language
    )
