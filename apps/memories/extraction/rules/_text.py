"""Text helpers shared by every rule family: apostrophe folding, slugs, trimming an object (filler,
emoji, trailing punctuation, conjunctions), first to third person, conjugation, head nouns, regex
alternations and word lists (docs/extraction.md, "Pipeline" step 5).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from apps.memories.extraction.rules._types import MAX_PREDICATE_CHARS


def _words(text: str) -> list[str]:
    return text.split()


def _alternation(words: Iterable[str]) -> str:
    """Regex alternation, longest first so "golden retriever" wins over "retriever"."""
    return "|".join(
        word if "?" in word or "[" in word else re.escape(word).replace(r"\ ", r"\s+").replace(r"\-", "[-\\s]?")
        for word in sorted(set(words), key=len, reverse=True)
    )


_FOLD_TABLE = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "`": "'", "\u201c": '"', "\u201d": '"'})


def _fold(text: str) -> str:
    """Same-length copy for matching, so match offsets index the original text."""
    return text.translate(_FOLD_TABLE)


_NON_SLUG = re.compile(r"[\W_]+")


def slugify(text: str) -> str:
    """Lower-case, hyphenated, accents dropped from Latin letters only: "Café Mocha" -> "cafe-mocha"."""
    text = _fold(text).replace("'", "")
    if text.isascii():
        return _NON_SLUG.sub("-", text.lower()).strip("-")
    kept: list[str] = []
    previous_is_ascii = False
    for character in unicodedata.normalize("NFKD", text):
        if unicodedata.combining(character) and previous_is_ascii:
            continue
        kept.append(character)
        previous_is_ascii = character.isascii()
    return _NON_SLUG.sub("-", unicodedata.normalize("NFC", "".join(kept)).lower()).strip("-")


_LEADING_FILLER = re.compile(
    r"^(?:(?:really|actually|honestly|just|totally|kinda|kind\s+of|sort\s+of|also|definitely|absolutely|"
    r"to\s+be\s+honest|tbh|truly|genuinely|quite|now|currently)\b[\s,]*)+",
    re.IGNORECASE,
)
_TRAILING_FILLER = re.compile(
    r"(?:[\s,]+(?:lol|lmao|haha\w*|hehe\w*|tbh|honestly|though|tho|too|as\s+well|any\s?more|now|either|so\s+much|"
    r"a\s+lot|very\s+much|for\s+sure|actually|right\s+now|these\s+days|nowadays|at\s+the\s+moment|currently|"
    r"lately|really|btw|please|pls|plz|thanks|thank\s+you))+$",
    re.IGNORECASE,
)
_TRAILING_EMOTICON = re.compile(r"(?:\s*(?:[:;=8][-o']?[()\[\]dDpP/\\|*]+|<3+|[xX][dD]+))+$")
_TRAILING_PUNCTUATION = ".,!?;:…~-\u2013—\"'\u201c\u201d\u2018\u2019 \t\n"
_BARE_PRONOUNS = frozenset(
    _words("it that this them you him her these those one so it all everything anything something")
)
_ELIDED_VERBS = (
    "live|lives|work|works|study|studies|have|has|love|loves|like|likes|hate|hates|want|wants|prefer|prefers|"
    "am|is|was|go|goes|went|play|plays|enjoy|enjoys|need|needs|moved|got|think|feel|hope|miss|use|used|"
    "really|also"
)
_CONJUNCTION_CUT = re.compile(
    r"\s*,\s*(?:do|don't|did|didn't|are|aren't|is|isn't|have|haven't|what\s+about|how\s+about|and|right|you\s+know)"
    r"(?:\s+you\b.*|\s*\?.*)$|"
    rf"\s*(?:,\s*)?\b(?:but|though|tho|although|because|cause|cuz|coz|since|whereas|while|which|so\s+that)\b.*$"
    rf"|\s+and\s+(?:{_ELIDED_VERBS})\b.*$"
    # a request to the assistant after what the user says of themselves: "I prefer Word over Google Docs, can
    # you help me with that?" -> "Word over Google Docs"
    r"|\s*(?:[,;]|\s-)\s*(?:(?:and|so|but)\s+)?(?:(?:can|could|would|will)\s+you|(?:what|how)\s+(?:do|would|should|can)"
    r"\s+(?:you|i)|any\s+(?:tips|ideas|advice|suggestions|thoughts))\b.*$"
    r"|\s+so\s+(?:can|could|would)\s+you\b.*$",
    re.IGNORECASE | re.DOTALL,
)
_PRONOUN_SWAP = {
    "i am": "they are",
    "i was": "they were",
    "i'm": "they're",
    "i've": "they've",
    "i'd": "they'd",
    "i'll": "they'll",
    "i": "they",
    "me": "them",
    "my": "their",
    "mine": "theirs",
    "myself": "themselves",
    "we": "they",
    "we're": "they're",
    "we've": "they've",
    "we'd": "they'd",
    "we'll": "they'll",
    "us": "them",
    "our": "their",
    "ours": "theirs",
    "ourselves": "themselves",
}
_PRONOUN_RE = re.compile(
    r"\b(?:i\s+am|i\s+was|i['\u2019]m|i['\u2019]ve|i['\u2019]d|i['\u2019]ll"
    r"|we['\u2019]re|we['\u2019]ve|we['\u2019]d|we['\u2019]ll|myself|ourselves|"
    r"mine|ours|my|me|our|us|we|i)\b",
    re.IGNORECASE,
)


def _strip_trailing_noise(text: str) -> str:
    while True:
        stripped = _TRAILING_EMOTICON.sub("", text).rstrip(_TRAILING_PUNCTUATION)
        while stripped and unicodedata.category(stripped[-1]) in ("So", "Sk", "Cf", "Mn", "Cs"):
            stripped = stripped[:-1].rstrip(_TRAILING_PUNCTUATION)
        if stripped == text:
            return text
        text = stripped


def _trim(text: str) -> str:
    """The user's words, minus leading filler, trailing punctuation, emoji and trailing filler."""
    previous = None
    while previous != text:
        previous = text
        text = _LEADING_FILLER.sub("", text.strip())
        text = _strip_trailing_noise(text)
        text = _TRAILING_FILLER.sub("", text)
    return text


