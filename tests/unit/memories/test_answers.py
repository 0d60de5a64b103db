"""A short reply is remembered with the question it answers (extraction/answers.py)."""

from __future__ import annotations

import pytest

from apps.memories.extraction.answers import MAX_QUESTION_CHARS, is_short_reply, question_asked, with_question


@pytest.mark.parametrize(
    "text",
    ["yes!!", "yesss", "Nope", "of course!", "sounds good", "ok 👍", "It went great!", "Tokyo!", "not yet", "I did"],
)
def test_a_few_words_or_an_answer_word_are_a_short_reply(text):
    assert is_short_reply(text)


@pytest.mark.parametrize(
    "text",
    [
        "lol",  # low content that answers nothing
        "hahaha",
        "👍",
        "???",
        "",
        "I went to the bakery for the interview and it went great",  # long enough to stand alone
    ],
)
def test_a_laugh_an_emoji_or_a_whole_sentence_is_not(text):
    assert not is_short_reply(text)


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
