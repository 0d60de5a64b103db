"""The other spellings of a word a query also searches (apps/memories/retrieval/spellings.py), pure."""

from __future__ import annotations

import pytest

from apps.memories.retrieval.spellings import SPELLINGS, spelling_forms


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("What did Mel do for her birthday?", [("birthday", "bday")]),
        ("her bday?", [("birthday", "bday")]),
        ("What is his favourite colour?", [("favorite", "favourite", "fave", "fav"), ("color", "colour")]),
        ("Who is Jo's bf?", [("boyfriend", "bf")]),
        ("WHAT DID SHE POST TMRW?", [("tomorrow", "tmrw", "tmr", "tmw", "tmrow")]),
        ("What did she paint?", []),
    ],
)
def test_spelling_forms_are_the_spellings_of_the_words_the_query_uses(query, expected):
    assert spelling_forms(query) == expected


def test_a_word_used_twice_is_one_group():
    assert spelling_forms("pic or pics?") == [("picture", "pic", "pics")]


@pytest.mark.parametrize("word", ["def", "doc", "vet", "bro", "min", "sec", "photo", "mother", "cuz"])
def test_words_that_are_mostly_another_word_or_a_synonym_are_left_out(word):
    assert word not in SPELLINGS


def test_every_spelling_belongs_to_one_group():
    groups = {group for group in SPELLINGS.values()}
    words = [word for group in groups for word in group]
    assert len(words) == len(set(words))