def _third_person(text: str) -> str:
    """First-person pronouns inside an object become third person: "my dog" -> "their dog"."""

    def swap(match: re.Match[str]) -> str:
        said = match.group(0)
        if said == "US":  # the country
            return said
        replacement = _PRONOUN_SWAP[_squash(_fold(said))]
        if said[0].isupper() and said.lower() not in ("i", "i am", "i was") and not said.lower().startswith("i'"):
            return replacement[0].upper() + replacement[1:]
        return replacement

    return _PRONOUN_RE.sub(swap, text)


def _cap(text: str, limit: int = MAX_PREDICATE_CHARS) -> str:
    if len(text) <= limit:
        return text
    cut = text[:limit]
    space = cut.rfind(" ")
    return cut[:space] if space > limit // 2 else cut


def _conjugate(verb: str) -> str:
    """Third person singular of a base-form verb; past forms are kept."""
    lower = verb.lower()
    irregular = {"have": "has", "do": "does", "go": "goes", "be": "is"}
    if lower in irregular:
        return irregular[lower]
    if lower.endswith("ed"):
        return verb
    if lower.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if lower.endswith("y") and len(lower) > 1 and lower[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


_CHUNK_STOP = frozenset(
    _words("""
    named called who that which with at in on for from to of and but or today tomorrow tonight now right later
    this next since because so here there again yet lol haha when while as by about after before until is was
    based located
    """)
)
_DETERMINERS = frozenset(
    _words("a an the my our your his her their some any one two three four five six seven eight nine ten")
)


_CHUNK_WORD = re.compile(r"[\w'-]+")


def _head_noun(text: str) -> str:
    """Last word of the first noun chunk: "a dog named Bruno" -> "dog", "a lot of work" -> "lot"."""
    head = ""
    for word in _CHUNK_WORD.findall(text.lower()):
        if word in _CHUNK_STOP:
            break
        if not head and word in _DETERMINERS:
            continue
        head = word
    return head


def _squash(text: str) -> str:
    """Lower-case with single spaces: "Care  For" -> "care for"."""
    return " ".join(text.lower().split())


_LIST_SEPARATOR = re.compile(r"\s*,\s*(?:and\s+|or\s+)?|\s+and\s+|\s+or\s+|\s+&\s+")


_CLAUSE_WORD = re.compile(r"[a-z]+")


def _last_words(terms: Iterable[str]) -> list[str]:
    return [_CLAUSE_WORD.findall(term.lower())[-1] for term in terms]
