"""A short reply is remembered with the question it answers.

In a real chat a question is often answered in a few words: "How did the interview go?" / "It went great!",
"Are you still coming on Saturday?" / "yes!!". Stored alone, "Emi: It went great!" names nothing a later
question can meet, and "yes!!" was not stored at all (it is low content, `cleaning.is_low_content`): the
answer was lost to retrieval and to the model reading the context. A reply of at most MAX_REPLY_WORDS words
that comes right after a question of the other speaker is stored as "Emi: It went great! (answering Elise:
"How did the interview go?")" — a low-content one only when it is an answer ("yes", "nope", "of course",
"sounds good"; not "lol"). Ingest finds the turn before (apps/memories/ingest/services.py).

A plain yes or no to a yes/no question about the one replying also states something: "Are you vegetarian?" /
"yep!" says "I am vegetarian.", "Do you like sushi?" / "nah" says "I don't like sushi." `statement_answered`
writes that first-person sentence, and ingest runs the rules over it as if the user had typed it, so the
answer becomes the fact or preference it is ("Jo is vegetarian", "Jo doesn't like sushi"), with its slot.

Neither development set has such replies (LoCoMo: 3 of 5,882 turns, BEAM none): what this changes there is
measured as no change; it is aimed at chats typed as people type (docs/extraction.md).

Pure (no Django).
"""

from __future__ import annotations

import re

from apps.memories.extraction.words import content_words

MAX_REPLY_WORDS = 4
MAX_QUESTION_CHARS = 200

_WORD = re.compile(r"[^\W_]+(?:['\u2019][^\W_]+)*")
_REPEATS = re.compile(r"(.)\1{2,}")  # "yesss", "noooo": three or more of a letter read as one
# what a low-content reply starts with when it answers: agreement, refusal, a hedge
_ANSWER_TEXT = """
    yes yeah yea yeh ya yah yep yup yas ye sure ok okay k kk alright aight definitely absolutely totally
    exactly correct right true indeed certainly course no nope nah never maybe perhaps probably possibly
    sounds same agreed deal obviously naturally yess noo
"""
_ANSWER_WORDS = frozenset(_ANSWER_TEXT.split())
_ANSWER_PHRASES = frozenset({"of course", "for sure", "me too", "no way", "not really", "i guess", "i think"})
# a question: a sentence that ends with "?" (or "?!"), the last such in the turn
_QUESTION = re.compile(r"[^.!?\n]*\?+[!?]*", re.UNICODE)


def is_short_reply(text: str, *, stored: bool) -> bool:
    """A reply of 1 to MAX_REPLY_WORDS words. `stored`: extraction made an episode of it; one it did not
    store (low content: "yes!!", "lol", "Thanks, Dave!") counts only when it answers — it starts with an
    answer word or phrase ("yes", "nope", "of course", "sounds good"), not a laugh, a thanks or an emoji."""
    words = _WORD.findall(text.lower())
    if not 1 <= len(words) <= MAX_REPLY_WORDS:
        return False
    if stored:
        return True
    first = _REPEATS.sub(r"\1", words[0].replace("\u2019", "'"))
    return first in _ANSWER_WORDS or words[0] in _ANSWER_WORDS or " ".join(words[:2]) in _ANSWER_PHRASES


def question_asked(text: str) -> str:
    """The last question of a turn ("Nice! How did the interview go?" → "How did the interview go?"), at
    most MAX_QUESTION_CHARS (cut at a word); "" when the turn asks nothing."""
    found = [match.group(0).strip() for match in _QUESTION.finditer(text) if _WORD.search(match.group(0))]
    if not found:
        return ""
    question = found[-1]
    if len(question) > MAX_QUESTION_CHARS:
        question = "…" + question[-MAX_QUESTION_CHARS:].split(" ", 1)[-1]
    return question


# a yes/no question to the one replying: its verb, and the first-person sentence a yes or a no makes of it
_YES_NO_VERBS = {
    "do": ("I {}", "I don't {}"),
    "are": ("I am {}", "I am not {}"),
    "have": ("I have {}", "I haven't {}"),
    "can": ("I can {}", "I can't {}"),
    "were": ("I was {}", "I wasn't {}"),
    "will": ("I will {}", "I won't {}"),
}
_YES_NO_QUESTION = re.compile(r"(do|are|have|can|were|will)\s+you\s+(.+?)\s*\?+[!?]*", re.IGNORECASE)
# what may open the question before its verb: "So, do you…", "Oh and are you…", "Mia, have you…"
_OPENER = re.compile(
    r"^(?:(?:so|and|but|oh|ohh|hey|wait|btw|also|ok|okay|well|then|anyway|hmm|um|and so)\b[\s,]*"
    r"|[^\W\d_]+(?:\s[^\W\d_]+)?,\s*)*",
    re.IGNORECASE,
)
# the asker's side (whom "me" or "we" means flips with the speaker), a choice (a yes to "tea or coffee?" picks
# nothing), or a word that points at what was said before ("Do you have any recipes for
# that?" / "Yes!" states nothing on its own), or a second "you" ("books you love": whom it names is lost)
_NOT_ANSWERABLE = re.compile(
    r"\b(?:i|me|my|mine|myself|we|us|our|ours|or|it|that|this|these|those|them|there|you|yourself)\b", re.IGNORECASE
)
_ANY = re.compile(r"\bany\b", re.IGNORECASE)  # "Do you have any tips?" / "Yes": how many, of what, is not said
_SECOND_PERSON = {"your": "my", "yours": "mine"}
_SECOND_PERSON_WORD = re.compile(r"\b(?:your|yours)\b", re.IGNORECASE)
_YES_TEXT = """
    yes yeah yea yeh ya yah yep yup yas ye sure definitely absolutely totally exactly correct right true indeed
    certainly obviously naturally yess
"""
_YES_WORDS = frozenset(_YES_TEXT.split())
_NO_WORDS = frozenset({"no", "nope", "nah", "never", "noo"})
# the longest first: "of course not" is a no
_ANSWER_OPENINGS = (
    (("of", "course", "not"), -1),
    (("not", "really"), -1),
    (("no", "way"), -1),
    (("of", "course"), 1),
    (("for", "sure"), 1),
)
MAX_ANSWERED_WORDS = 12


