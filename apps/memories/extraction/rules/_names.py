"""Proper names: the name phrase after a trigger ("works at Bank of America", "lives in Austin, Texas"),
the case mode of a message, and the scan for capitalised names anywhere in it (``name:`` entities,
vocatives dropped; docs/extraction.md, "Entities").
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from functools import lru_cache

from apps.memories.extraction.rules._text import _fold, _words
from apps.memories.extraction.rules.vocabulary import _NATIONALITIES_AND_FAITHS, COMMON_WORDS, SENTENCE_STARTERS

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
    it it's we we're you you're he she they them us his its our their
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


_NAME_TOKEN = re.compile(r"[^\W\d_][\w'\u2019.-]*")
_SENTENCE_OPENERS = frozenset('.!?\n:;"\u201c(•*>#-\u2013—')
_CHAT_ACRONYMS = frozenset(
    _words(
        "LOL OMG BTW IDK TBH IMO IMHO FYI ASAP OK LMAO ROFL BRB TTYL NGL PS AM PM TV DM DMS PLS THX TY NP AKA ETA AI"
    )
)
_NAME_CONNECTORS = frozenset(_words("of de da del di du la le van von y & and"))
_MAX_NAME_TOKENS = 4


# a common word with a contraction's ending ("How're", "It'd", "They'll", "What've", "Shouldn't"): never a name,
# whichever contractions the vocabulary lists; a name with an apostrophe ("O'Brien", "Sa'd") keeps its own
_CONTRACTION = re.compile(r"^(?P<stem>[a-z]+)(?:'(?:re|d|ll|ve|m)|n't)$")


def _is_contraction(lower: str) -> bool:
    match = _CONTRACTION.match(lower.replace("\u2019", "'"))
    return match is not None and match.group("stem") in COMMON_WORDS


def _is_sentence_initial(text: str, start: int) -> bool:
    index = start - 1
    while index >= 0 and text[index] in " \t":
        index -= 1
    return index < 0 or text[index] in _SENTENCE_OPENERS


def _proper_names(text: str, case: _CaseMode) -> list[tuple[int, str]]:
    """Capitalised words and runs of them ("Bruno", "Sweet Dreams", "Bank of America"), vocatives left out.

    Sentence-initial words count only when they are not common English words (or when a common word that
    does not usually open a sentence is followed by another capitalised word: "Sweet Dreams"). "I",
    weekday and month names, kinship words and chat acronyms are never names.
    """
    return [(start, name) for start, name in _name_runs(text, case) if not _is_vocative(text, start, name)]


def addressed_names(text: str) -> list[str]:
    """The names the speaker addresses someone by after a greeting or a comma ("Thanks, Mel!", "Hey Rosie!",
    "Lucky you, Rosie."), in order, without repeats: in a two-person chat, what the other speaker is called
    (their aliases). A capitalised word that opens its sentence ("Yup!", "Nah, ...", "Hopefully, ...",
    "Jon, look") is not counted: that is how interjections and sentence adverbs are written too; in LoCoMo's
    ten chats no real nickname only ever opened its sentence (docs/retrieval.md, "Aliases")."""
    names = [
        name
        for start, name in _name_runs(text, _case_mode(text))
        if _is_vocative(text, start, name)
        and not _opens_sentence(text, start)
        and _fold(name).lower() not in _GREETINGS  # "Ttyl, Bye!", "Sounds good, Thanks!": a sign-off, no one
    ]
    return list(dict.fromkeys(names))


# One word between a greeting and the end of its sentence is whom it greets, written in lower case or not
# ("thanks rosie!", "hey there", "bye guys"): chat is often typed without capitals.
_GREETED_WORD = re.compile(
    r"(?i)\b(?:hi|hey|hello|hiya|yo|thanks|thank\s+you|thx|ty|bye|goodbye|congrats|congratulations|sorry|morning|"
    r"night)\s+([^\W\d_]+)(?=\s*(?:[!?.,;:\u2026]|$))"
)


def vocatives_removed(text: str) -> str:
    """`text` without the names it addresses someone by, wherever they stand ("Thanks, Gina!" → "Thanks, !",
    "Wow Caroline, that looks amazing!" → "Wow , that looks amazing!", "thanks rosie!" → "thanks !"): what is
    left says whether the turn says anything (a greeting or a thank-you to a name is still small talk)."""
    runs = [(start, name) for start, name in _name_runs(text, _case_mode(text)) if _is_vocative(text, start, name)]
    for start, name in reversed(runs):
        text = text[:start] + text[start + len(name) :]
    return _GREETED_WORD.sub(lambda match: match.group(0)[: match.start(1) - match.start(0)], text)


def _opens_sentence(text: str, start: int) -> bool:
    before = text[:start].rstrip()
    return not before or before[-1] in ".!?"


# Ingest reads a turn's names twice: its entities (`_proper_names`, while extracting) and, once the batch is
# stored, whom it addresses (`addressed_names`, the speakers' aliases): the same text, so the runs are kept for
# a batch's worth of turns (MAX_BATCH_MESSAGES is 500). Immutable: both callers only read them.
@lru_cache(maxsize=1024)
def _name_runs(text: str, case: _CaseMode) -> tuple[tuple[int, str], ...]:
    if not case.is_informative:
        return ()
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
            or _is_contraction(lower)
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
    return tuple(names)


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


# A `name:` entity is a capitalised word the rules could not type. Inline, one message at a time, a word that
# opens its sentence ("Video games are my thing", "Very cool!") or a caption cannot be told from a name; the
# scope's whole text can: a name is capitalised where a sentence does not open, a common word is written in
# lower case. A word its scope writes in lower case at least NOT_A_NAME_MIN_LOWER times, and more than
# NOT_A_NAME_RATIO times as often as capitalised inside a sentence, is not a name (docs/extraction.md,
# "Entities"). "Nintendo" written twice in lower case by image captions and twice capitalised stays a name.
NOT_A_NAME_MIN_LOWER = 2
NOT_A_NAME_RATIO = 2
_WORD = re.compile(r"[^\W\d_]+(?:['\u2019][^\W\d_]+)?")


def case_uses(texts: Iterable[str], words: Collection[str]) -> dict[str, tuple[int, int]]:
    """For each of `words` (single words, lower case): how many times `texts` write it in lower case, and how
    many times capitalised where no sentence opens (a name's own place). Messages without informative case
    (all lower case, shouted) say nothing and are skipped."""
    wanted = frozenset(words)
    lower: dict[str, int] = dict.fromkeys(wanted, 0)
    capitalised: dict[str, int] = dict.fromkeys(wanted, 0)
    for text in texts:
        if not _case_mode(text).is_informative:
            continue
        for match in _WORD.finditer(text):
            word = match.group(0)
            folded = word.lower()
            if folded not in wanted:
                continue
            if word == folded:
                lower[folded] += 1
            elif word[0].isupper() and not _is_sentence_initial(text, match.start()):
                capitalised[folded] += 1
    return {word: (lower[word], capitalised[word]) for word in wanted}


def written_as_common_word(lower: int, capitalised: int) -> bool:
    """Is a word with these uses (`case_uses`) a common word rather than a name?"""
    return lower >= NOT_A_NAME_MIN_LOWER and lower > NOT_A_NAME_RATIO * capitalised
