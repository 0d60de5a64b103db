"""A short reply is remembered with the question it answers (extraction/answers.py)."""

from __future__ import annotations

import pytest

from apps.memories.extraction.answers import MAX_QUESTION_CHARS, is_short_reply, question_asked, with_question


@pytest.mark.parametrize("text", ["It went great!", "Tokyo!", "not yet", "I did", "Totally! Bye Nate!"])
def test_a_few_words_extraction_stored_are_a_short_reply(text):
    assert is_short_reply(text, stored=True)


@pytest.mark.parametrize("text", ["yes!!", "yesss", "Nope", "of course!", "sounds good", "ok 👍", "Definitely 😂"])
def test_a_reply_extraction_did_not_store_counts_when_it_answers(text):
    assert is_short_reply(text, stored=False)


@pytest.mark.parametrize(
    "text",
    [
        "lol",  # low content that answers nothing
        "hahaha",
        "Thanks, Dave!",  # a thanks to a name (a burst's first message, before the answer)
        "👍",
        "???",
        "",
    ],
)
def test_a_laugh_a_thanks_or_an_emoji_is_not(text):
    assert not is_short_reply(text, stored=False)


def test_a_whole_sentence_is_not_a_short_reply():
    assert not is_short_reply("I went to the bakery for the interview and it went great", stored=True)


def test_the_last_question_of_the_turn_is_the_one_answered():
    assert question_asked("Omg I need pictures. How did the job interview go?") == "How did the job interview go?"
    assert question_asked("Are you coming?! I hope so. Did you book the train??") == "Did you book the train??"
    assert question_asked("Are you coming on Saturday?!") == "Are you coming on Saturday?!"
    assert question_asked("I adopted a kitten.") == ""
    assert question_asked("?") == ""  # no word: nothing asked
    long = "So " + "really " * 60 + "did you go?"
    cut = question_asked(long)
    assert cut.startswith("…") and cut.endswith("did you go?") and len(cut) <= MAX_QUESTION_CHARS + 1


def test_the_reply_quotes_the_question_and_who_asked_it():
    assert with_question("Jo: yes!!", asker="Mia", question="Coming?") == 'Jo: yes!! (answering Mia: "Coming?")'
    assert with_question("yes", asker="", question="Coming?") == 'yes (answering "Coming?")'
