"""A short reply is remembered with the question it answers.

In a real chat a question is often answered in a few words: "How did the interview go?" / "It went great!",
"Are you still coming on Saturday?" / "yes!!". Stored alone, "Emi: It went great!" names nothing a later
question can meet, and "yes!!" was not stored at all (it is low content, `cleaning.is_low_content`): the
answer was lost to retrieval and to the model reading the context. A reply of at most MAX_REPLY_WORDS words
that comes right after a question of the other speaker is stored as "Emi: It went great! (answering Elise:
"How did the interview go?")" — a low-content one only when it is an answer ("yes", "nope", "of course",
"sounds good"; not "lol"). Ingest finds the turn before (apps/memories/ingest/services.py).

Neither development set has such replies (LoCoMo: 3 of 5,882 turns, BEAM none): what this changes there is
measured as no change; it is aimed at chats typed as people type (docs/extraction.md).

Pure (no Django).
"""

from __future__ import annotations

import re

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


def with_question(reply: str, *, asker: str, question: str) -> str:
    """The reply's memory text: 'Emi: yes!! (answering Elise: "Are you coming on Saturday?")'."""
    by = f"{asker.strip()}: " if asker.strip() else ""
    return f'{reply.strip()} (answering {by}"{question}")'
