"""A short reply is remembered with the question it answers (extraction/answers.py)."""

from __future__ import annotations

import pytest

from apps.memories.extraction.answers import (
    MAX_QUESTION_CHARS,
    answer_polarity,
    asked_words,
    is_short_reply,
    question_asked,
    statement_answered,
    with_question,
)
from apps.memories.extraction.index_words import asked_in, with_index_words


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


@pytest.mark.parametrize(
    ("reply", "polarity"),
    [
        ("yes", 1),
        ("Yesss!!", 1),
        ("of course", 1),
        ("Sure thing", 1),
        ("for sure!", 1),
        ("nope", -1),
        ("Not really", -1),
        ("of course not", -1),  # the longer opening wins
        ("No way!", -1),
        ("yes and no", 0),  # both
        ("maybe", 0),  # a hedge
        ("I think so", 0),
        ("lol", 0),
        ("", 0),
    ],
)
def test_a_plain_yes_or_no_is_told_from_a_hedge(reply, polarity):
    assert answer_polarity(reply) == polarity


@pytest.mark.parametrize(
    ("question", "reply", "statement"),
    [
        ("Are you vegetarian?", "yep!", "I am vegetarian."),
        ("Do you like sushi?", "nah", "I don't like sushi."),
        ("So, do you have a dog?", "Yes, two", "I have a dog."),  # an opener before the verb
        ("Mia, have you been to Paris?", "of course", "I have been to Paris."),  # a name addressed
        ("Oh and can you swim??", "Not really", "I can't swim."),
        ("Do you enjoy hiking with your dad?", "Absolutely!", "I enjoy hiking with my dad."),  # your → my
        ("Do you have any pets?", "nope", "I don't have any pets."),  # a no to "any" is whole
    ],
)
def test_a_yes_or_no_to_a_question_about_the_one_replying_is_what_they_would_have_said(question, reply, statement):
    assert statement_answered(question, reply) == statement


@pytest.mark.parametrize(
    ("question", "reply"),
    [
        ("Are you coming?", "maybe"),  # not a plain answer
        ("Do you like tea or coffee?", "yes"),  # a choice: a yes picks nothing
        ("Do you miss me?", "yes"),  # about the asker: whom "me" means flips with the speaker
        ("Are we still on for Friday?", "yes"),
        ("How are you?", "yes"),  # not a yes/no question
        ("Is it raining?", "yes"),  # not about the one replying
        ("Did you go?", "yes"),  # "I did go." tells the rules nothing
        ("Do you?", "yes"),  # nothing asked
        ("Do you " + "really " * 12 + "like sushi?", "yes"),  # too long to restate
        # seen on LoCoMo sent as bursts: "Sam has any recipes for that", "Tim has any favorite books them love…"
        ("Do you have any recipes for that?", "Yes!"),  # points at what was said before
        ("Have you been there?", "yes"),
        ("Do you have any favorite books you love writing about?", "Yes"),  # a second "you"
        ("Do you have any pets?", "yes"),  # how many, of what: not said
    ],
)
def test_other_questions_and_replies_state_nothing(question, reply):
    assert statement_answered(question, reply) == ""


@pytest.mark.parametrize(
    ("question", "reply", "expected"),
    [
        (
            "Is that your third screenplay?",
            "Yep! I chose to write about this because it's personal.",
            ["third", "screenplay"],
        ),
        ("How do you feel about the opening night?", "Thanks, Gina! I'm excited!", ["feel", "opening", "night"]),
        (
            "What did you think of Nate's coconut milk ice cream?",
            "Super good! Rich and creamy",
            ["nate", "coconut", "milk", "ice"],
        ),
        ("Do you have any pets?", "Yes, two dogs and a pet turtle", []),  # the reply says "pet" itself
        ("Are turtles hard to take care of?", "No, not really. Just keep their tank clean.", []),  # not put to "you"
        ("", "Anything at all", []),
    ],
)
def test_a_reply_is_indexed_with_the_words_of_the_question_put_to_it_that_it_does_not_say(question, reply, expected):
    assert asked_words(question, reply) == expected


def test_the_asked_words_a_client_could_have_set_are_read_only_when_they_are_words():
    assert asked_in({"asked": ["third", "screenplay"]}) == ("third", "screenplay")
    assert asked_in({"asked": "third"}) == ()
    assert asked_in({"asked": [5, "ok", "x" * 41, "line\nbreak"]}) == ("ok",)
    assert asked_in({}) == ()


def test_asked_words_come_after_places_and_kinds_in_the_index_only_part():
    terms = with_index_words("8 May 2023", "my dog loved the beach in Tampa", limit=120, metadata={"asked": ["third"]})
    assert terms == "8 May 2023 | city Florida state USA America pet animal third"
    assert (
        with_index_words("8 May 2023", "plain", limit=120, metadata={"chunks": 3, "asked": ["third"]}) == "8 May 2023"
    )
