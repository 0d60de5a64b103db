"""The forms of irregular verbs a query also searches (apps/memories/retrieval/inflections.py), pure."""

from __future__ import annotations

import pytest

from apps.memories.retrieval.inflections import FORMS, verb_forms
from apps.memories.retrieval.term_groups import grouped_df


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("Where did Caroline go last weekend?", [("go", "went", "gone")]),
        ("What did he buy, and has he eaten?", [("buy", "bought"), ("eat", "ate", "eaten")]),
        ("When did Nate win his third tournament?", [("win", "won")]),
        ("Who went with her?", [("go", "went", "gone")]),
        ("What did she paint?", []),  # a regular verb: the stemmer joins "paint" and "painted" already
        ("Did Sam say anything about it?", [("say", "said")]),
        ("WHAT DID THEY BRING?", [("bring", "brought")]),
    ],
)
def test_verb_forms_are_the_forms_of_the_irregular_verbs_the_query_uses(query, expected):
    assert verb_forms(query) == expected


def test_a_verb_used_twice_is_one_group():
    assert verb_forms("Did she go, and where did she go?") == [("go", "went", "gone")]


@pytest.mark.parametrize("word", ["left", "saw", "found", "fell", "bit", "spring", "rose", "lay"])
def test_forms_that_are_mostly_another_word_are_left_out(word):
    # "turn left", "a saw", "a bit of a snag", "in spring": no verb form is searched for them
    assert word not in FORMS
    assert verb_forms(f"What about the {word}?") == []


def test_each_form_of_a_group_takes_the_frequency_of_the_whole_group():
    df = {"go": 10, "went": 30, "gone": 2, "lisbon": 1}
    grouped = grouped_df(df, [("go", "went", "gone")])
    assert grouped == {"go": 42, "went": 42, "gone": 42, "lisbon": 1}
    assert df["went"] == 30  # the scope's own counts are not changed


def test_a_form_the_scope_never_used_counts_zero_towards_its_group():
    assert grouped_df({"buy": 4, "bought": 0}, [("buy", "bought")]) == {"buy": 4, "bought": 4}
