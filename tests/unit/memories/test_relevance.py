from __future__ import annotations

import math

import pytest

from apps.memories.retrieval.relevance import Features, length_prior, min_max, similarities


def features(**overrides):
    base = {
        "cosine": 0.5,
        "context_cosine": 0.5,
        "bm25": 0.0,
        "context_bm25": 0.0,
        "session": "",
        "lexemes": 10,
        "is_question": False,
    }
    return Features(**{**base, **overrides})


def test_min_max():
    assert min_max([2.0, 4.0, 3.0]) == [0.0, 1.0, 0.5]
    assert min_max([1.0, 1.0]) == [0.0, 0.0]
    assert min_max([]) == []


@pytest.mark.parametrize(("lexemes", "expected"), [(0, 0.0), (40, 1.0), (400, 1.0), (3, math.log(4) / math.log(41))])
def test_length_prior(lexemes, expected):
    assert length_prior(lexemes) == pytest.approx(expected)


def test_similarity_is_one_for_the_best_and_zero_for_the_worst():
    result = similarities([features(cosine=0.9, bm25=5.0, session="s1"), features(cosine=0.1, bm25=0.0, session="s2")])
    assert result == [1.0, 0.0]


def test_exact_composite_for_three_candidates():
    items = [
        features(cosine=0.8, context_cosine=0.3, bm25=4.0, context_bm25=2.0, session="a", lexemes=40),
        features(cosine=0.6, context_cosine=0.7, bm25=0.0, context_bm25=4.0, session="a", lexemes=20, is_question=True),
        features(cosine=0.4, context_cosine=0.5, bm25=2.0, context_bm25=0.0, session="b", lexemes=40),
    ]
    # cos′ = [1, .5, 0], context_cos′ = [0, 1, .5], bm25′ = [1, 0, .5], ctx′ = [.5, 1, 0];
    # base = [1, .25, .25] → session′ = [1, 1, 0]; length = [1, ln 21 / ln 41, 1]
    # composite = [.7+0+.4+.25+1+1, .35+.4+0+.5+1+length−.2, 0+.2+.2+0+0+1] = [3.35, 2.05+length, 1.4]
    second = 2.05 + math.log(21) / math.log(41)
    assert similarities(items) == [1.0, round((second - 1.4) / (3.35 - 1.4), 6), 0.0]


def test_only_a_short_question_is_penalised():
    # "Can you help me plan it?" after a paragraph of facts is how people ask an assistant: not penalised
    short, long_ = (
        similarities([features(lexemes=lexemes, is_question=asks), features(lexemes=lexemes, session="b")])[0]
        for lexemes, asks in ((12, True), (60, True))
    )
    assert short < 1.0
    assert long_ == 1.0


def test_the_context_cosine_lifts_a_turn_that_only_its_context_makes_relevant():
    # equal own cosine ("They're a real support."), but one follows a turn about the family the query asks about
    after_family, elsewhere = similarities(
        [features(cosine=0.3, context_cosine=0.6, session="a"), features(cosine=0.3, context_cosine=0.3, session="b")]
    )
    assert after_family > elsewhere


def test_a_lone_or_tied_candidate_is_fully_similar():
    assert similarities([features()]) == [1.0]
    assert similarities([features(), features()]) == [1.0, 1.0]
    assert similarities([]) == []
