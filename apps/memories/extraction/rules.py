"""Rules-based inline extraction (contact-intelligence §3, ai-brain-memory §4.2).

One call turns one chat turn into typed facts, preferences, at most one episode and the entities they
mention. Pure: no ORM, no I/O, no LLM; a chat-sized message costs well under a millisecond.

Every rule, the supersession slots and their limits are documented in docs/extraction.md.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from apps.core.cleaning import clean_text
from apps.memories.extraction.cleaning import is_low_content

MEMORY_TYPE_FACT = "fact"
MEMORY_TYPE_PREFERENCE = "preference"
MEMORY_TYPE_EPISODE = "episode"

SCOPE_CONTACT = "contact"
SCOPE_TENANT = "tenant"
SCOPES = (SCOPE_CONTACT, SCOPE_TENANT)
ROLE_USER = "user"

MAX_PREDICATE_CHARS = 200
MAX_EPISODE_CHARS = 1000
# Rules and the name scan read this much of a turn, which bounds the cost of a pasted document
# (deferred consolidation sees the whole text).
MAX_SCAN_CHARS = 2000


# --------------------------------------------------------------------------------------------------
# What crosses the boundary
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ExtractedEntity:
    entity_type: (
        str  # pet | person | workplace | school | location | topic | hobby | product | organization | service | name
    )
    slug: str
    display_name: str
    # Equality compares metadata; the hash leaves it out so the entity stays hashable.
    metadata: dict[str, str] = field(default_factory=dict, hash=False)

    @property
    def key(self) -> str:
        return f"{self.entity_type}:{self.slug}"


@dataclass(frozen=True)
class ExtractedMemory:
    memory_type: str  # "fact" | "preference" | "episode"
    predicate: str  # third person, no subject, lower-case first letter (episodes: the message verbatim)
    entities: tuple[ExtractedEntity, ...] = ()
    slot: str | None = None  # supersession key: a newer memory with the same slot replaces the older one
    is_correction: bool = False
    polarity: int = 0
    # "manager is Ravi" is about the subject's manager: with a subject it reads "Caroline's manager is Ravi".
    is_possessive: bool = False

    def statement(self, subject: str | None = None) -> str:
        if self.memory_type == MEMORY_TYPE_EPISODE:
            return f"{subject}: {self.predicate}" if subject else self.predicate
        if not subject:
            return self.predicate[:1].upper() + self.predicate[1:]
        if self.is_possessive:
            return f"{subject}'s {self.predicate}"
        return f"{subject} {self.predicate}"


@dataclass(frozen=True)
class Extraction:
    cleaned_text: str
    is_low_content: bool
    memories: tuple[ExtractedMemory, ...]  # facts and preferences in message order, then at most one episode
    entities: tuple[ExtractedEntity, ...]

    @property
    def episode(self) -> ExtractedMemory | None:
        last = self.memories[-1] if self.memories else None
        return last if last is not None and last.memory_type == MEMORY_TYPE_EPISODE else None


# --------------------------------------------------------------------------------------------------
# Vocabulary used to build the patterns
# --------------------------------------------------------------------------------------------------


def _words(text: str) -> list[str]:
    return text.split()


# relation word as said -> canonical relation (metadata and slot)
_RELATION_CANONICAL = {
    "wife": "wife",
    "wifey": "wife",
    "husband": "husband",
    "hubby": "husband",
    "partner": "partner",
    "spouse": "spouse",
    "boyfriend": "boyfriend",
    "girlfriend": "girlfriend",
    "gf": "girlfriend",
    "fiance": "fiance",
    "fiancé": "fiance",
    "fiancee": "fiance",
    "fiancée": "fiance",
    "mom": "mom",
    "mum": "mom",
    "mother": "mom",
    "mommy": "mom",
    "mummy": "mom",
    "mama": "mom",
    "dad": "dad",
    "father": "dad",
    "daddy": "dad",
    "papa": "dad",
    "stepmom": "stepmom",
    "stepmother": "stepmom",
    "stepdad": "stepdad",
    "stepfather": "stepdad",
    "mother-in-law": "mother-in-law",
    "father-in-law": "father-in-law",
    "boss": "boss",
    "manager": "manager",
    "best friend": "best friend",
    "bestie": "best friend",
    "bff": "best friend",
    "therapist": "therapist",
    "mentor": "mentor",
    "landlord": "landlord",
    "son": "son",
    "daughter": "daughter",
    "kid": "child",
    "child": "child",
    "baby": "baby",
    "sister": "sister",
    "brother": "brother",
    "sibling": "sibling",
    "twin": "twin",
    "cousin": "cousin",
    "aunt": "aunt",
    "auntie": "aunt",
    "uncle": "uncle",
    "niece": "niece",
    "nephew": "nephew",
    "grandma": "grandma",
    "grandmother": "grandma",
    "granny": "grandma",
    "nana": "grandma",
    "grandpa": "grandpa",
    "grandfather": "grandpa",
    "granddad": "grandpa",
    "grandson": "grandson",
    "granddaughter": "granddaughter",
    "stepson": "stepson",
    "stepdaughter": "stepdaughter",
    "stepsister": "stepsister",
    "stepbrother": "stepbrother",
    "sister-in-law": "sister-in-law",
    "brother-in-law": "brother-in-law",
    "friend": "friend",
    "colleague": "colleague",
    "coworker": "colleague",
    "co-worker": "colleague",
    "roommate": "roommate",
    "flatmate": "roommate",
    "neighbour": "neighbour",
    "neighbor": "neighbour",
    "teacher": "teacher",
    "doctor": "doctor",
    "coach": "coach",
    "classmate": "classmate",
    "tutor": "tutor",
    "ex": "ex",
    "ex-wife": "ex-wife",
    "ex-husband": "ex-husband",
    "ex-boyfriend": "ex-boyfriend",
    "ex-girlfriend": "ex-girlfriend",
}
# One person at a time: a newer "my manager is X" supersedes the older one (slot relation:<canonical>).
_SINGLE_RELATIONS = frozenset(
    {
        "wife",
        "husband",
        "partner",
        "spouse",
        "boyfriend",
        "girlfriend",
        "fiance",
        "mom",
        "dad",
        "stepmom",
        "stepdad",
        "mother-in-law",
        "father-in-law",
        "boss",
        "manager",
        "best friend",
        "therapist",
        "mentor",
        "landlord",
    }
)
_RELATION_MODIFIERS = ("older", "younger", "little", "big", "baby", "twin", "elder", "kid")

_SPECIES_CANONICAL = {
    "dog": "dog",
    "doggo": "dog",
    "doggy": "dog",
    "pup": "dog",
    "puppy": "dog",
    "cat": "cat",
    "kitten": "cat",
    "kitty": "cat",
    "rabbit": "rabbit",
    "bunny": "rabbit",
    "bird": "bird",
    "parrot": "bird",
    "budgie": "bird",
    "cockatiel": "bird",
    "canary": "bird",
    "fish": "fish",
    "goldfish": "fish",
    "betta": "fish",
    "hamster": "hamster",
    "guinea pig": "guinea pig",
    "turtle": "turtle",
    "tortoise": "tortoise",
    "snake": "snake",
    "lizard": "lizard",
    "gecko": "lizard",
    "iguana": "lizard",
    "horse": "horse",
    "pony": "horse",
    "ferret": "ferret",
    "rat": "rat",
    "mouse": "mouse",
    "chicken": "chicken",
    "hen": "chicken",
    "goat": "goat",
    "pig": "pig",
}
_BREED_SPECIES = {
    "golden retriever": "dog",
    "labrador": "dog",
    "retriever": "dog",
    "beagle": "dog",
    "poodle": "dog",
    "pug": "dog",
    "husky": "dog",
    "german shepherd": "dog",
    "bulldog": "dog",
    "french bulldog": "dog",
    "dachshund": "dog",
    "corgi": "dog",
    "chihuahua": "dog",
    "terrier": "dog",
    "spaniel": "dog",
    "shih tzu": "dog",
    "pomeranian": "dog",
    "rottweiler": "dog",
    "doberman": "dog",
    "dalmatian": "dog",
    "great dane": "dog",
    "border collie": "dog",
    "collie": "dog",
    "schnauzer": "dog",
    "maltese": "dog",
    "yorkie": "dog",
    "pitbull": "dog",
    "pit bull": "dog",
    "greyhound": "dog",
    "whippet": "dog",
    "samoyed": "dog",
    "akita": "dog",
    "shiba inu": "dog",
    "shiba": "dog",
    "cockapoo": "dog",
    "labradoodle": "dog",
    "goldendoodle": "dog",
    "siamese": "cat",
    "maine coon": "cat",
    "ragdoll": "cat",
    "bengal": "cat",
    "sphynx": "cat",
    "tabby": "cat",
}

_NATIONALITIES_AND_FAITHS = frozenset(
    _words("""
    american british english scottish welsh irish canadian australian indian pakistani bangladeshi
    nepali sri-lankan chinese japanese korean vietnamese thai filipino indonesian malaysian singaporean
    german french italian spanish portuguese dutch belgian swiss austrian swedish norwegian danish finnish
    polish russian ukrainian greek turkish iranian israeli egyptian nigerian kenyan ghanaian ethiopian
    south-african mexican brazilian argentinian chilean colombian peruvian cuban jamaican arab lebanese
    hindu muslim christian catholic protestant jewish buddhist sikh jain atheist agnostic punjabi tamil
    bengali gujarati marathi malayali telugu kannadiga
    """)
)
_STABLE_STATES = (
    "vegetarian",
    "vegan",
    "pescatarian",
    "lactose intolerant",
    "gluten intolerant",
    "gluten free",
    "left handed",
    "left-handed",
    "right handed",
    "right-handed",
    "colou?r ?blind",
    "diabetic",
    "celiac",
    "coeliac",
    "epileptic",
    "asthmatic",
    "autistic",
    "dyslexic",
    "deaf",
    "blind",
    "sober",
    "teetotal",
    "single",
    "married",
    "engaged",
    "divorced",
    "separated",
    "widowed",
    "in a relationship",
    "retired",
    "pregnant",
    "unemployed",
    "self[ -]employed",
    "introverted",
    "extroverted",
    "an introvert",
    "an extrovert",
    "allergic to",
    "married to",
    "engaged to",
)
_RELATIONSHIP_STATES = frozenset(
    {"single", "married", "engaged", "divorced", "separated", "widowed", "in a relationship"}
)

_METRIC_TERMS = (
    "traffic",
    "revenue",
    "sales",
    "mrr",
    "arr",
    "followers",
    "subscribers",
    "users",
    "customers",
    "clients",
    "signups",
    "sign-ups",
    "visitors",
    "visits",
    "pageviews",
    "page views",
    "views",
    "downloads",
    "installs",
    "orders",
    "leads",
    "conversion rate",
    "conversions",
    "bounce rate",
    "churn rate",
    "churn",
    "retention",
    "open rate",
    "click rate",
    "click-through rate",
    "ctr",
    "engagement rate",
    "engagement",
    "profit",
    "profits",
    "margin",
    "margins",
    "growth",
    "headcount",
    "team size",
    "rating",
    "ranking",
    "rank",
    "score",
    "budget",
    "ad spend",
    "spend",
    "burn rate",
    "runway",
    "valuation",
    "salary",
    "income",
    "rent",
    "aov",
    "ltv",
    "cac",
    "roas",
    "weight",
    "mortgage",
)
_ATTRIBUTE_NOUNS = (
    "birthday",
    "birth date",
    "date of birth",
    "email address",
    "email",
    "phone number",
    "address",
    "hometown",
    "home town",
    "job title",
    "job",
    "title",
    "role",
    "position",
    "occupation",
    "profession",
    "major",
    "degree",
    "nationality",
    "religion",
    "zodiac sign",
    "star sign",
    "sign",
    "pronouns",
    "native language",
    "first language",
    "mother tongue",
    "timezone",
    "time zone",
    "height",
    "blood type",
    "diet",
    "goal",
    "dream",
    "dream job",
    "instagram",
    "handle",
    "username",
    "website",
    "shoe size",
)
_BUSINESS_NOUNS = frozenset(
    _words("""
    business company startup agency shop store bakery restaurant cafe café firm brand studio clinic salon
    practice boutique consultancy franchise label manufacturer retailer wholesaler distributor nonprofit
    charity school academy hotel gym team e-commerce ecommerce marketplace platform saas app
    """)
)


def _alternation(words: Iterable[str]) -> str:
    """Regex alternation, longest first so "golden retriever" wins over "retriever"."""
    return "|".join(
        word if "?" in word or "[" in word else re.escape(word).replace(r"\ ", r"\s+").replace(r"\-", "[-\\s]?")
        for word in sorted(set(words), key=len, reverse=True)
    )


_RELATION_RE = (
    rf"(?:(?:{'|'.join(_RELATION_MODIFIERS)})[\s-])?(?:{_alternation(_RELATION_CANONICAL)})"
    r"(?!\w)"
)
_SINGLE_RELATION_WORDS = [word for word, canonical in _RELATION_CANONICAL.items() if canonical in _SINGLE_RELATIONS]
_PET_RE = rf"(?:{_alternation([*_SPECIES_CANONICAL, *_BREED_SPECIES])})(?!\w)"

# --------------------------------------------------------------------------------------------------
# Pattern fragments (matched case-insensitively against a same-length copy with apostrophes folded)
# --------------------------------------------------------------------------------------------------

_I = r"\bi\s+"
_IM = r"\b(?:i\s*'\s*m|i\s+am|im)\s+"
_ID = r"\b(?:i\s*'\s*d|i\s+would)\s+"
_IVE = r"\b(?:i\s*'\s*ve|ive|i\s+have)\s+"
_DONT = r"(?:don'?t|do\s+not)\s+"
_ADVERBS = (
    r"(?:(?:really|just|honestly|truly|genuinely|also|still|actually|totally|absolutely|kinda|kind\s+of|"
    r"sort\s+of|definitely|generally|personally|seriously|do|always|so|quite|much|secretly|now)\s+)*"
)
_MY = r"\b(?:my|our)\s+"
_X = r"(?P<x>\S.*)"
_TALK = r"(?:talk|speak|chat)"

# --------------------------------------------------------------------------------------------------
# Text helpers
# --------------------------------------------------------------------------------------------------

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
    rf"|\s+and\s+(?:{_ELIDED_VERBS})\b.*$",
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


# --------------------------------------------------------------------------------------------------
# Proper-name phrases
# --------------------------------------------------------------------------------------------------

_PHRASE_TOKEN = re.compile(r"[^\W_][\w'\u2019&.+-]*")
_PHRASE_CONNECTORS = frozenset(_words("of de da del di du la le van von den der y upon on & the"))
_PHRASE_STOP = frozenset(
    _words("""
    now with for since and but because so at near these this right currently in on from to as last next ago
    today tomorrow yesterday tonight lol haha though too also which where who when while after before until
    till like is was are were it its i my we our me us you your a an the some home work school myself
    ourselves themselves here there anymore again soon already still just really very area part
    """)
)
_NOT_A_NAME = frozenset(
    _words("""
    i i'm i've i'd i'll im ive ok okay lol omg btw idk tbh lmao haha mr mrs ms dr mom dad mum mama papa
    grandma grandpa god monday tuesday wednesday thursday friday saturday sunday january february march
    april may june july august september october november december
    """)
)


@dataclass(frozen=True)
class _CaseMode:
    """Whether capitalisation means anything in this message (not in all-lower-case or SHOUTED text)."""

    is_informative: bool


_LETTERS = re.compile(r"[^\W\d_]+")


def _case_mode(text: str) -> _CaseMode:
    words = _LETTERS.findall(text)
    if not any(character.isupper() for character in text):
        return _CaseMode(is_informative=False)
    upper = sum(1 for word in words if word.isupper() and (len(word) > 1 or word == "I"))
    return _CaseMode(is_informative=not (len(words) >= 3 and upper >= 0.8 * len(words)))


def _is_capitalised(token: str) -> bool:
    return token[0].isupper() or (token[0].isdigit() and any(character.isupper() for character in token))


def _leading_phrase(
    text: str,
    case: _CaseMode,
    *,
    max_tokens: int,
    allow_region: bool = False,
    reject_common: bool = False,
    accept_lower: bool = False,
) -> str | None:
    """The proper-name phrase at the start of ``text``: "Tata Consultancy Services as a dev" -> "Tata
    Consultancy Services". Without informative capitalisation (or with ``accept_lower``) it takes up to
    ``max_tokens`` words until a function word instead, and title-cases them."""
    tokens = list(_PHRASE_TOKEN.finditer(text))
    if not tokens or tokens[0].start() != len(text) - len(text.lstrip()):
        return None
    cased = case.is_informative and not accept_lower
    taken: list[str] = []
    separators: list[str] = []
    index = 0
    if cased and tokens[0].group(0).lower() == "the" and len(tokens) > 1 and _is_capitalised(tokens[1].group(0)):
        index = 1
    previous_end = tokens[index].start()
    while index < len(tokens) and len(taken) < max_tokens:
        match = tokens[index]
        gap = text[previous_end : match.start()]
        separator = " "
        if taken and gap.strip():
            if not (allow_region and gap.strip() == "," and ", " not in separators):
                break  # one ", Region" at most: "Austin, Texas"
            separator = ", "
        word = match.group(0).rstrip(".").removesuffix("'s").removesuffix("\u2019s")
        lower = word.lower()
        ends_possessive = match.group(0).endswith(("'s", "\u2019s"))
        if cased:
            if not word or lower in _NOT_A_NAME:
                break
            if not _is_capitalised(word):
                is_inner_connector = (
                    taken
                    and lower in _PHRASE_CONNECTORS
                    and index + 1 < len(tokens)
                    and _is_capitalised(tokens[index + 1].group(0))
                )
                if not is_inner_connector:
                    break
        else:
            if not word or lower in _PHRASE_STOP or lower in _NOT_A_NAME or word.isdigit():
                break
            if reject_common and lower in COMMON_WORDS:
                break
        if taken:
            separators.append(separator)
        taken.append(word if cased or word.isupper() else word[:1].upper() + word[1:])
        previous_end = match.end()
        index += 1
        if ends_possessive:
            break
    while taken and taken[-1].lower() in _PHRASE_CONNECTORS:
        taken.pop()
    if not taken:
        return None
    phrase = taken[0] + "".join(separator + word for separator, word in zip(separators, taken[1:], strict=False))
    return phrase


def _person_name(text: str, case: _CaseMode, *, accept_lower: bool = False) -> str | None:
    return _leading_phrase(text, case, max_tokens=3, reject_common=True, accept_lower=accept_lower)


def _entity(entity_type: str, display_name: str, **metadata: str) -> ExtractedEntity | None:
    slug = slugify(display_name)
    if not slug:
        return None
    return ExtractedEntity(entity_type=entity_type, slug=slug, display_name=display_name, metadata=metadata)


# --------------------------------------------------------------------------------------------------
# Clauses
# --------------------------------------------------------------------------------------------------

_SENTENCE = re.compile(r"(?:[^.!?…\n]|[.!?…]+(?=[^\s.!?…]))+[.!?…]*")
_FIRST_PERSON_AHEAD = (
    r"(?=(?:(?:also|actually|now|then|honestly|btw|plus|still|yeah|oh|anyway|correction)\s*[:,]?\s+)*"
    r"(?:i|i'm|im|i've|ive|i'd|i'll|my|we|we're|we've|our|let's|lets|can\s+we|could\s+we|please|don't)\b)"
)
_CLAUSE_BOUNDARY = re.compile(
    r"\s*(?:[;:\u2013—]|,|\s-\s)\s*(?:(?:and|but|so|plus|though|although|because|cause|cuz|since|while|whereas|or)\s+)?"
    + _FIRST_PERSON_AHEAD
    + r"|\s+(?:and|but|so|plus|though|although|because|cause|cuz|since|while|whereas|or|also|(?P<that>that))\s+"
    + _FIRST_PERSON_AHEAD,
    re.IGNORECASE,
)
_QUESTION_START = re.compile(
    r"^\W*(?:do|does|did|is|are|was|were|am|can|could|would|will|should|shall|may|might|have|has|had|what|why|"
    r"how|where|when|who|whom|whose|which|isn't|aren't|don't|doesn't|didn't|won't|wouldn't|right|so)\b",
    re.IGNORECASE,
)
# "anymore", or "any more" closing a clause ("not any more"), but not "any more emails"
_ANYMORE = re.compile(r"\banymore\b|\bany\s+more\b(?=\s*(?:[^\w\s]|$))", re.IGNORECASE)
_CORRECTION = re.compile(
    r"\b(?:actually|correction|no\s+longer|anymore|i\s+meant|to\s+clarify)\b|\bany\s+more\b(?=\s*(?:[^\w\s]|$))"
    r"|\b(?:i|we)\s*(?:'\s*ve|\s+have)?\s+(?:just\s+|recently\s+|finally\s+|now\s+)?moved\s+to\b|\bive\s+moved\b",
    re.IGNORECASE,
)
# Words before a trigger that make it hypothetical, reported or negated: "if I had a dog", "not sure I like it".
_HEDGE = re.compile(
    r"\b(?:if|unless|whether|wish|suppose|pretend|imagine|not|never|doubt|nobody|hope)\b|n't\b", re.IGNORECASE
)


@dataclass(frozen=True)
class _Clause:
    text: str  # original characters
    folded: str  # same length, for matching
    offset: int
    is_question: bool
    is_correction: bool
    lead_in: str = ""  # the sentence before "that" ("I don't think that ..."), read by the hedge check


def _clauses(text: str) -> list[_Clause]:
    folded = _fold(text)
    clauses: list[_Clause] = []
    for sentence in _SENTENCE.finditer(folded):
        sentence_text = sentence.group(0)
        is_question = sentence_text.rstrip().endswith("?")
        is_correction = bool(_CORRECTION.search(sentence_text))
        start = 0
        bounds: list[tuple[int, int, bool]] = []
        follows_that = False
        for boundary in _CLAUSE_BOUNDARY.finditer(sentence_text):
            bounds.append((start, boundary.start(), follows_that))
            start = boundary.end()
            follows_that = boundary.group("that") is not None
        bounds.append((start, len(sentence_text), follows_that))
        for clause_start, clause_end, is_after_that in bounds:
            absolute_start = sentence.start() + clause_start
            absolute_end = sentence.start() + clause_end
            piece = folded[absolute_start:absolute_end]
            leading = len(piece) - len(piece.lstrip())
            absolute_start += leading
            if absolute_start >= absolute_end:
                continue
            clause_folded = folded[absolute_start:absolute_end]
            clauses.append(
                _Clause(
                    text=text[absolute_start:absolute_end],
                    folded=clause_folded,
                    offset=absolute_start,
                    is_question=is_question and bool(_QUESTION_START.match(clause_folded)),
                    is_correction=is_correction,
                    lead_in=sentence_text[:clause_start] if is_after_that else "",
                )
            )
    return clauses


# --------------------------------------------------------------------------------------------------
# Rules
# --------------------------------------------------------------------------------------------------


@dataclass
class _Found:
    memory_type: str
    predicate: str
    entities: list[ExtractedEntity]
    slot: str | None = None
    polarity: int = 0
    is_possessive: bool = False
    is_correction: bool = False
    position: int = 0


@dataclass
class _Context:
    scope: str
    case: _CaseMode
    own_name_slugs: set[str]


_Handler = Callable[[re.Match[str], _Clause, _Context], list[_Found]]


@dataclass(frozen=True)
class _Rule:
    name: str
    pattern: re.Pattern[str]
    handle: _Handler
    allow_question: bool = False
    check_hedge: bool = True
    scope: str | None = None  # only in this scope
    # Cheap prefilter: the rule is tried only on clauses containing one of these words (None: always).
    triggers: frozenset[str] | None = None


def _group(match: re.Match[str], clause: _Clause, name: str) -> str:
    start, end = match.span(name)
    return clause.text[start:end] if start >= 0 else ""


def _squash(text: str) -> str:
    """Lower-case with single spaces: "Care  For" -> "care for"."""
    return " ".join(text.lower().split())


def _said(match: re.Match[str], name: str) -> str:
    """A trigger word as matched, lower-case with single spaces."""
    return _squash(match.group(name) or "")


def _is_no_longer(match: re.Match[str]) -> bool:
    return _said(match, "negation") == "no longer"


def _object(match: re.Match[str], clause: _Clause, name: str = "x", *, cut: bool = True) -> str | None:
    raw = _group(match, clause, name)
    if cut:
        raw = _CONJUNCTION_CUT.sub("", raw)
    trimmed = _trim(raw)
    if not trimmed or trimmed.lower() in _BARE_PRONOUNS:
        return None
    return _third_person(trimmed)


def _predicate(verb_phrase: str, obj: str = "") -> str:
    return _cap(f"{verb_phrase} {obj}".strip())


def _fact(
    predicate: str, *entities: ExtractedEntity | None, slot: str | None = None, is_possessive: bool = False
) -> _Found:
    present = [entity for entity in entities if entity]
    return _Found(MEMORY_TYPE_FACT, predicate, present, slot=slot, is_possessive=is_possessive)


def _preference(
    predicate: str,
    polarity: int,
    *entities: ExtractedEntity | None,
    slot: str | None = None,
    is_possessive: bool = False,
) -> _Found:
    present = [entity for entity in entities if entity]
    return _Found(MEMORY_TYPE_PREFERENCE, predicate, present, slot=slot, polarity=polarity, is_possessive=is_possessive)


_LIST_SEPARATOR = re.compile(r"\s*,\s*(?:and\s+|or\s+)?|\s+and\s+|\s+or\s+|\s+&\s+")
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


_LEADING_DETERMINER = re.compile(r"^(?:their|the|a|an|my|our|your)\s+", re.IGNORECASE)
_PLAIN_WORD = re.compile(r"[^\W\d_][\w'-]*")


def _topic(text: str) -> ExtractedEntity | None:
    text = _LEADING_DETERMINER.sub("", text)
    words = text.split()
    if not words or len(words) > 4:
        return None
    return _entity("topic", text)


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


def _talk_avoid(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
    obj = _object(match, clause)
    if not obj:
        return []
    return [_preference(_predicate("doesn't want to talk about", obj), -1, _topic(obj))]


def _talk_interest(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
    obj = _object(match, clause)
    if not obj:
        return []
    return [_preference(_predicate("wants to talk about", obj), 1, _topic(obj))]


def _instruction_avoid(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
    """ "Please don't use emojis" -> "doesn't want you to use emojis" (an instruction to the assistant)."""
    obj = _object(match, clause)
    if not obj:
        return []
    verb = " ".join("them" if word == "me" else word for word in _said(match, "verb").split())
    return [_preference(_predicate(f"doesn't want you to {verb}", obj), -1)]


_LONGER = ("longer", "more", "bigger", "larger", "over", "above")


def _length_limit(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
    thing = _object(match, clause, cut=False)
    if not thing:
        return []
    bound = "under" if _said(match, "comparison") in _LONGER else "over"
    amount = " ".join(part for part in (match.group("amount"), match.group("unit")) if part)
    return [_preference(_predicate("prefers", f"{thing} {bound} {amount}"), 1, _topic(thing))]


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


def _simple_preference(verb: str, polarity: int, *, typed: bool = True) -> _Handler:
    def handle(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
        obj = _object(match, clause)
        if not obj:
            return []
        entities = _preference_entities(obj) if typed else []
        return [_preference(_predicate(verb, obj), polarity, *entities)]

    return handle


_LIKE_VERB = {"like": "likes", "love": "loves", "enjoy": "enjoys", "adore": "adores"}


def _like(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
    obj = _object(match, clause)
    if not obj:
        return []
    verb = _LIKE_VERB[_said(match, "verb")]
    return [_preference(_predicate(verb, obj), 1, *_preference_entities(obj))]


def _favourite(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
    what = _trim(_group(match, clause, "what")).lower()
    obj = _object(match, clause)
    if not obj or not what or what in _BARE_PRONOUNS:
        return []
    verb = "are" if _said(match, "verb") == "are" else "is"
    entities = [_entity("hobby", obj)] if what.startswith("hobb") else []
    slot = f"attribute:favourite-{slugify(what)}"
    return [_preference(_predicate(f"favourite {what} {verb}", obj), 1, *entities, slot=slot, is_possessive=True)]


def _favourite_reverse(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
    obj = _object(match, clause, "subject")
    what = _trim(_group(match, clause, "what")).lower()
    if not obj or not what or len(obj.split()) > 6:
        return []
    slot = f"attribute:favourite-{slugify(what)}"
    return [_preference(_predicate(f"favourite {what} is", obj), 1, slot=slot, is_possessive=True)]


_HABIT_SKIP_VERBS = frozenset(_words("am was were is can could will would should must might may did do does get"))


def _habit(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
    verb = _group(match, clause, "verb")
    if verb.lower() in _HABIT_SKIP_VERBS:
        return []
    adverb = _said(match, "adverb")
    obj = _object(match, clause) if match.group("x") else ""
    return [_preference(_predicate(f"{adverb} {_conjugate(verb)}", obj or ""), -1 if adverb == "never" else 1)]


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


def _my_name(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
    name = _person_name(_group(match, clause, "x"), context.case, accept_lower=True)
    if not name:
        return []
    context.own_name_slugs.add(slugify(name))
    return [_fact(_predicate("name is", name), slot="name", is_possessive=True)]


def _goes_by(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
    name = _person_name(_group(match, clause, "x"), context.case)
    if not name:
        return []
    context.own_name_slugs.add(slugify(name))
    return [_fact(_predicate("goes by", name), slot="nickname")]


def _introduces_self(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
    if not context.case.is_informative:
        return []
    said = _trim(_group(match, clause, "x"))
    name = _person_name(said, context.case)
    if not name or name != said or name.lower() in _NATIONALITIES_AND_FAITHS or name.lower() in COMMON_WORDS:
        return []
    context.own_name_slugs.add(slugify(name))
    return [_fact(_predicate("name is", name), slot="name", is_possessive=True)]


def _relation_parts(said: str) -> tuple[str, str]:
    """("older sister", "older sister"), ("mother", "mom"): the words as said and the canonical relation."""
    said = _squash(said)
    for modifier in _RELATION_MODIFIERS:
        for joiner in (" ", "-"):
            if said.startswith(modifier + joiner) and said[len(modifier) + 1 :] in _RELATION_CANONICAL:
                return said, f"{modifier} {_RELATION_CANONICAL[said[len(modifier) + 1 :]]}"
    return said, _RELATION_CANONICAL.get(said, said)


def _pet_species(said: str) -> tuple[str, str | None]:
    said = _squash(said)
    if said in _SPECIES_CANONICAL:
        return _SPECIES_CANONICAL[said], None
    return _BREED_SPECIES.get(said, said), said


def _pet_entity(name: str, said_species: str) -> ExtractedEntity | None:
    species, breed = _pet_species(said_species)
    return _entity("pet", name, species=species, breed=breed) if breed else _entity("pet", name, species=species)


def _named_relation_facts(relation_said: str, name: str) -> list[_Found]:
    said, canonical = _relation_parts(relation_said)
    person = _entity("person", name, relation=canonical)
    if canonical in _SINGLE_RELATIONS:
        return [
            _fact(_predicate(f"{said} is", name), person, slot=f"relation:{slugify(canonical)}", is_possessive=True)
        ]
    return [_fact(_predicate(f"has a {said} named", name), person)]


def _is_relation(said: str) -> bool:
    said = _squash(said)
    if said in _RELATION_CANONICAL:
        return True
    modifier, _, rest = said.replace("-", " ", 1).partition(" ")
    return modifier in _RELATION_MODIFIERS and rest in _RELATION_CANONICAL


def _is_pet(said: str) -> bool:
    said = _squash(said)
    return said in _SPECIES_CANONICAL or said in _BREED_SPECIES


def _pet_or_relation_name(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
    """ "my dog's name is Bruno", "my sister is called Maya"."""
    said = _said(match, "who")
    name = _person_name(_group(match, clause, "x"), context.case, accept_lower=True)
    if not name:
        return []
    if _is_pet(said):
        return [_fact(_predicate(f"has a {said} named", name), _pet_entity(name, said))]
    if _is_relation(said):
        return _named_relation_facts(said, name)
    return []


def _relation_appositive(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
    """ "my wife Priya ..." -> "wife is Priya"; "my friend Sam ..." -> "has a friend named Sam"."""
    if not context.case.is_informative:
        return []  # "my sister visited": without capitals the next word is not a name
    name = _person_name(_group(match, clause, "x"), context.case)
    if not name:
        return []
    return _named_relation_facts(_said(match, "who"), name)


def _pet_appositive(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
    """ "my dog Bruno", "a golden retriever named Bruno": the pet entity; owning determiners add the fact."""
    is_named = bool(match.group("named"))
    if not is_named and not context.case.is_informative:
        return []  # "my dog barked": without capitals or "named" the next word is not a name
    name = _person_name(_group(match, clause, "x"), context.case, accept_lower=is_named)
    if not name:
        return []
    said = _said(match, "who")
    pet = _pet_entity(name, said)
    if _said(match, "determiner") in ("my", "our"):
        return [_fact(_predicate(f"has a {said} named", name), pet)]
    return [_fact("", pet)]  # entity only: "I have a dog named Bruno" states the fact itself


# verb as said -> (verb as stated, entity type of its object)
_RELATIVE_VERB: dict[str, tuple[str, str | None]] = {
    "lives in": ("lives in", "location"),
    "lives with": ("lives with", None),
    "works at": ("works at", "organization"),
    "works for": ("works for", "organization"),
    "works as": ("works as", None),
    "studies at": ("studies at", "school"),
    "goes to": ("goes to", None),
    "is from": ("is from", "location"),
    "comes from": ("comes from", "location"),
    "moved to": ("moved to", "location"),
    "is allergic to": ("is allergic to", None),
    "loves": ("loves", None),
    "likes": ("likes", None),
    "hates": ("hates", None),
    "doesn't like": ("doesn't like", None),
    "does not like": ("doesn't like", None),
    "adores": ("adores", None),
    "enjoys": ("enjoys", None),
}
_RELATIVE_POLARITY = {"loves": 1, "likes": 1, "adores": 1, "enjoys": 1, "hates": -1, "doesn't like": -1}


def _relative_does(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
    """ "my mom lives in Chennai", "my dog Bruno loves belly rubs": facts and preferences of a relative or pet."""
    who = _said(match, "who")
    name_raw = _group(match, clause, "name")
    name = _person_name(name_raw, context.case) if name_raw else None
    if name_raw and not name:
        return []
    obj = _object(match, clause)
    if not obj:
        return []
    verb, object_type = _RELATIVE_VERB[_said(match, "verb")]
    entities: list[ExtractedEntity | None] = []
    if _is_pet(who):
        entities.append(_pet_entity(name, who) if name else None)
    else:
        _said_relation, canonical = _relation_parts(who)
        if name:
            entities.append(_entity("person", name, relation=canonical))
        elif canonical in _SINGLE_RELATIONS:
            entities.append(_entity("person", canonical, relation=canonical))
    if object_type:
        place = _leading_phrase(_group(match, clause, "x"), context.case, max_tokens=4, allow_region=True)
        entities.append(_entity(object_type, place) if place else None)
    subject = f"{who} {name}" if name else who
    polarity = _RELATIVE_POLARITY.get(verb, 0)
    kind = MEMORY_TYPE_PREFERENCE if polarity else MEMORY_TYPE_FACT
    found = _Found(kind, _predicate(f"{subject} {verb}", obj), [e for e in entities if e], polarity=polarity)
    found.is_possessive = True
    return [found]


_DESCRIPTION_START = re.compile(
    r"^(?:(?:a|an)\s|(?:\d{1,3}|one|two|three|four|five|six|seven|eight|nine|ten)\b|(?:originally\s+)?from\s|"
    r"allergic\s|retired\b|married\b|pregnant\b|in\s+(?:the\s+)?(?:army|navy|hospital|college|school|university)\b)",
    re.IGNORECASE,
)


_LEADING_NOW = re.compile(r"^now\s+", re.IGNORECASE)
_FROM = re.compile(r"(?:originally\s+)?from\s+", re.IGNORECASE)


def _relative_is(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
    """ "my manager is Ravi" (named, slot for one-at-a-time relations) or "my mom is a teacher" (description)."""
    who = _said(match, "who")
    raw = _group(match, clause, "x")
    raw_after_now = _LEADING_NOW.sub("", raw)
    name = _person_name(raw_after_now, context.case)
    verb = _said(match, "verb").replace("'s", "is")
    if name and verb == "is" and _trim(raw_after_now[len(name) :]) == "" and _is_relation(who):
        return _named_relation_facts(who, name)
    if _is_pet(who) and name and verb == "is" and _trim(raw_after_now[len(name) :]) == "":
        return [_fact(_predicate(f"has a {who} named", name), _pet_entity(name, who))]
    if not _DESCRIPTION_START.match(raw.lstrip()):
        return []
    obj = _object(match, clause)
    if not obj:
        return []
    entities: list[ExtractedEntity | None] = []
    if _is_relation(who):
        _said_relation, canonical = _relation_parts(who)
        if canonical in _SINGLE_RELATIONS:
            entities.append(_entity("person", canonical, relation=canonical))
    from_place = _FROM.match(raw.lstrip())
    if from_place:
        place = _leading_phrase(raw.lstrip()[from_place.end() :], context.case, max_tokens=4, allow_region=True)
        entities.append(_entity("location", place) if place else None)
    return [_fact(_predicate(f"{who} {verb}", obj), *entities, is_possessive=True)]


_AGE_FOLLOWERS = frozenset(_words("and but so now btw lol haha too actually already though tho lmao"))


def _age(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
    years = int(match.group("x"))
    if not 1 <= years <= 120:
        return []
    if not match.group("unit"):
        rest = clause.folded[match.end() :].lstrip()
        if rest and rest[0].isalnum():
            if rest.split()[0].lower().strip(".,!?") not in _AGE_FOLLOWERS:
                return []
        elif rest and rest[0] in "%'\"/":
            return []
    return [_fact(f"is {years} years old", slot="age")]


def _place(match: re.Match[str], clause: _Clause, context: _Context) -> tuple[str | None, ExtractedEntity | None]:
    """The place a location rule names, and its entity: "Canada last year" -> ("Canada", location:canada).
    Without a proper place ("a small town near Pune") the trimmed object is stated and no entity made."""
    place = _leading_phrase(_group(match, clause, "x"), context.case, max_tokens=4, allow_region=True)
    if place:
        return place, _entity("location", place)
    return _object(match, clause), None


def _place_fact(verb: str, *, slot: str | None) -> _Handler:
    def handle(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
        place, location = _place(match, clause, context)
        return [_fact(_predicate(verb, place), location, slot=slot)] if place else []

    return handle


def _from(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
    verb = "is originally from" if match.group("originally") else "is from"
    return _place_fact(verb, slot=None)(match, clause, context)


_HAVE_STARTS = frozenset(
    _words("""
    a an one two three four five six seven eight nine ten twin twins some several many lots kids children pets
    dogs cats siblings brothers sisters sons daughters grandkids grandchildren diabetes asthma adhd autism
    allergies celiac epilepsy arthritis migraines insomnia anxiety depression ocd ptsd dyslexia tattoos
    piercings braces glasses roommates any
    """)
)
_TRANSIENT_HEADS = frozenset(
    _words("""
    headache cold fever flu cough rash hangover cramps meeting meetings exam exams test interview question
    questions problem problems issue issues idea appointment date flight call presentation deadline doubt
    feeling minute minutes moment second chance day days night week weekend time class shift party lot ton
    bunch plan plans nightmare fight argument surgery trip vacation holiday report errand errands work
    homework assignment quick way lot mess thing things sec clue idea point bit few couple
    """)
)


def _have(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
    raw = _group(match, clause, "x")
    first = raw.split()[0].lower().strip(",.") if raw.split() else ""
    if not (first in _HAVE_STARTS or first.isdigit() or _is_pet(first) or _is_relation(first)):
        return []
    if _head_noun(raw) in _TRANSIENT_HEADS:
        return []
    obj = _object(match, clause)
    if not obj:
        return []
    entities = _owned_entities(raw, context)
    return [_fact(_predicate("has", obj), *entities)]


_PET_LIST = re.compile(
    rf"\b(?:two|three|four|five|\d)\s+(?P<who>{_PET_RE}|dogs|cats|puppies|kittens|rabbits|birds|hamsters)\s*"
    r"(?:,\s*|\s+(?:named|called)\s+)(?P<x>\S.*)",
    re.IGNORECASE,
)


def _plural_pet_entities(raw: str, context: _Context) -> list[ExtractedEntity | None]:
    """ "two cats, Milo and Luna" -> pet:milo, pet:luna."""
    listed = _PET_LIST.search(_fold(raw))
    if not listed:
        return []
    said = listed.group("who").lower()
    singular = said[:-3] + "y" if said.endswith("ies") else said.removesuffix("s")
    entities: list[ExtractedEntity | None] = []
    for part in _LIST_SEPARATOR.split(raw[listed.start("x") :])[:6]:
        name = _person_name(part, context.case)
        if not name:
            break
        entities.append(_pet_entity(name, singular))
    return entities


_NAMED_RELATIVE = re.compile(rf"\b(?P<who>{_RELATION_RE})\s+(?:named|called)\s+(?P<x>\S.*)", re.IGNORECASE)


def _owned_entities(raw: str, context: _Context) -> list[ExtractedEntity | None]:
    """ "a sister named Maya" -> person:maya {relation: sister}; single pets are typed by the appositive rule."""
    entities: list[ExtractedEntity | None] = _plural_pet_entities(raw, context)
    for named in _NAMED_RELATIVE.finditer(_fold(raw)):
        name = _person_name(raw[named.start("x") :], context.case, accept_lower=True)
        if name:
            entities.append(_entity("person", name, relation=_relation_parts(named.group("who"))[1]))
    return entities


def _have_not(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
    raw = _group(match, clause, "x")
    if _head_noun(raw) in _TRANSIENT_HEADS or _head_noun(raw) in ("idea", "time", "clue", "money"):
        return []
    obj = _object(match, clause)
    if not obj:
        return []
    is_no_longer = _is_no_longer(match) or bool(_ANYMORE.search(clause.folded))
    found = _fact(_predicate("no longer has" if is_no_longer else "doesn't have", obj))
    found.is_correction = is_no_longer
    return [found]


_IDENTITY_TRANSIENT_HEADS = frozenset(
    _words("bit little tad lot few couple mess wreck minute second moment day week hour mile way bundle disaster")
)
_STUDENT_HEADS = frozenset(_words("student undergrad undergraduate freshman sophomore junior senior pupil postdoc"))


def _first_content_word(text: str) -> str:
    for word in _CHUNK_WORD.findall(text.lower()):
        if word not in _DETERMINERS:
            return word
    return ""


_AT_ORGANISATION = re.compile(r"\s(?:at|with|for)\s+(?P<org>\S.*)", re.IGNORECASE)


def _identity(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
    raw = _group(match, clause, "x")
    head = _head_noun(raw)
    if not head or head in _IDENTITY_TRANSIENT_HEADS or _first_content_word(raw) in _IDENTITY_TRANSIENT_HEADS:
        return []
    obj = _object(match, clause)
    if not obj:
        return []
    entities: list[ExtractedEntity | None] = []
    at = _AT_ORGANISATION.search(raw)
    if at:
        organisation = _leading_phrase(at.group("org"), context.case, max_tokens=5)
        if organisation:
            entities.append(_entity("school" if head in _STUDENT_HEADS else "workplace", organisation))
    return [_fact(_predicate("is", obj), *entities)]


def _identity_negated(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
    raw = _group(match, clause, "x")
    if _head_noun(raw) in _IDENTITY_TRANSIENT_HEADS:
        return []
    obj = _object(match, clause)
    if not obj:
        return []
    is_no_longer = _is_no_longer(match) or bool(_ANYMORE.search(clause.folded))
    found = _fact(_predicate("is no longer" if is_no_longer else "is not", obj))
    found.is_correction = is_no_longer
    return [found]


def _stable_state(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
    obj = _object(match, clause)
    if not obj:
        return []
    state = _squash(match.group("state"))
    entities: list[ExtractedEntity | None] = []
    if state in ("married to", "engaged to"):
        name = _person_name(_group(match, clause, "x")[len(match.group("state")) :].lstrip(), context.case)
        entities.append(
            _entity("person", name, relation="spouse" if state == "married to" else "fiance") if name else None
        )
    status = state.removesuffix(" to")
    slot = "attribute:relationship-status" if status in _RELATIONSHIP_STATES else None
    return [_fact(_predicate("is", obj), *entities, slot=slot)]


def _nationality(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
    word = _group(match, clause, "x")
    if word.lower().replace(" ", "-") not in _NATIONALITIES_AND_FAITHS:
        return []
    return [_fact(_predicate("is", word[:1].upper() + word[1:]))]


def _organisation_fact(verb: str, entity_type: str, *, slot: str | None) -> _Handler:
    def handle(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
        obj = _object(match, clause)
        if not obj:
            return []
        organisation = _leading_phrase(_group(match, clause, "x"), context.case, max_tokens=5)
        said_verb = verb.format(preposition=_said(match, "preposition") or "at")
        return [
            _fact(_predicate(said_verb, obj), _entity(entity_type, organisation) if organisation else None, slot=slot)
        ]

    return handle


def _no_longer(verb: str, *, slot: str, entity_type: str) -> _Handler:
    def handle(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
        if not _is_no_longer(match) and not _ANYMORE.search(clause.folded):
            obj = _object(match, clause)
            return [_fact(_predicate(f"doesn't {verb}", obj))] if obj else []
        obj = _object(match, clause)
        if not obj:
            return []
        phrase = _leading_phrase(_group(match, clause, "x"), context.case, max_tokens=5, allow_region=True)
        obj = phrase or obj
        found = _fact(
            _predicate(f"no longer {_conjugate(verb.split()[0])} {' '.join(verb.split()[1:])}".strip(), obj),
            _entity(entity_type, phrase) if phrase else None,
            slot=slot,
        )
        found.is_correction = True
        return [found]

    return handle


def _school(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
    obj = _object(match, clause)
    if not obj:
        return []
    subject = _object(match, clause, "subject") if match.group("subject") else None
    school = _leading_phrase(_group(match, clause, "x"), context.case, max_tokens=6)
    verb = f"studies {subject} at" if subject else "studies at"
    return [_fact(_predicate(verb, obj), _entity("school", school) if school else None, slot="school")]


_EDUCATION = re.compile(r"\b(?:university|college|school|academy|institute|polytechnic|uni)\b", re.IGNORECASE)


def _goes_to_school(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
    raw = _group(match, clause, "x")
    school = _leading_phrase(raw, context.case, max_tokens=6)
    if not school or not _EDUCATION.search(school):
        return []
    obj = _object(match, clause)
    return [_fact(_predicate("goes to", obj or school), _entity("school", school), slot="school")]


def _residence(*, is_move: bool) -> _Handler:
    def handle(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
        place, location = _place(match, clause, context)
        if not place:
            return []
        is_business = context.scope == SCOPE_TENANT and _said(match, "subject").startswith("we")
        if is_business:
            found = _fact(_predicate("is located in", place), location, slot="location:business")
        else:
            found = _fact(_predicate("lives in", place), location, slot="location:residence")
        found.is_correction = is_move
        return [found]

    return handle


def _based_in(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
    place, location = _place(match, clause, context)
    if not place:
        return []
    is_business = context.scope == SCOPE_TENANT and _said(match, "subject").startswith("we")
    slot = "location:business" if is_business else "location:residence"
    return [_fact(_predicate("is based in", place), location, slot=slot)]


def _business_located(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
    place, location = _place(match, clause, context)
    return [_fact(_predicate("is located in", place), location, slot="location:business")] if place else []


_IN_PLACE = re.compile(r"\s(?:in|from)\s+(?P<place>\S.*)", re.IGNORECASE)


def _business_is(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
    raw = _group(match, clause, "x")
    head = _head_noun(raw)
    if context.scope != SCOPE_TENANT and head not in _BUSINESS_NOUNS:
        return []
    if head in _IDENTITY_TRANSIENT_HEADS:
        return []
    obj = _object(match, clause)
    if not obj:
        return []
    located = _IN_PLACE.search(raw)
    place = _leading_phrase(located.group("place"), context.case, max_tokens=4, allow_region=True) if located else None
    return [_fact(_predicate("business is", obj), _entity("location", place) if place else None, is_possessive=True)]


_CALLED = re.compile(r"(?:called|named)\s+(?P<name>\S.*)", re.IGNORECASE)


def _our_business_is(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
    obj = _object(match, clause)
    if not obj:
        return []
    entities: list[ExtractedEntity | None] = []
    called = _CALLED.match(_group(match, clause, "x"))
    if called:
        name = _leading_phrase(called.group("name"), context.case, max_tokens=5)
        entities.append(_entity("organization", name) if name else None)
    return [_fact(_predicate("business is", obj), *entities, is_possessive=True)]


_SERVICE_VERBS = frozenset({"offer", "provide"})
_ITEM_DETERMINER = re.compile(r"^(?:a|an|the|some|their|all\s+kinds\s+of|different)\s+", re.IGNORECASE)
_ITEM_TRAILER = re.compile(
    r"(?:\s+(?:sometimes|often|usually|always|online|locally|here|there|mostly|mainly|too|now|these\s+days|"
    r"every\s+\w+|in\s+\S+|at\s+\S+|from\s+\S+|to\s+\S+))+$",
    re.IGNORECASE,
)


def _we_sell(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
    verb = _said(match, "verb")
    if context.scope != SCOPE_TENANT and verb != "sell":
        return []
    obj = _object(match, clause)
    if not obj:
        return []
    entity_type = "service" if verb in _SERVICE_VERBS else "product"
    entities: list[ExtractedEntity | None] = []
    for item in _LIST_SEPARATOR.split(obj)[:5]:
        item = _ITEM_DETERMINER.sub("", item.strip())
        item = _ITEM_TRAILER.sub("", item)
        if item and len(item.split()) <= 4:
            entities.append(_entity(entity_type, item))
    return [_fact(_predicate(_conjugate(verb), obj), *entities)]


_METRIC_VERB = {"was": "was", "were": "were", "are": "are", "are now": "are"}


def _metric(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
    metric = " ".join(
        word if word.isupper() and len(word) > 1 else word.lower() for word in _group(match, clause, "metric").split()
    )
    value = _object(match, clause)
    if not value or len(value.split()) > 8:
        return []
    verb = _METRIC_VERB.get(_said(match, "verb"), "is")
    head = _squash(match.group("head"))
    return [_fact(_predicate(f"{metric} {verb}", value), slot=f"metric:{slugify(head)}", is_possessive=True)]


def _attribute(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
    attribute = _squash(_group(match, clause, "attribute"))
    value = _object(match, clause)
    if not value:
        return []
    verb = "are" if _said(match, "verb") == "are" else "is"
    return [_fact(_predicate(f"{attribute} {verb}", value), slot=f"attribute:{slugify(attribute)}", is_possessive=True)]


def _hobbies(match: re.Match[str], clause: _Clause, context: _Context) -> list[_Found]:
    obj = _object(match, clause)
    if not obj:
        return []
    items = [item.strip() for item in _LIST_SEPARATOR.split(obj)[:5]]
    entities = [_entity("hobby", item) for item in items if item and len(item.split()) <= 3]
    noun = _said(match, "noun")
    verb = "are" if noun == "hobbies" else "is"
    return [_preference(_predicate(f"{noun} {verb}", obj), 1, *entities, is_possessive=True)]


def _rule(
    name: str,
    pattern: str,
    handle: _Handler,
    *,
    allow_question: bool = False,
    check_hedge: bool = True,
    scope: str | None = None,
) -> _Rule:
    triggers = _RULE_TRIGGERS[name]
    return _Rule(
        name,
        re.compile(pattern, re.IGNORECASE),
        handle,
        allow_question,
        check_hedge,
        scope,
        None if triggers is None else frozenset(triggers),
    )


def _last_words(terms: Iterable[str]) -> list[str]:
    return [_CLAUSE_WORD.findall(term.lower())[-1] for term in terms]


_CLAUSE_WORD = re.compile(r"[a-z]+")
_KIN_AND_PET_WORDS = [*_last_words(_RELATION_CANONICAL), *_last_words(_SPECIES_CANONICAL), *_last_words(_BREED_SPECIES)]
_RULE_TRIGGERS: dict[str, list[str] | None] = {
    "instruction_avoid": _words("don dont not never"),
    "talk_avoid": _words("talk speak chat ask talking asking"),
    "talk_interest": _words("talk speak chat"),
    "length_limit": _words("want"),
    "negative_like": _words("don dont not never longer"),
    "dislike": _words("hate hated dislike detest despise loathe stand avoid eat"),
    "not_a_fan": _words("fan into"),
    "rather_not": _words("rather"),
    "fan_of": _words("fan"),
    "into": _words("into"),
    "rather": _words("rather"),
    "prefer": _words("prefer"),
    "like": _words("like love enjoy adore"),
    "favourite": _words("favourite favorite fave fav"),
    "favourite_reverse": _words("favourite favorite fave fav"),
    "hobbies": _words("hobby hobbies"),
    "habit": _words("always usually normally typically often never"),
    "want_to": _words("want wanna love like"),
    "my_name": _words("name"),
    "goes_by": _words("call calls go"),
    "introduces_self": _words("i im"),
    "pet_or_relation_name": _words("name named called"),
    "relative_does": _KIN_AND_PET_WORDS,
    "relation_appositive": _last_words(_RELATION_CANONICAL),
    "pet_appositive": [*_last_words(_SPECIES_CANONICAL), *_last_words(_BREED_SPECIES)],
    "relative_is": _KIN_AND_PET_WORDS,
    "age": None,  # digits
    "age_turned": _words("turned"),
    "age_is": _words("age"),
    "from": _words("from"),
    "have_not": _words("have"),
    "have": _words("have ve ive got"),
    "identity_negated": _words("not longer"),
    "stable_state": None,
    "nationality": None,
    "identity": _words("a an"),
    "work_not": _words("work"),
    "work_at": _words("work"),
    "working_at": _words("working employed"),
    "work_as": _words("work working"),
    "work_in": _words("work"),
    "study_at": _words("study studying"),
    "goes_to_school": _words("go"),
    "live_not": _words("live"),
    "live_in": _words("live"),
    "living_in": _words("living"),
    "moved_to": _words("moved relocated"),
    "business_located": _words("located situated"),
    "based_in": _words("based"),
    "located_in": _words("located"),
    "business_is": _words("we"),
    "our_business_is": _words("our"),
    "we_sell": _words("we"),
    "metric": _last_words(_METRIC_TERMS),
    "attribute": _last_words(_ATTRIBUTE_NOUNS),
}


_STATE_RE = _alternation(_STABLE_STATES)
_NEGATION = r"(?P<negation>don'?t|do\s+not|never|no\s+longer)\s+"

# Priority order: a rule is skipped where an earlier rule's trigger words already matched, so negations
# ("I don't like") always win over their positive forms and "I'm a big fan of" over "I'm a ...".
_RULES: tuple[_Rule, ...] = (
    # ---- preferences -------------------------------------------------------------------------------
    _rule(
        "talk_avoid",
        rf"(?:\b(?:please\s+)?(?:don'?t|do\s+not|never)\s+(?:ever\s+)?(?:{_TALK}|ask)\s+"
        r"(?:to\s+me\s+|with\s+me\s+|me\s+)?about"
        rf"|{_I}{_ADVERBS}{_DONT}(?:really\s+)?(?:want|wanna|like|love|care)\s+to\s+{_TALK}\s+about"
        rf"|{_ID}(?:much\s+)?rather\s+not\s+{_TALK}\s+about|\blet'?s\s+not\s+{_TALK}\s+about"
        rf"|\bstop\s+(?:talking|asking\s+me)\s+about)\s+{_X}",
        _talk_avoid,
    ),
    _rule(
        "talk_interest",
        rf"(?:\b(?:can|could|shall|may)\s+we\s+(?:please\s+)?{_TALK}\s+(?:a\s+bit\s+|more\s+)?about"
        rf"|\blet'?s\s+{_TALK}\s+(?:a\s+bit\s+|more\s+)?about|{_I}{_ADVERBS}(?:want|wanna)\s+(?:to\s+)?{_TALK}\s+about"
        rf"|{_ID}(?:love|like)\s+to\s+{_TALK}\s+about)\s+{_X}",
        _talk_interest,
        allow_question=True,
    ),
    _rule(
        "instruction_avoid",
        r"^\W*(?:please\s+)?(?:don'?t|do\s+not|never)\s+(?:ever\s+)?"
        r"(?P<verb>use|send|call\s+me|mention|bring\s+up|say|add|"
        r"include|write|recommend|suggest|give\s+me|reply\s+with|respond\s+with)\s+" + _X,
        _instruction_avoid,
    ),
    _rule(
        "length_limit",
        rf"{_I}{_ADVERBS}{_DONT}(?:really\s+)?want\s+(?P<x>(?:\S+\s+){{0,3}}?\S+)\s+"
        r"(?P<comparison>longer|more|bigger|larger|over|above|shorter|less|fewer|smaller|under|below)(?:\s+than)?\s+"
        r"(?P<amount>\d[\d,.]*k?)\s*(?P<unit>[a-z]+)?",
        _length_limit,
    ),
    _rule(
        "negative_like",
        rf"{_I}{_ADVERBS}{_NEGATION}(?:really\s+|even\s+|particularly\s+|much\s+|actually\s+)?"
        r"(?P<verb>like|liked|love|loved|enjoy|enjoyed|care\s+for|eat|drink|smoke|want)\b\s*(?P<x>\S.*)?",
        _negative_like,
    ),
    _rule(
        "dislike",
        rf"{_I}{_ADVERBS}(?P<verb>hate|hated|dislike|detest|despise|loathe|can'?t\s+stand|cannot\s+stand|avoid"
        rf"|can'?t\s+eat|cannot\s+eat)\s+{_X}",
        _dislike,
    ),
    _rule(
        "not_a_fan",
        rf"{_IM}(?:really\s+|just\s+)?(?P<negation>not|no\s+longer)\s+(?:really\s+)?(?:a\s+)?"
        rf"(?:(?:big|huge|great|massive)\s+)?(?P<kind>fan\s+of|into)\s+{_X}",
        _not_a_fan,
    ),
    _rule(
        "rather_not",
        rf"{_ID}(?:much\s+)?rather\s+not\s+{_X}",
        _simple_preference("would rather not", -1, typed=False),
    ),
    _rule(
        "fan_of",
        rf"{_IM}(?:really\s+|such\s+|so\s+|also\s+)?(?:a\s+)?(?:(?:big|huge|massive|great|total|real|die[\s-]hard)\s+)?"
        rf"fan\s+of\s+{_X}",
        _simple_preference("is a fan of", 1),
    ),
    _rule("into", rf"{_IM}(?:really\s+|so\s+|also\s+)?into\s+{_X}", _simple_preference("is into", 1)),
    _rule("rather", rf"{_ID}(?:much\s+)?rather\s+{_X}", _simple_preference("would rather", 1, typed=False)),
    _rule("prefer", rf"(?:{_I}{_ADVERBS}|{_ID})prefer\s+{_X}", _simple_preference("prefers", 1)),
    _rule("like", rf"{_I}{_ADVERBS}(?P<verb>like|love|enjoy|adore)\s+{_X}", _like),
    _rule(
        "favourite",
        r"\bmy\s+(?:(?:all[\s-]time|absolute|current|most)\s+)?(?:favou?rite|fave|fav)\s+"
        r"(?P<what>[a-z][a-z'-]*(?:\s+[a-z][a-z'-]*){0,2}?)\s*(?P<verb>is|are|'s|has\s+always\s+been)\s+" + _X,
        _favourite,
    ),
    _rule(
        "favourite_reverse",
        r"^\W*(?P<subject>[^,;]+?)\s+(?:is|are|'s)\s+(?:probably\s+|definitely\s+)?"
        r"my\s+(?:(?:all[\s-]time|absolute)\s+)?"
        r"(?:favou?rite|fave|fav)\s+(?P<what>[a-z][a-z'-]*(?:\s+[a-z][a-z'-]*)?)\s*[.!]*$",
        _favourite_reverse,
    ),
    _rule("hobbies", rf"\bmy\s+(?:main\s+)?(?P<noun>hobby|hobbies)\s+(?:is|are|include)\s+{_X}", _hobbies),
    _rule(
        "habit",
        rf"{_I}(?P<adverb>always|usually|normally|typically|often|never)\s+(?P<verb>[a-z]+)\b\s*(?P<x>\S.*)?",
        _habit,
    ),
    _rule(
        "want_to",
        rf"(?:{_I}{_ADVERBS}(?P<want>want\s+to|wanna)\s+|{_ID}(?P<wish>love|like)\s+to\s+)"
        r"(?P<verb>[a-z]+)\b\s*(?P<x>\S.*)?",
        _want_to,
    ),
    # ---- who they are --------------------------------------------------------------------------------
    _rule("my_name", rf"\bmy\s+(?:full\s+|first\s+|real\s+)?name\s*(?:is|'s)\s+{_X}", _my_name),
    _rule(
        "goes_by",
        rf"\b(?:call\s+me|i\s+go\s+by|people\s+call\s+me|everyone\s+calls\s+me|friends\s+call\s+me)\s+{_X}",
        _goes_by,
    ),
    _rule("introduces_self", rf"^\W*{_IM}(?P<x>[^\W\d_][\w'-]*(?:\s+[^\W\d_][\w'-]*)?)\s*[.!]*$", _introduces_self),
    _rule(
        "pet_or_relation_name",
        rf"{_MY}(?P<who>{_PET_RE}|{_RELATION_RE})\s*"
        rf"(?:'s\s+name\s+is|\s+is\s+(?:called|named)|\s+name\s+is|'s\s+called)\s+{_X}",
        _pet_or_relation_name,
    ),
    _rule(
        "relative_does",
        rf"{_MY}(?P<who>{_PET_RE}|{_RELATION_RE})(?:\s+(?P<name>[^\W\d_][\w'-]*))??"
        r"(?:\s+(?:really|also|still|now|currently|just|absolutely))?\s+"
        rf"(?P<verb>{_alternation(_RELATIVE_VERB)})\s+{_X}",
        _relative_does,
    ),
    _rule("relation_appositive", rf"{_MY}(?P<who>{_RELATION_RE}),?\s+{_X}", _relation_appositive),
    _rule(
        "pet_appositive",
        r"\b(?P<determiner>my|our|a|an)\s+(?:(?:new|little|old|baby|rescue|sweet|adopted|senior|young)\s+)?"
        rf"(?P<who>{_PET_RE})(?:\s*,\s*|\s+(?P<named>named|called)\s+|\s+){_X}",
        _pet_appositive,
    ),
    _rule(
        "relative_is",
        rf"{_MY}(?P<who>{_PET_RE}|{_RELATION_RE})\s*(?P<verb>is|'s|was)\s+{_X}",
        _relative_is,
    ),
    _rule(
        "age",
        rf"{_IM}(?:now\s+|just\s+)?(?P<x>\d{{1,3}})(?P<unit>\s*(?:years?|yrs?)(?:\s*old)?\b|\s*y\.?\s*/?o\b\.?)?",
        _age,
    ),
    _rule("age_turned", r"\bi\s+(?:just\s+|recently\s+)?turned\s+(?P<x>\d{1,3})(?P<unit>)\b", _age),
    _rule("age_is", r"\bmy\s+age\s+is\s+(?P<x>\d{1,3})(?P<unit>)\b", _age),
    _rule("from", rf"(?:{_IM}|{_I}come\s+)(?P<originally>originally\s+)?from\s+{_X}", _from),
    _rule(
        "have_not",
        rf"{_I}(?P<negation>don'?t|do\s+not|no\s+longer)\s+have\s+{_X}",
        _have_not,
    ),
    _rule(
        "have",
        rf"(?:\bi\s*(?:'\s*ve|\s+have)\s+got|\bive\s+got|{_I}(?:also\s+|still\s+|now\s+|even\s+|actually\s+)?have"
        rf"|\bi\s*'\s*ve|\bive)\s+{_X}",
        _have,
    ),
    _rule(
        "identity_negated",
        rf"{_IM}(?P<negation>not|no\s+longer)\s+(?P<x>(?:a|an)\s+\S.*)",
        _identity_negated,
    ),
    _rule("stable_state", rf"{_IM}(?:also\s+|now\s+|still\s+)?(?P<x>(?P<state>{_STATE_RE})\b.*)", _stable_state),
    _rule("nationality", rf"{_IM}(?P<x>[a-z]+(?:[\s-][a-z]+)?)\s*[.!,]*$", _nationality),
    _rule("identity", rf"{_IM}(?:now\s+|also\s+|still\s+)?(?P<x>(?:a|an)\s+\S.*)", _identity),
    _rule(
        "work_not",
        rf"{_I}(?P<negation>no\s+longer|don'?t|do\s+not)\s+work\s+(?P<preposition>at|for)\s+{_X}",
        _no_longer("work at", slot="workplace", entity_type="workplace"),
    ),
    _rule(
        "work_at",
        rf"{_I}(?:currently\s+|now\s+|still\s+|also\s+|actually\s+)?work\s+(?P<preposition>at|for)\s+{_X}",
        _organisation_fact("works {preposition}", "workplace", slot="workplace"),
    ),
    _rule(
        "working_at",
        rf"{_IM}(?:currently\s+|now\s+|still\s+)?(?:working|employed)\s+(?P<preposition>at|for|by)\s+{_X}",
        _organisation_fact("works at", "workplace", slot="workplace"),
    ),
    _rule(
        "work_as",
        rf"(?:{_I}(?:currently\s+|now\s+|also\s+)?work|{_IM}(?:currently\s+|now\s+)?working)"
        r"\s+as\s+(?P<x>(?:a|an)\s+\S.*)",
        lambda match, clause, context: _simple_fact("works as", match, clause),
    ),
    _rule(
        "work_in",
        rf"{_I}(?:currently\s+|now\s+|also\s+)?work\s+in\s+{_X}",
        lambda match, clause, context: _simple_fact("works in", match, clause),
    ),
    _rule(
        "study_at",
        rf"(?:{_I}(?:currently\s+|now\s+)?study|{_IM}(?:currently\s+|now\s+)?studying)\s+"
        r"(?:(?P<subject>[^,;]+?)\s+)?at\s+" + _X,
        _school,
    ),
    _rule("goes_to_school", rf"{_I}(?:currently\s+|now\s+)?go\s+to\s+{_X}", _goes_to_school),
    _rule(
        "live_not",
        rf"{_I}(?P<negation>no\s+longer|don'?t|do\s+not)\s+live\s+in\s+{_X}",
        _no_longer("live in", slot="location:residence", entity_type="location"),
    ),
    _rule(
        "live_in",
        rf"\b(?P<subject>i|we)\s+(?:currently\s+|now\s+|still\s+|also\s+|actually\s+)?live\s+in\s+{_X}",
        _residence(is_move=False),
    ),
    _rule(
        "living_in",
        rf"(?P<subject>{_IM})(?:currently\s+|now\s+|still\s+)?living\s+in\s+{_X}",
        _residence(is_move=False),
    ),
    _rule(
        "moved_to",
        r"\b(?P<subject>i|we|ive)\s*(?:'\s*ve|\s+have)?\s+(?:just\s+|recently\s+|finally\s+|now\s+|since\s+|also\s+)?"
        rf"(?:moved|relocated)\s+to\s+{_X}",
        _residence(is_move=True),
    ),
    _rule(
        "business_located",
        r"\b(?:we\s*'\s*re|we\s+are|our\s+(?:[a-z]+\s+){0,2}?(?:shop|store|business|company|office|offices|restaurant|"
        r"cafe|café|studio|clinic|salon|bakery|agency|firm|startup|brand|hq|headquarters|warehouse|factory|showroom|"
        r"outlet|branch|practice)\s+(?:is|are))\s+(?:now\s+|currently\s+)?(?:located|situated)\s+in\s+" + _X,
        _business_located,
    ),
    _rule(
        "based_in",
        rf"(?P<subject>{_IM}|\bwe\s*'\s*re\s+|\bwe\s+are\s+)(?:currently\s+|now\s+)?based\s+in\s+{_X}",
        _based_in,
    ),
    _rule("located_in", rf"\blocated\s+in\s+{_X}", _business_located, scope=SCOPE_TENANT),
    _rule("business_is", r"\b(?:we\s*'\s*re|we\s+are)\s+(?P<x>(?:a|an)\s+\S.*)", _business_is),
    _rule(
        "our_business_is",
        rf"\bour\s+(?:business|company|shop|store|startup|brand|agency|firm)\s+is\s+{_X}",
        _our_business_is,
    ),
    _rule(
        "we_sell",
        r"\bwe\s+(?:also\s+|mainly\s+|mostly\s+|only\s+|primarily\s+|now\s+|just\s+)?"
        r"(?P<verb>sell|make|offer|provide|bake|manufacture|produce|import|export|distribute|design)\s+" + _X,
        _we_sell,
    ),
    _rule(
        "metric",
        r"(?:\b(?:my|our|the)\s+|^\W*)(?P<metric>(?:[a-z]+\s+){0,2}?(?P<head>"
        + _alternation(_METRIC_TERMS)
        + r"))\s+(?P<verb>is\s+now|is\s+currently|are\s+now|is|are|was|were"
        r"|has\s+(?:grown|gone\s+up|risen|dropped|fallen|gone\s+down)\s+to"
        r"|(?:grew|rose|went\s+up|dropped|fell|went\s+down)\s+to|hit|reached)\s+"
        r"(?P<x>(?:about|around|roughly|nearly|almost|over|under|just\s+over|just\s+under|approximately|~)?\s*"
        r"[$€£₹]?\d.*)",
        _metric,
    ),
    _rule(
        "attribute",
        rf"\bmy\s+(?P<attribute>{_alternation(_ATTRIBUTE_NOUNS)})\s*(?P<verb>is|'s|are)\s+{_X}",
        _attribute,
    ),
)


def _simple_fact(verb: str, match: re.Match[str], clause: _Clause) -> list[_Found]:
    obj = _object(match, clause)
    return [_fact(_predicate(verb, obj))] if obj else []


# Appositives ("my wife Priya", "a dog named Bruno") run alongside the other rules: they neither block nor
# are blocked, so "my dog Bruno loves belly rubs" yields both "has a dog named Bruno" and the preference.
_INDEPENDENT_RULES = frozenset({"relation_appositive", "pet_appositive"})


def _object_start(match: re.Match[str]) -> int:
    if "x" in match.re.groupindex and match.start("x") >= 0:
        return match.start("x")
    return match.end()


def _apply_rules(text: str, context: _Context) -> list[_Found]:
    ranked: list[tuple[int, int, _Found]] = []
    for clause in _clauses(text):
        consumed: list[tuple[int, int]] = []
        words = set(_CLAUSE_WORD.findall(clause.folded.lower()))
        for order, rule in enumerate(_RULES):
            if rule.triggers is not None and rule.triggers.isdisjoint(words):
                continue
            if rule.scope is not None and rule.scope != context.scope:
                continue
            if clause.is_question and not rule.allow_question:
                continue
            is_independent = rule.name in _INDEPENDENT_RULES
            position = 0
            while position <= len(clause.folded):
                match = rule.pattern.search(clause.folded, position)
                if match is None:
                    break
                trigger = (match.start(), _object_start(match))
                position = max(trigger[1], match.start() + 1)
                if not is_independent and any(trigger[0] < end and start < trigger[1] for start, end in consumed):
                    continue
                if rule.check_hedge and _HEDGE.search(clause.lead_in + " " + clause.folded[: match.start()]):
                    continue
                produced = rule.handle(match, clause, context)
                if not produced:
                    continue
                if not is_independent:
                    consumed.append(trigger)
                for item in produced:
                    item.is_correction = item.is_correction or clause.is_correction
                    item.position = clause.offset + match.start()
                    ranked.append((item.position, order, item))
    ranked.sort(key=lambda entry: (entry[0], entry[1]))
    return [item for _position, _order, item in ranked]


_UNNAMED_RELATIVE = re.compile(
    rf"\b(?:my|our)\s+(?P<who>{_alternation(_SINGLE_RELATION_WORDS)})(?!\w)(?P<after>\s*\S*)", re.IGNORECASE
)


def _relative_mentions(text: str, case: _CaseMode) -> list[tuple[int, ExtractedEntity]]:
    """ "my mom", "my boss" without a name: person:mom, person:boss (one person per such relation)."""
    mentions: list[tuple[int, ExtractedEntity]] = []
    for match in _UNNAMED_RELATIVE.finditer(_fold(text)):
        after = text[match.start("after") : match.end("after")].strip()
        if case.is_informative and after and _person_name(after, case):
            continue  # "my wife Priya": the named person is the entity
        canonical = _RELATION_CANONICAL[_squash(match.group("who"))]
        entity = _entity("person", canonical, relation=canonical)
        if entity:
            mentions.append((match.start(), entity))
    return mentions


_NAME_TOKEN = re.compile(r"[^\W\d_][\w'\u2019.-]*")
_SENTENCE_OPENERS = frozenset('.!?\n:;"\u201c(•*>#-\u2013—')
_CHAT_ACRONYMS = frozenset(
    _words(
        "LOL OMG BTW IDK TBH IMO IMHO FYI ASAP OK LMAO ROFL BRB TTYL NGL PS AM PM TV DM DMS PLS THX TY NP AKA ETA AI"
    )
)
_NAME_CONNECTORS = frozenset(_words("of de da del di du la le van von y & and"))
_MAX_NAME_TOKENS = 4


def _is_sentence_initial(text: str, start: int) -> bool:
    index = start - 1
    while index >= 0 and text[index] in " \t":
        index -= 1
    return index < 0 or text[index] in _SENTENCE_OPENERS


def _proper_names(text: str, case: _CaseMode) -> list[tuple[int, str]]:
    """Capitalised words and runs of them ("Bruno", "Sweet Dreams", "Bank of America").

    Sentence-initial words count only when they are not common English words (or when a common word that
    does not usually open a sentence is followed by another capitalised word: "Sweet Dreams"). "I",
    weekday and month names, kinship words and chat acronyms are never names.
    """
    if not case.is_informative:
        return []
    tokens = list(_NAME_TOKEN.finditer(text))
    words = [token.group(0).rstrip(".-\u2019'").removesuffix("'s").removesuffix("\u2019s") for token in tokens]

    def is_never_a_name(word: str) -> bool:
        lower = _fold(word).lower()
        return (
            len(word) < 2
            or not word[0].isupper()
            or lower in _NOT_A_NAME
            or lower in _NATIONALITIES_AND_FAITHS
            or word in _CHAT_ACRONYMS
            or ("'" in lower and lower in SENTENCE_STARTERS)
            or (word.isupper() and lower in COMMON_WORDS)  # emphasis ("AGAIN"), not an acronym
        )

    never = [is_never_a_name(word) for word in words]

    def is_mid_sentence_name(index: int) -> bool:
        word = words[index]
        if never[index]:
            return False
        if word.isupper() and len(word) > 6:
            return False  # shouting, not an acronym
        return not _is_sentence_initial(text, tokens[index].start())

    def is_name_start(index: int) -> bool:
        word = words[index]
        if never[index]:
            return False
        if not _is_sentence_initial(text, tokens[index].start()):
            return True
        lower = _fold(word).lower()
        if _is_common_word_form(lower):
            return False  # "Seeing", "Been", "Pets", "Congrats" open sentences; they are not names
        if lower not in COMMON_WORDS:
            return True
        return (
            lower not in SENTENCE_STARTERS
            and index + 1 < len(tokens)
            and text[tokens[index].end() : tokens[index + 1].start()] == " "
            and is_mid_sentence_name(index + 1)
        )

    names: list[tuple[int, str]] = []
    index = 0
    while index < len(tokens):
        if not is_name_start(index):
            index += 1
            continue
        run = [index]
        cursor = index
        while len(run) < _MAX_NAME_TOKENS and not tokens[cursor].group(0).endswith(("'s", "\u2019s")):
            following = cursor + 1
            if following >= len(tokens) or text[tokens[cursor].end() : tokens[following].start()] != " ":
                break
            if is_mid_sentence_name(following):
                run.append(following)
                cursor = following
                continue
            connector = words[following].lower()
            after = following + 1
            if (
                connector in _NAME_CONNECTORS
                and not words[following][0].isupper()
                and after < len(tokens)
                and text[tokens[following].end() : tokens[after].start()] == " "
                and is_mid_sentence_name(after)
                and connector != "and"
            ):
                run.extend([following, after])
                cursor = after
                continue
            break
        names.append((tokens[index].start(), " ".join(words[position] for position in run)))
        index = cursor + 1
    return [(start, name) for start, name in names if not _is_vocative(text, start, name)]


_GREETINGS = frozenset(
    [
        "hi",
        "hey",
        "hello",
        "hiya",
        "yo",
        "thanks",
        "thank",
        "thx",
        "ty",
        "bye",
        "goodbye",
        "yay",
        "wow",
        "oh",
        "aw",
        "aww",
        "awww",
        "congrats",
        "congratulations",
        "sorry",
        "ok",
        "okay",
        "yes",
        "yeah",
        "yep",
        "no",
        "nope",
        "haha",
        "hahaha",
        "lol",
        "dear",
        "morning",
        "night",
        "evening",
        "welcome",
        "cheers",
        "great",
        "nice",
        "cool",
        "same",
        "totally",
        "absolutely",
        "definitely",
        "exactly",
        "sure",
        "agreed",
        "true",
        "omg",
    ]
)


_WORD_FORMS_NOT_NAMES = frozenset(_words("been being having doing done one ones bet theyll"))


def _is_common_word_form(lower: str) -> bool:
    """An inflected common word or an interjection: a gerund ("taking"), a plural or past form of a common
    word ("pets", "moments", "played"), a form of be/have/do, "congrats"."""
    if lower in _WORD_FORMS_NOT_NAMES or lower in _GREETINGS:
        return True
    if len(lower) >= 6 and lower.endswith("ing"):
        return True
    stems = []
    if lower.endswith("s"):
        stems += [lower[:-1], lower[:-2] if lower.endswith("es") else ""]
    if lower.endswith("ed"):
        stems += [lower[:-2], lower[:-1]]
    return any(stem in COMMON_WORDS for stem in stems if stem)


def _is_vocative(text: str, start: int, name: str) -> bool:
    """A name the speaker addresses ("Thanks, Melanie!", "Hey Caroline!", "Melanie, look") is not a mention
    of that person: linking every greeting to them would make them match every question about anything."""
    end = start + len(name)
    if end < len(text) and text[end] not in ",!?.;:":
        return False
    before = text[:start].rstrip()
    if not before or before[-1] in ".!?,":
        return True
    last_word = re.search(r"([A-Za-z']+)$", before)
    return bool(last_word and last_word.group(1).lower() in _GREETINGS)


def _is_within(slug: str, other: str) -> bool:
    return f"-{slug}-" in f"-{other}-"


def _merge_entities(
    found: list[_Found],
    mentions: list[tuple[int, ExtractedEntity]],
    names: list[tuple[int, str]],
    own_name_slugs: set[str],
) -> list[ExtractedEntity]:
    """Distinct entities in message order; a typed entity wins over a bare name with the same words."""
    typed: list[tuple[int, ExtractedEntity]] = [(item.position, entity) for item in found for entity in item.entities]
    named_relations = {
        entity.metadata.get("relation") for _position, entity in typed if entity.entity_type == "person"
    } - {None}
    typed.extend(
        (position, entity) for position, entity in mentions if entity.metadata.get("relation") not in named_relations
    )
    typed.sort(key=lambda entry: entry[0])
    by_key: dict[str, tuple[int, ExtractedEntity]] = {}
    for position, entity in typed:
        by_key.setdefault(entity.key, (position, entity))
    typed_slugs = [entity.slug for _position, entity in by_key.values()]
    for position, display in names:
        name = _entity("name", display)
        if name is None or name.slug in own_name_slugs or name.key in by_key:
            continue
        if any(_is_within(name.slug, slug) for slug in typed_slugs):
            continue
        by_key[name.key] = (position, name)
    return [entity for _position, entity in sorted(by_key.values(), key=lambda entry: entry[0])]


def _mentions(text: str, words: str) -> bool:
    """``words`` occur in ``text`` as whole words (both already lower-case)."""
    start = text.find(words)
    while start >= 0:
        end = start + len(words)
        if (start == 0 or not text[start - 1].isalnum()) and (end == len(text) or not text[end].isalnum()):
            return True
        start = text.find(words, start + 1)
    return False


def _memories(found: list[_Found], entities: list[ExtractedEntity]) -> list[ExtractedMemory]:
    canonical = {entity.key: entity for entity in entities}
    lower_names = [(entity, entity.display_name.lower()) for entity in entities]
    memories: list[ExtractedMemory] = []
    index_by_key: dict[tuple[str, str], int] = {}
    for item in found:
        if not item.predicate:
            continue  # an entity-only match
        key = (item.memory_type, item.predicate.lower())
        if key in index_by_key:
            earlier = memories[index_by_key[key]]
            if item.is_correction and not earlier.is_correction:
                memories[index_by_key[key]] = ExtractedMemory(**{**earlier.__dict__, "is_correction": True})
            continue
        linked: dict[str, ExtractedEntity] = {}
        for entity in item.entities:
            linked.setdefault(entity.key, canonical.get(entity.key, entity))
        predicate = item.predicate.lower()
        for entity, display_name in lower_names:
            if _mentions(predicate, display_name):
                linked.setdefault(entity.key, entity)
        index_by_key[key] = len(memories)
        memories.append(
            ExtractedMemory(
                memory_type=item.memory_type,
                predicate=item.predicate,
                entities=tuple(linked.values()),
                slot=item.slot,
                is_correction=item.is_correction,
                polarity=item.polarity,
                is_possessive=item.is_possessive,
            )
        )
    return memories


def extract(text: str, *, scope: str = SCOPE_CONTACT, role: str = ROLE_USER) -> Extraction:
    """Facts, preferences, at most one episode and the entities of one turn.

    Facts and preferences come only from the ``user`` role (the end-user for scope ``contact``, the
    business owner for scope ``tenant``); every other role yields only the episode. Low-content turns
    ("lol", "ok", "👍") yield nothing.
    """
    if scope not in SCOPES:
        raise ValueError(f"scope must be one of {', '.join(SCOPES)}")
    cleaned = clean_text(text)
    if is_low_content(cleaned):
        return Extraction(cleaned_text=cleaned, is_low_content=True, memories=(), entities=())
    scanned = cleaned[:MAX_SCAN_CHARS]
    case = _case_mode(scanned)
    context = _Context(scope=scope, case=case, own_name_slugs=set())
    found: list[_Found] = []
    mentions: list[tuple[int, ExtractedEntity]] = []
    if role == ROLE_USER:
        found = _apply_rules(scanned, context)
        mentions = _relative_mentions(scanned, case)
    entities = _merge_entities(found, mentions, _proper_names(scanned, case), context.own_name_slugs)
    episode = ExtractedMemory(
        memory_type=MEMORY_TYPE_EPISODE,
        predicate=cleaned[:MAX_EPISODE_CHARS].rstrip(),
        entities=tuple(entities),
    )
    return Extraction(
        cleaned_text=cleaned,
        is_low_content=False,
        memories=(*_memories(found, entities), episode),
        entities=tuple(entities),
    )


# --------------------------------------------------------------------------------------------------
# Vocabulary: common English words (proper-name detection, rare-term detection in salience)
# --------------------------------------------------------------------------------------------------

# Words that commonly open a chat sentence: capitalised there, they never start a name.
SENTENCE_STARTERS = frozenset(
    _words("""
    a an the my your our his her their its it it's this that these those there here we you he she they me us
    them i so and but or if then because since after before while though although also still even only just
    actually well now anyway besides plus okay ok yes yeah no nope maybe probably definitely really honestly
    today tonight yesterday tomorrow last next every each some any all both what why how when where who which
    whatever can could would should will did do does is are was were have has had got get went go going gonna
    wanna gotta let let's lets met saw told asked called texted watched played started finished tried cooked
    ate bought visited spent left came come took made gave found thought felt feeling thinking working hey hi
    hello thanks thank sorry please oh ah wow ugh hmm lol haha dear remember guess need want love like hate
    miss hope wish tell sounds looks seems good great nice cool sure fine happy sad not never always sometimes
    usually often again finally recently lately once twice almost about around at in on for with from to by
    of as into over under up down out off back home work school morning afternoon evening night weekend
    don't dont can't cant won't isn't aren't wasn't weren't didn't doesn't haven't hasn't hadn't couldn't
    wouldn't shouldn't i'm i've i'd i'll we're we've we'll we'd you're you've you'll they're they've that's
    there's here's what's how's where's who's he's she's it'll that'll
    """)
)

COMMON_WORDS = SENTENCE_STARTERS | frozenset(
    _words("""
    able about above accept across act add afraid age ago agree air alive allow alone along already alright
    amazing among amount angry animal another answer anybody anyone anything anywhere apart apple area arm
    army arrive art ask asleep attack aunt avoid awake away awesome awful baby bad bag ball bank bar base bath
    bathroom beach bear beat beautiful became become bed bedroom beer begin behind believe best better big
    bike bill bird birthday bit bite black blame blood blue board boat body book boring born boss bottle
    bottom box boy boyfriend brain bread break breakfast bring brother brown build building burn bus business
    busy buy cake call calm camera camp car card care career careful carry case cat catch cause center
    chair chance change cheap check cheese chicken child children chocolate choose church city class clean
    clear climb close clothes cloud club coach coat coffee cold college color colour company complete
    computer confused cook cool copy corner cost couch could count country couple course cousin cover crazy
    cream create cry cup cut cute dad daily damn dance danger dark date daughter day dead deal dear death
    decide deep delicious dentist depressed design desk dinner dirty doctor dog done door double dream dress
    drink drive drop drunk dry during early earn easy eat egg else email empty end energy enjoy enough enter
    even event ever everybody everyone everything exactly exam excited exciting exercise expect expensive
    explain eye face fact fail fair fall false family famous fan far farm fast fat father fault fear feel
    feet fell few field fight fill film find finger finish fire first fish fit fix flat floor flower fly
    follow food foot forget forgive form forward free fresh friend friendly front fruit full fun funny future
    game garden gas gave gift girl girlfriend give glad glass goal god gold golf gone gone grade grandma
    grandpa grass gray green grey group grow guess guitar guy gym hair half hall hand handle hang happen hard
    hat head health healthy hear heard heart heat heavy hell help high hill hit hobby hold hole holiday
    horse hospital hot hotel hour house huge human hungry hurry hurt husband ice idea ill important inside
    interest interested interesting island job join joke juice jump junior keep key kid kill kind king kiss
    kitchen knee knew know lady lake land language large late later laugh law lay lazy lead learn least leave
    leg less lesson letter level library lie life light line list listen little live living lonely long look
    lose lost lot loud low luck lucky lunch mad main make man manager many map mark market marry matter may
    meal mean meat medicine meet meeting member memory men message middle might mile milk mind mine minute
    mirror miss mistake mom moment money month moon more most mother mountain mouth move movie much mum
    music must name nap nature near nearly neck neighbor neighbour nervous new news nice night nobody noise
    none normal nose note nothing notice number nurse offer office old open order other outside own page
    pain paint pair pants paper parent park part party pass past pay peace people perfect person phone photo
    pick picture piece pink pizza place plan plane plant play player pleasant pocket point police pool poor
    possible post power practice present pretty price prison problem project promise proud pull push put
    quick quiet quite race rain raise rather reach read ready real reason red relax relationship rest
    restaurant rich ride right ring rise river road rock roll room rough round rule run safe salt same sand
    save say scared scary sea season seat second secret see seem sell send senior sense serious set several
    shape share sharp ship shirt shoe shoes shop short shot shoulder shout show shower shut sick side sign
    silly simple sing single sister sit size skin sky sleep sleepy slow small smart smell smile snow social
    soft someone something son song soon sort sound soup space speak special spend sport spring stand star
    start state station stay steal step stick stop store story strange street stress stressed strict strong
    student study stuff stupid style success sugar suit summer sun super support surprise sweet swim table
    take talk tall taste tea teach teacher team tear teeth terrible test text than thing think thirsty
    through throw ticket time tired together toilet tomato tone too tooth top total touch tough town toy
    train travel tree trip trouble truck true trust truth try turn type ugly uncle understand unless until
    upset use useful usual vacation visit voice wait wake walk wall war warm wash watch water way weak wear
    weather wedding week weird welcome west wet white whole wide wife wild win wind window wine winter wise
    woman women wonder wonderful word world worried worry worse worst would write wrong yard year yellow
    young youth zero answer awkward bored boring chill lit mood sick vibe vibes

    absolutely accident according actually addition adventure afternoon afterwards agreement already
    although amazingly anniversary announcement anything anywhere apartment apparently application
    appointment appreciate appreciated approach argument assignment assistant atmosphere attention audience
    available background basically beautiful beginning behaviour behavior benefits birthday boyfriend
    breakfast brilliant broadcast brothers building businesses calculate candidate celebrate celebration
    certainly challenge challenging character chocolate christmas classroom colleague colleagues comfortable
    commercial committee community companies company's completely complicated computer concerned condition
    confident confidence congratulations connection consider considering continue conversation
    conversations convenient correction countries currently customer customers dangerous daughter daughters
    decision decisions definitely delicious depressed depression description designer desperately
    different difficult dinosaur direction directly disappointed disappointing discussion distance
    documentary downstairs education electricity elsewhere emergency emotional employees encourage
    engineering entertainment environment especially essentially evening everybody everything everywhere
    exactly excellent exchange excitement exhausted expensive experience experiences explanation
    extremely fantastic favourite favorite favourites favorites financial following football forgotten
    fortunately frequently friendship furniture generally gentleman girlfriend government grandchildren
    granddaughter grandfather grandmother grandparents gratitude happiness headphones healthcare helpful
    highlight historical hospital household housework hundreds immediately important impossible impressive
    including incredible incredibly independent information ingredients instagram instructions
    intelligent interested interesting internet interview introduce invitation knowledge laughing
    literally lockdown meanwhile medication meditation mentioned midnight motivation motivated mountains
    neighborhood neighbourhood newspaper nightmare notification obviously occasionally officially
    otherwise overnight overthinking paperwork parenting particular particularly passenger performance
    personal personally perspective photograph photography physically playground political politics
    population portfolio positive possibility potential practically preparing presentation president
    pressure previously principal priorities priority privately probably problem problems procrastinating
    produce product products production professional professor programme programming progress properly
    prosperity psychology published punishment qualified questions quarantine reasonable recommend
    recommendation recommendations recently refreshing regarding regularly relationship relationships
    remember remembered reminder apologise apologize relatives religious remarkable renovation
    reservation residence responsible restaurant restaurants retirement schedule seriously situation
    situations something sometimes somewhere specifically spiritual statement stomachache strawberry
    strawberries stressful structure struggling stubborn successful suddenly suggestion summertime
    sunflower supermarket supportive surprised surprising swimming technology teenager television
    temperature terrible terribly therapist therapy thankfully thanksgiving themselves therefore
    thousands throughout tomorrow tonight tournament traditional training transport transportation
    traveling travelling treatment tremendous unbelievable uncomfortable understand understanding
    unexpected unfortunately university unusual upcoming vacation valentine vegetables vegetarian
    volunteer volunteering wednesday weekend whatever wherever wonderful workplace worthwhile yesterday
    yourself yourselves appreciate boyfriends girlfriends neighbours neighbors afternoons
    """)
)
