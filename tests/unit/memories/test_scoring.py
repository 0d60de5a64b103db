from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest

from apps.memories import scoring

NOW = datetime(2026, 6, 1, tzinfo=UTC)


def test_contact_weights_exact():
    signals = scoring.Signals(similarity=0.8, recency=0.5, importance=0.7, access_frequency=0.25, entity_match=1.0)
    # 0.35×0.8 + 0.8×(0.25×0.5 + 0.10×0.25) + 0.20×0.7 + 0.10×1 = 0.28 + 0.8×0.15 + 0.14 + 0.1
    assert scoring.retrieval_score(signals, scoring.CONTACT_WEIGHTS) == 0.64


def test_tenant_weights_exact():
    signals = scoring.Signals(similarity=0.8, recency=0.5, importance=0.7, access_frequency=0.25, entity_match=1.0)
    # 0.40×0.8 + 0.8×(0.25×0.5 + 0.10×0.25) + 0.20×0.7 + 0.05×1 = 0.32 + 0.8×0.15 + 0.14 + 0.05
    assert scoring.retrieval_score(signals, scoring.TENANT_WEIGHTS) == 0.63


def test_the_best_candidate_scores_the_specs_weighted_sum():
    signals = scoring.Signals(similarity=1.0, recency=0.5, importance=0.7, access_frequency=0.25, entity_match=1.0)
    # 0.35 + 0.25×0.5 + 0.20×0.7 + 0.10×0.25 + 0.10 = 0.35 + 0.125 + 0.14 + 0.025 + 0.1
    assert scoring.retrieval_score(signals, scoring.CONTACT_WEIGHTS) == 0.74


def test_usage_cannot_lift_an_irrelevant_memory_above_a_relevant_one():
    """Accesses come from retrieval itself: a memory earlier questions returned (used today, 20 times) must
    not outrank the one this question is about (never used, a year old)."""
    relevant = scoring.Signals(similarity=1.0, recency=0.0, importance=0.5, access_frequency=0.0, entity_match=0.0)
    popular = scoring.Signals(similarity=0.2, recency=1.0, importance=0.5, access_frequency=1.0, entity_match=0.0)
    weights = scoring.CONTACT_WEIGHTS
    assert scoring.retrieval_score(relevant, weights) > scoring.retrieval_score(popular, weights)
    # usage still orders memories equally relevant to the query
    used = scoring.Signals(similarity=1.0, recency=1.0, importance=0.5, access_frequency=1.0, entity_match=0.0)
    assert scoring.retrieval_score(used, weights) > scoring.retrieval_score(relevant, weights)


@pytest.mark.parametrize(
    ("days", "expected"), [(0, 1.0), (73, 0.8), (365, 0.0), (500, 0.0)], ids=["today", "73d", "a-year", "older"]
)
def test_recency(days, expected):
    assert scoring.recency(days_since_access=days) == pytest.approx(expected)


@pytest.mark.parametrize(("count", "expected"), [(0, 0.0), (5, 0.25), (20, 1.0), (100, 1.0)])
def test_access_frequency(count, expected):
    assert scoring.access_frequency(access_count=count) == expected


def test_weights_override_per_tenant_keeps_the_rest():
    weights = scoring.Weights.from_dict({"similarity": 0.5, "bogus": 9}, fallback=scoring.CONTACT_WEIGHTS)
    assert weights == scoring.Weights(0.5, 0.25, 0.20, 0.10, 0.10, speaker_match=0.10, time_match=0.30)


def test_importance_formula():
    raw, blended = scoring.importance_score(novelty=1.0, salience=0.3, type_default=0.7)
    assert (raw, blended) == (0.72, 0.71)
    raw, blended = scoring.importance_score(novelty=0.1, salience=0.0, type_default=0.5)
    assert (raw, blended) == (0.06, 0.28)  # below the 0.3 store threshold


@pytest.mark.parametrize(
    ("idle_days", "memory_type", "base", "rate", "expected"),
    [
        (7, "episode", 0.5, 0.008, 0.5),  # still in the 7-day grace
        (17, "episode", 0.5, 0.008, 0.42),  # 10 decaying days
        (100, "episode", 0.5, 0.008, 0.0),
        (17, "fact", 0.7, 0.003, 0.67),
        (400, "fact", 0.7, 0.003, 0.2),  # facts never fall below the floor
        (400, "fact", 0.15, 0.003, 0.15),  # ...nor above their own base
        (400, "preference", 0.8, 0.005, 0.2),
    ],
    ids=["grace", "episode-10d", "episode-gone", "fact-10d", "fact-floor", "fact-low-base", "preference-floor"],
)
def test_decay_is_a_function_of_elapsed_time(idle_days, memory_type, base, rate, expected):
    anchor = NOW - timedelta(days=idle_days)
    assert scoring.decayed_importance(
        base_importance=base, decay_rate=rate, anchor_at=anchor, now=NOW, is_pinned=False, memory_type=memory_type
    ) == pytest.approx(expected)


def test_pinned_never_decays():
    anchor = NOW - timedelta(days=1000)
    assert (
        scoring.decayed_importance(
            base_importance=0.6, decay_rate=0.01, anchor_at=anchor, now=NOW, is_pinned=True, memory_type="episode"
        )
        == 0.6
    )


def test_seed_type_mapping():
    assert scoring.SEED_TYPE_MAP == {
        "semantic": "fact",
        "procedural": "preference",
        "episodic": "episode",
        "working": "episode",
    }


def _python_novelty(embedding, centroid):  # type: ignore[no-untyped-def]
    """Novelty as it was computed over Python lists before numpy (the stored importances came from this)."""
    if centroid is None:
        return 1.0
    dot = sum(x * y for x, y in zip(embedding, centroid, strict=True))
    norm = math.sqrt(sum(x * x for x in embedding)) * math.sqrt(sum(y * y for y in centroid))
    return scoring.clamp(1.0 - (dot / norm if norm else 0.0))


def test_novelty_in_numpy_is_novelty_to_the_last_bit():
    """Ingest judges novelty with `Novelty` (numpy) instead of Python lists (~20x dearer): the stored
    importance must not move, so every result is compared exactly, not approximately."""
    import numpy as np

    rng = np.random.default_rng(29)
    for dimensions in (384, 7, 1):
        centroid = rng.standard_normal(dimensions).astype(np.float32)
        judge = scoring.Novelty(centroid)
        for _ in range(300):
            vector = rng.standard_normal(dimensions).astype(np.float32)
            vector /= np.linalg.norm(vector)
            assert judge(vector) == _python_novelty(vector.tolist(), centroid.tolist())
            assert scoring.novelty(vector.tolist(), centroid.tolist()) == judge(vector)
        assert judge(centroid) == _python_novelty(centroid.tolist(), centroid.tolist())
        assert judge(np.zeros(dimensions, dtype=np.float32)) == 1.0 == _python_novelty([0.0] * dimensions, centroid)
    assert scoring.Novelty(None)(centroid) == 1.0 == _python_novelty(centroid.tolist(), None)
    assert scoring.novelty(centroid.tolist(), None) == 1.0