MAX_ASKED_WORDS = 4
# a question put to the one replying says "you" ("Is that your third one?", "How do you feel about it?")
_ADDRESSED = re.compile(r"\b(?:you|your|yours|yourself|you're|you've|you'll|you'd|u|ur)\b", re.IGNORECASE)
_POSSESSIVE = re.compile(r"['\u2019]s$")


def asked_words(question: str, reply: str) -> list[str]:
    """The words of a question put to the one replying that the reply does not say itself, the first
    MAX_ASKED_WORDS in order: "Is that your third one?" / "Yep! I chose to write about this because it's
    personal" → ["third"]; "How do you feel about the opening night?" / "I'm excited!" → ["feel", "opening",
    "night"]. A reply is about what it was asked; these words index it (searched, not embedded) so a later
    question in the asker's words finds it. None for a question that does not say "you" (one about a third
    thing, "Are turtles hard to keep?", is as often answered by the other speaker's next turn as by this one:
    measured in docs/benchmarks.md, Session 37) and none of the function words."""
    if not _ADDRESSED.search(question):
        return []
    said = content_words(reply)
    found: list[str] = []
    for word in _WORD.findall(question.lower().replace("\u2019", "'")):
        word = _POSSESSIVE.sub("", word)
        meant = content_words(word) - {"not"}
        if meant and not meant & said and word not in found:
            found.append(word)
    return found[:MAX_ASKED_WORDS]


def answer_polarity(reply: str) -> int:
    """1 when a reply is a plain yes ("yep!", "of course", "Yes, totally"), -1 a plain no ("nope", "not
    really"), 0 anything else: a hedge ("maybe", "I think so"), both ("yes and no"), no answer word first."""
    words = [_REPEATS.sub(r"\1", word.replace("\u2019", "'")) for word in _WORD.findall(reply.lower())]
    opening = next(
        ((len(phrase), sign) for phrase, sign in _ANSWER_OPENINGS if tuple(words[: len(phrase)]) == phrase), None
    )
    if opening is None and words and (words[0] in _YES_WORDS or words[0] in _NO_WORDS):
        opening = (1, 1 if words[0] in _YES_WORDS else -1)
    if opening is None:
        return 0
    length, polarity = opening
    contrary = _NO_WORDS if polarity == 1 else _YES_WORDS
    return 0 if contrary.intersection(words[length:]) else polarity


def statement_answered(question: str, reply: str) -> str:
    """The first-person sentence a plain yes or no to a yes/no question about the one replying states:
    "Are you vegetarian?" + "yep!" → "I am vegetarian.", "Do you like your job?" + "nope" → "I don't like
    my job."; "" when the reply is not a plain yes or no, or the question is not of that kind (it asks about
    the asker or "us", offers a choice, points at what was said before ("for that?", "been there?"), says
    "you" twice, is a yes to "any …?", or is longer than MAX_ANSWERED_WORDS words)."""
    polarity = answer_polarity(reply)
    if not polarity:
        return ""
    match = _YES_NO_QUESTION.fullmatch(_OPENER.sub("", question.strip(), count=1))
    if match is None:
        return ""
    verb, asked = match.group(1).lower(), match.group(2).strip().rstrip(",")
    if _NOT_ANSWERABLE.search(asked) or len(_WORD.findall(asked)) > MAX_ANSWERED_WORDS:
        return ""
    if polarity == 1 and _ANY.search(asked):
        return ""  # a no to it is whole: "I don't have any pets."
    asked = _SECOND_PERSON_WORD.sub(lambda word: _SECOND_PERSON[word.group(0).lower()], asked)
    yes, no = _YES_NO_VERBS[verb]
    return (yes if polarity == 1 else no).format(asked) + "."


def with_question(reply: str, *, asker: str, question: str) -> str:
    """The reply's memory text: 'Emi: yes!! (answering Elise: "Are you coming on Saturday?")'."""
    by = f"{asker.strip()}: " if asker.strip() else ""
    return f'{reply.strip()} (answering {by}"{question}")'
