"""The kinds of things a memory names, indexed beside its text (extraction/kinds.py, index_words.py)."""

from __future__ import annotations

import pytest

from apps.memories.extraction.index_words import with_index_words
from apps.memories.extraction.kinds import KINDS, kind_terms


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("I took my turtles to the beach", ["pet", "animal"]),
        ("Been practising the Clarinet every night", ["instrument", "music"]),  # any case
        ("We went kayaking, then had pizza", ["outdoor", "activity", "food", "dish"]),
        ("My daughter started pottery", ["family", "art", "hobby"]),  # in order, "hobby" once
        ("The meeting ran late again", []),
    ],
)
def test_an_instance_is_indexed_with_its_kind(text, words):
    assert kind_terms(text) == words


def test_words_common_in_technical_chats_are_no_instance():
    # a computer's keyboard, a language named python: BEAM's chats are full of them
    assert kind_terms("I bought a new keyboard and learnt Python") == []
    assert all("keyboard" not in words.split() and "python" not in words.split() for words in KINDS.values())


def test_kinds_follow_the_places_after_the_days_and_fit_the_column():
    terms = with_index_words("8 May 2023", "my dog and I drove to Boston", limit=120)
    assert terms == "8 May 2023 | city Massachusetts state USA America pet animal"
    assert with_index_words("8 May 2023", "nothing of either", limit=120) == "8 May 2023"
