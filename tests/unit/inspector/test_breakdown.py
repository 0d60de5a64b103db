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


def fitted_explain(*, relevance: float = 0.8, window_factor: float = 1.0) -> dict:
    return {
        "signals": {**SIGNALS, "similarity": relevance},
        "time_window_factor": window_factor,
        "ranker": {
            "version": "2026-11-27-test",
            "features": {
                "bm25": 1.0,
                "short_question": 1.0,
                "session": 0.0,
                "importance": 0.5,
                "outside_window": 1.0 if window_factor != 1.0 else 0.0,
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
    ("outdated", "window_factor", "factors", "composed"),
    [
        (True, 1.0, [("outdated", 0.5)], 0.198),
        (False, 0.85, [("outside the query's time window", 0.85)], 0.3366),
        (True, 0.85, [("outdated", 0.5), ("outside the query's time window", 0.85)], 0.1683),
    ],
    ids=["outdated", "outside-window", "both"],
)
def test_factors_after_the_sum_are_shown_with_the_window_factor_the_search_applied(
    outdated, window_factor, factors, composed
):
    """0.8 × 0.495 = 0.396 before the factors; the window's is explain.time_window_factor, whatever the score."""
    result = score_breakdown(
        explain=fitted_explain(window_factor=window_factor),
        score=composed,
        outdated=outdated,
        weights=scoring.CONTACT_WEIGHTS,
    )
    assert [(factor.name, factor.value) for factor in result.factors] == factors
    assert result.composed == pytest.approx(composed)


def test_the_window_factor_is_read_from_explain_not_from_the_score():
    """Read back as score ÷ the score before it (as before), a line was off in the third decimal when the
    explained signals were rounded, and unknown for a score of 0."""
    for score in (0.3, 0.0):
        result = score_breakdown(
            explain=fitted_explain(relevance=0.8, window_factor=0.85),
            score=score,
            outdated=False,
            weights=scoring.CONTACT_WEIGHTS,
        )
        assert [(factor.name, factor.value) for factor in result.factors] == [("outside the query's time window", 0.85)]
        assert result.composed == pytest.approx(0.3366)
    result = score_breakdown(  # an explain without the key (older): no factor
        explain={key: value for key, value in fitted_explain().items() if key != "time_window_factor"},
        score=0.396,
        outdated=False,
        weights=scoring.CONTACT_WEIGHTS,
    )
    assert result.factors == ()


def test_a_long_message_chunk_shows_its_share_after_the_window_factor():
    """0.8 × 0.495 = 0.396, × 0.85 outside the window, × 0.631 for one of ten chunks (explain.chunk_factor)."""
    result = score_breakdown(
        explain={**fitted_explain(window_factor=0.85), "chunk_factor": 0.631},
        score=0.2124,
        outdated=False,
        weights=scoring.CONTACT_WEIGHTS,
    )
    assert [(factor.name, factor.value) for factor in result.factors] == [
        ("outside the query's time window", 0.85),
        ("one of a long message's chunks", 0.631),
    ]
    assert result.composed == pytest.approx(0.396 * 0.85 * 0.631, abs=1e-4)


def test_a_pattern_shows_its_factor():
    result = score_breakdown(
        explain={**fitted_explain(), "pattern_factor": 0.5},
        score=0.198,
        outdated=False,
        weights=scoring.CONTACT_WEIGHTS,
    )
    assert [(factor.name, factor.value) for factor in result.factors] == [("a pattern: its episodes answer first", 0.5)]
    assert result.composed == pytest.approx(0.396 * 0.5, abs=1e-4)


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


def test_an_instruction_whose_condition_is_met_shows_what_raised_it():
    """0.8 × 0.495 = 0.396 by the formula; the search raised it to the query's best, 0.99 (×2.5)."""
    condition = {"text": "recipes", "cosine": 0.62, "met": True}
    result = score_breakdown(
        explain={**fitted_explain(), "condition": condition},
        score=0.99,
        outdated=False,
        weights=scoring.CONTACT_WEIGHTS,
    )
    assert [(factor.name, factor.value) for factor in result.factors] == [("its condition (recipes) is met", 2.5)]
    assert result.composed == pytest.approx(0.99)
    unmet = score_breakdown(
        explain={**fitted_explain(), "condition": {**condition, "met": False}},
        score=0.396,
        outdated=False,
        weights=scoring.CONTACT_WEIGHTS,
    )
    assert unmet.factors == ()


def test_a_preference_that_fits_a_request_for_advice_shows_what_raised_it():
    result = score_breakdown(
        explain={**fitted_explain(), "advice": {"cosine": 0.52, "fits": True}},
        score=0.99,
        outdated=False,
        weights=scoring.CONTACT_WEIGHTS,
    )
    assert [(factor.name, factor.value) for factor in result.factors] == [("it fits the request for advice", 2.5)]
    assert result.composed == pytest.approx(0.99)


def test_an_episode_that_follows_a_higher_turn_shows_what_it_gained():
    """0.396 by the formula, plus 0.0396 for following a higher turn (signals/follow_up.py): × 1.1."""
    result = score_breakdown(
        explain={**fitted_explain(), "follow_up": 0.0396},
        score=0.4356,
        outdated=False,
        weights=scoring.CONTACT_WEIGHTS,
    )
    assert [(factor.name, factor.value) for factor in result.factors] == [("it follows a turn that ranks higher", 1.1)]
    assert result.composed == pytest.approx(0.4356)
    assert (
        score_breakdown(
            explain={**fitted_explain(), "follow_up": 0.0}, score=0.396, outdated=False, weights=scoring.CONTACT_WEIGHTS
        ).factors
        == ()
    )
