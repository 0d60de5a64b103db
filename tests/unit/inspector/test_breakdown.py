"""The context preview's score breakdown is arithmetic over `explain`: tested without a database."""

from __future__ import annotations

import pytest

from apps.inspector.breakdown import score_breakdown
from apps.memories import scoring

SIGNALS = {
    "similarity": 0.8,
    "recency": 0.5,
    "importance": 0.7,
    "access_frequency": 0.2,
    "entity_match": 0.0,
    "speaker_match": 1.0,
    "time_match": 0.0,
}


def fitted_explain(*, relevance: float = 0.8, outside_window: bool = False) -> dict:
    return {
        "signals": {**SIGNALS, "similarity": relevance},
        "ranker": {
            "version": "2026-11-27-test",
            "features": {
                "bm25": 1.0,
                "short_question": 1.0,
                "session": 0.0,
                "importance": 0.5,
                "outside_window": 1.0 if outside_window else 0.0,
            },
            "contributions": {"bm25": 1.5, "short_question": -1.0, "session": 0.0, "importance": 0.5},
        },
    }


def test_fitted_terms_are_signed_largest_first_and_zero_ones_left_out():
    result = score_breakdown(
        explain=fitted_explain(),
        score=0.392,
        outdated=False,
        weights=scoring.CONTACT_WEIGHTS,
        fitted_weights={"bm25": 1.5, "short_question": -1.0, "importance": 1.0},
    )
    assert result.is_fitted and result.version == "2026-11-27-test"
    assert [(term.name, term.contribution, term.weight, term.share) for term in result.terms] == [
        ("bm25", 1.5, 1.5, 50),
        ("importance", 0.5, 1.0, 17),
        ("short_question", -1.0, -1.0, 33),
    ]
    assert [term.name for term in result.negative_terms] == ["short_question"]
    assert result.linear_score == 1.0 and result.relevance == 0.8
    # relevance × (similarity weight + recency × weight + access × weight) = 0.8 × (0.35 + 0.125 + 0.02)
    assert result.usage is not None and result.usage.total == pytest.approx(0.495)
    assert result.composed == pytest.approx(0.396) and result.factors == ()


def test_fitted_weights_of_another_version_are_not_printed():
    result = score_breakdown(explain=fitted_explain(), score=0.396, outdated=False, weights=scoring.CONTACT_WEIGHTS)
    assert [term.weight for term in result.terms] == [None, None, None]


@pytest.mark.parametrize(
    ("outdated", "outside_window", "score", "factors", "composed"),
    [
        (True, False, 0.198, [("outdated", 0.5)], 0.198),
        (False, True, 0.2376, [("outside the query's time window", 0.6)], 0.2376),
        (True, True, 0.1188, [("outdated", 0.5), ("outside the query's time window", 0.6)], 0.1188),
    ],
    ids=["outdated", "outside-window", "both"],
)
def test_factors_after_the_sum_are_shown_and_the_window_discount_read_back(
    outdated, outside_window, score, factors, composed
):
    result = score_breakdown(
        explain=fitted_explain(outside_window=outside_window),
        score=score,
        outdated=outdated,
        weights=scoring.CONTACT_WEIGHTS,
    )
    assert [(factor.name, factor.value) for factor in result.factors] == factors
    assert result.composed == pytest.approx(composed)


def test_a_window_discount_of_a_zero_score_is_shown_without_a_value():
    result = score_breakdown(
        explain=fitted_explain(relevance=0.0, outside_window=True),
        score=0.0,
        outdated=False,
        weights=scoring.CONTACT_WEIGHTS,
    )
    assert [(factor.name, factor.value) for factor in result.factors] == [("outside the query's time window", None)]
    assert result.composed == 0.0


def test_hand_terms_are_signal_times_weight_with_the_usage_signals_in_proportion_to_similarity():
    explain = {"signals": SIGNALS, "ranker": {"version": "hand", "features": {}, "contributions": {}}}
    score = scoring.retrieval_score(scoring.Signals(**SIGNALS), scoring.CONTACT_WEIGHTS)
    result = score_breakdown(explain=explain, score=score, outdated=False, weights=scoring.CONTACT_WEIGHTS)
    assert not result.is_fitted
    assert [(term.name, term.contribution, term.similarity) for term in result.terms] == [
        ("similarity", 0.28, None),
        ("recency", 0.1, 0.8),
        ("importance", 0.14, None),
        ("access_frequency", 0.016, 0.8),
        ("entity_match", 0.0, None),
        ("speaker_match", 0.08, 0.8),
        ("time_match", 0.0, None),
    ]
    assert result.composed == pytest.approx(score) and result.factors == ()
