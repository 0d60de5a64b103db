"""The fitted ranker (apps/memories/retrieval/ranker.py), pure: the pairwise fit, the weights file, the
fallback when the file is absent or invalid."""

from __future__ import annotations

import json
import logging
import uuid
from datetime import UTC, datetime

import numpy as np
import pytest

from apps.memories import scoring
from apps.memories.retrieval import ranker as ranking
from apps.memories.retrieval.types import RetrievedMemory, ScoredMemory


def _groups(rng: np.random.Generator, *, questions: int = 60, candidates: int = 30) -> list[ranking.Group]:
    """Made-up questions whose answer is told by feature 0 (higher is better) and against feature 1 (a
    question-like turn: lower is better); feature 2 is noise."""
    groups = []
    for _ in range(questions):
        features = rng.uniform(0, 1, size=(candidates, 3))
        utility = 3.0 * features[:, 0] - 2.0 * features[:, 1]
        relevant = np.zeros(candidates, dtype=bool)
        relevant[np.argsort(-utility)[:2]] = True
        groups.append(ranking.Group(features=features, relevant=relevant))
    return groups


def test_the_fit_finds_the_weights_that_order_made_up_questions():
    groups = _groups(np.random.default_rng(7))
    weights = ranking.fit(groups, l2=1e-4)
    assert weights[0] > 0 > weights[1]  # what tells relevance, with its sign
    assert abs(weights[2]) < 0.2 * abs(weights[0])  # the noise counts little
    assert weights[0] / -weights[1] == pytest.approx(1.5, rel=0.35)  # their ratio, 3 : 2
    # every question's two relevant candidates rank in its top 2 with the fitted weights
    hits = [set(np.argsort(-(group.features @ weights))[:2]) == set(np.flatnonzero(group.relevant)) for group in groups]
    assert np.mean(hits) > 0.8


def test_l2_shrinks_the_weights():
    groups = _groups(np.random.default_rng(3))
    assert np.linalg.norm(ranking.fit(groups, l2=1.0)) < np.linalg.norm(ranking.fit(groups, l2=1e-4))


def test_pairs_count_every_question_alike_and_skip_questions_without_both_kinds():
    one = ranking.Group(features=np.array([[1.0], [0.0], [0.0]]), relevant=np.array([True, False, False]))
    two = ranking.Group(features=np.array([[2.0], [1.0]]), relevant=np.array([True, False]))
    none = ranking.Group(features=np.array([[5.0]]), relevant=np.array([False]))
    differences, weights = ranking.pairs([one, two, none])
    assert differences.tolist() == [[1.0], [1.0], [1.0]]
    assert weights.tolist() == [0.25, 0.25, 0.5]


def test_relevances_are_the_fitted_score_min_max_over_the_candidates():
    fitted = ranking.Ranker(version="v", features=("cosine", "length"), weights=(2.0, -1.0))
    rows = [{"cosine": 1.0, "length": 0.0}, {"cosine": 0.5, "length": 1.0}, {"cosine": 0.5, "length": 0.0}]
    assert ranking.relevances(fitted, rows) == [1.0, 0.0, 0.5]
    assert ranking.relevances(fitted, rows[:1]) == [1.0]
    assert fitted.contributions(rows[1]) == {"cosine": 1.0, "length": -1.0}


def test_a_weights_file_round_trips(tmp_path):
    fitted = ranking.Ranker(version="2026-11-27-abc", features=("cosine", "time_match"), weights=(0.5, 1.25))
    path = tmp_path / "weights.json"
    path.write_text(json.dumps(ranking.document(fitted, date="2026-11-27")))
    assert ranking.load(path) == fitted


@pytest.mark.parametrize(
    "content",
    [
        "not json",
        json.dumps({"format": 99, "version": "v", "weights": {"cosine": 1.0}}),
        json.dumps({"format": ranking.FORMAT, "weights": {"cosine": 1.0}}),
        json.dumps({"format": ranking.FORMAT, "version": "v", "weights": {"no_such_feature": 1.0}}),
        json.dumps({"format": ranking.FORMAT, "version": "v", "weights": {"cosine": "high"}}),
        json.dumps({"format": ranking.FORMAT, "version": "v", "weights": {"cosine": 0.0}}),
    ],
    ids=["not-json", "format", "no-version", "unknown-feature", "not-a-number", "all-zero"],
)
def test_an_invalid_file_falls_back_to_the_hand_weights_and_says_so(tmp_path, caplog, content):
    path = tmp_path / "weights.json"
    path.write_text(content)
    with caplog.at_level(logging.WARNING, logger=ranking.__name__):
        assert ranking.load(path) is None
    assert "hand weights" in caplog.text


def test_an_absent_file_falls_back_once(tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(ranking, "WEIGHTS_PATH", tmp_path / "absent.json")
    ranking.active.cache_clear()
    try:
        with caplog.at_level(logging.WARNING, logger=ranking.__name__):
            assert ranking.active() is None
            assert ranking.active() is None
        assert caplog.text.count("hand weights") == 1
    finally:
        ranking.active.cache_clear()


def test_the_shipped_weights_file_is_valid_and_names_its_training_set():
    data = json.loads(ranking.WEIGHTS_PATH.read_text())
    assert ranking.parse(data).version == data["version"]
    assert set(data["trained_on"]["conversations"]) == {"conv-26", "conv-30", "conv-41", "conv-42", "conv-43"}


def test_the_score_is_the_sum_of_the_products_in_the_features_order_a_missing_feature_zero():
    rng = np.random.default_rng(7)
    features = ranking.FEATURES
    ranker = ranking.Ranker(
        version="t", features=features, weights=tuple(float(w) for w in rng.normal(size=len(features)))
    )
    for _ in range(50):
        row = {name: float(value) for name, value in zip(features, rng.random(len(features)), strict=True)}
        del row[features[int(rng.integers(len(features)))]]
        pairs = zip(ranker.features, ranker.weights, strict=True)
        expected = sum(weight * row.get(name, 0.0) for name, weight in pairs)
        assert ranker.score(row) == expected  # the same float as the products summed in order, not a close one
        assert sum(ranker.contributions(row).values()) == pytest.approx(expected, abs=1e-3)


def test_a_ranker_needs_a_weight_per_feature():
    with pytest.raises(ValueError, match="2 features and 1 weights"):
        ranking.Ranker(version="t", features=("cosine_raw", "importance"), weights=(1.0,))


def test_a_ranked_row_says_what_each_feature_added_only_when_asked():
    fitted = ranking.Ranker(version="v", features=("cosine", "length"), weights=(2.0, -1.0))
    memory = RetrievedMemory(
        uuid.uuid4(), "episode", "I painted a sunrise", 0.5, datetime(2023, 5, 8, tzinfo=UTC), False, ()
    )
    signals = scoring.Signals(similarity=1.0, recency=1.0, importance=0.5, access_frequency=0.0, entity_match=0.0)
    features = {"cosine": 0.75, "length": 0.5}
    row = ScoredMemory(
        memory, 1.0, signals, 0.75, 0.0, ("vector",), features=features, ranker_version="v", ranker=fitted
    )
    assert row.contributions == {"cosine": 1.5, "length": -0.5}
    assert row.explain()["ranker"]["contributions"] == {"cosine": 1.5, "length": -0.5}
    hand = ScoredMemory(memory, 1.0, signals, 0.75, 0.0, ("vector",), features=features)
    assert hand.contributions == {} and hand.explain()["ranker"]["contributions"] == {}
