"""Salience heuristic (memory-logic §1.5): entity +0.3, number/date +0.2, preference +0.4, rare term +0.1."""

from __future__ import annotations

import pytest

from apps.memories.extraction import salience
from apps.memories.extraction.salience import has_number_or_date, has_preference_signal, has_technical_term


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("lol", 0.0),
        ("I may go to the recommended restaurants", 0.0),
        ("I love sushi", 0.4),
        ("I prefer short answers", 0.4),
        ("Bruno ate my shoes again", 0.3),
        ("The meeting is at 5pm tomorrow", 0.2),
        ("I have an appointment on Tuesday", 0.2),
        ("call useState inside the render", 0.1),
        ("set max_tokens to 300", 0.3),
        ("We sell handmade candles", 0.3),
        ("Bruno ate my shoes on May 8", 0.5),
        ("We migrated to PostgreSQL last week", 0.6),
        ("My wife Priya starts at Microsoft on 3 March", 0.6),
        ("I hate waiting 20 minutes for Uber", 0.9),
        ("I always walk Bruno at 7am and I'd rather not skip it", 0.9),
        ("My favourite model is gpt4 and I deploy it on Kubernetes in 2025", 1.0),
    ],
    ids=[
        "low-content",
        "modal-may-and-common-long-words",
        "preference",
        "preference-prefer",
        "named-entity",
        "time",
        "weekday-and-common-long-word",
        "camel-case",
        "snake-case-and-number",
        "product-entity",
        "entity-and-date",
        "entity-date-and-rare-term",
        "entity-date-and-rare-proper-noun",
        "preference-number-entity",
        "habit-entity-number",
        "everything-capped-at-one",
    ],
)
def test_salience(text, expected):
    assert salience(text) == expected


@pytest.mark.parametrize(
    ("text", "has_entity", "expected"),
    [
        ("Bruno ate my shoes again", False, 0.0),
        ("the meeting went fine", True, 0.3),
        ("I love sushi", True, 0.7),
    ],
    ids=["override-off", "override-on", "override-adds-to-preference"],
)
def test_salience_with_known_entities(text, has_entity, expected):
    assert salience(text, has_entity=has_entity) == expected


def test_topic_entities_are_not_named_entities():
    # "I love sushi" yields topic:sushi, which is a common noun: only the preference counts
    assert salience("I love sushi") == 0.4


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("we met 3 times", True),
        ("see you in January", True),
        ("she arrives on 8 May", True),
        ("in May we launched", True),
        ("I may come", False),
        ("we march on", False),
        ("last week was rough", True),
        ("two kids", True),
        ("no one knows", False),
    ],
    ids=["digits", "month", "day-month", "in-may", "modal-may", "verb-march", "relative", "number-word", "one"],
)
def test_number_or_date(text, expected):
    assert has_number_or_date(text) is expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I prefer tea", True),
        ("I always run at dawn", True),
        ("I hate traffic", True),
        ("my favorite song", True),
        ("my favourite song", True),
        ("I don\u2019t like it", True),
        ("I'd rather walk", True),
        ("I'd like a refund", False),
        ("they like tea", False),
    ],
    ids=["prefer", "always", "hate", "favorite", "favourite", "curly-dont-like", "rather", "request", "third-person"],
)
def test_preference_signal(text, expected):
    assert has_preference_signal(text) is expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("we use pgvector", False),
        ("we use kubernetes", True),
        ("try gpt4", True),
        ("at 5pm", False),
        ("my 2nd try", False),
        ("useState hook", True),
        ("max_tokens", True),
        ("everything is wonderful", False),
        ("the recommendations", False),
    ],
    ids=[
        "short-rare-word",
        "long-rare-word",
        "letters-and-digits",
        "time",
        "ordinal",
        "camel-case",
        "snake-case",
        "common-long-words",
        "inflected-common-word",
    ],
)
def test_technical_term(text, expected):
    assert has_technical_term(text) is expected
