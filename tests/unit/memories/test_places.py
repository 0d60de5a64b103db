"""The places a memory names, indexed with what contains them (extraction/places.py, index_words.py)."""

from __future__ import annotations

import pytest

from apps.core.embeddings import memory_text
from apps.memories.extraction.index_words import index_only_words, with_index_only, with_index_words
from apps.memories.extraction.places import place_terms


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("I took my turtles to the beach in Tampa yesterday!", ["city", "Florida", "state", "USA", "America"]),
        ("Took a short trip last week to Rome.", ["city", "Italy", "Europe", "European"]),
        (
            "I went to a Harry Potter conference in the UK",
            ["country", "UK", "Britain", "England", "Europe", "European"],
        ),
        ("that trip to England a few years ago", ["country", "UK", "Britain", "England", "Europe", "European"]),
        ("We moved to Georgia", ["state", "USA", "America"]),  # a state of that name wins over the country
        ("check out this pic from my trip to New York City!", ["city", "New York", "state", "USA", "America"]),
        ("a trip to New York", ["city", "New York", "state", "USA", "America"]),  # the city is meant
        ("omg im in tokyo rn", ["city", "Japan", "Asia", "Asian"]),  # chat typed in lower case
        ("a pup from a shelter in Stamford", ["city", "Connecticut", "state", "USA", "America"]),
    ],
)
def test_a_place_after_a_preposition_is_indexed_with_its_kind_and_what_contains_it(text, words):
    assert place_terms(text) == words


def test_two_places_give_their_words_in_order_without_repeats():
    assert place_terms("from Paris to Lyon") == ["city", "France", "Europe", "European"]
    assert place_terms("from paris to london") == [
        *["city", "France", "Europe", "European"],
        *["UK", "Britain", "England"],
    ]


@pytest.mark.parametrize(
    "text",
    [
        "Charlotte and I went out",  # a name, not after a preposition
        "Nice to meet you",
        "positive feedback from Montserrat Media Hub.",  # a place's name inside a longer name
        "the story of George Bailey",
        "a book club at The Reading Room",
        "resources from the ABA",  # an acronym is no city
        "going to reading festival",  # in lower case: only countries, states and very large cities
        "back to mobile",
        "I love Boston",  # no preposition
    ],
)
def test_a_name_that_is_not_a_place_there_is_not_indexed(text):
    assert place_terms(text) == []


def test_place_words_follow_the_days_and_are_searched_not_embedded():
    terms = with_index_words("8 May 2023", "a beach in Tampa", limit=120)
    assert terms == "8 May 2023 | city Florida state USA America"
    assert index_only_words(terms) == ["city", "Florida", "state", "USA", "America"]
    # the embedding reads the days only: adding places changes no vector
    assert memory_text(content="Nate: a beach in Tampa", index_terms=terms) == "(8 May 2023) Nate: a beach in Tampa"
    assert with_index_words("", "a beach in Tampa", limit=120) == "| city Florida state USA America"
    assert memory_text(content="x", index_terms="| city Florida") == "x"


def test_the_places_are_the_texts_own_and_fit_the_column():
    # an edited text: its old places go, its days stay
    assert with_index_words("8 May 2023 | city Florida state", "nothing to see", limit=120) == "8 May 2023"
    # whole words, within the limit
    cut = with_index_words("8 May 2023", "in Rome, in Paris, in London, in Tokyo", limit=50)
    assert len(cut) <= 50 and cut.startswith("8 May 2023 | city Italy")
    assert cut.split()[-1] in {"city", "Italy", "Europe", "European", "France", "UK", "Britain", "England"}
    assert with_index_only("8 May 2023", [], limit=120) == "8 May 2023"
