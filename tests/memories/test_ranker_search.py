"""Search ranks with the fitted ranker's weights (apps/memories/retrieval/ranker.py) as loaded from its file,
explains each feature's contribution, and falls back to the hand weights without a usable file or when the
tenant set its own weights."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from apps.memories import scoring
from apps.memories.ingest.services import memory_add
from apps.memories.models import Memory
from apps.memories.retrieval import ranker as ranking
from apps.memories.retrieval.search import HAND, memory_search, weights_for
from apps.memories.retrieval.signals import time_window
from tests.factories import ContactFactory

pytestmark = pytest.mark.django_db

SHORT = "Bruno naps"
LONG = "Bruno, the beagle, naps every afternoon on the old blue sofa by the window while the rain falls outside"


@pytest.fixture
def contact(tenant):
    contact = ContactFactory(tenant=tenant, external_id="arjun", display_name="Arjun")
    for content in (SHORT, LONG):
        memory_add(tenant=tenant, contact=contact, memory_type="fact", content=content, actor="test")
    return contact


@pytest.fixture
def weights_file(tmp_path, monkeypatch):
    """Points the ranker at a file of the test's own (as if shipped), loaded afresh."""
    path = tmp_path / "ranker_weights.json"
    monkeypatch.setattr(ranking, "WEIGHTS_PATH", path)
    ranking.active.cache_clear()

    def write(version: str, weights: dict[str, float]) -> None:
        path.write_text(json.dumps({"format": ranking.FORMAT, "version": version, "weights": weights}))
        ranking.active.cache_clear()

    yield write
    ranking.active.cache_clear()


def _ranked(tenant, contact) -> list[str]:
    return [item.memory.content for item in memory_search(tenant=tenant, contact=contact, query="Bruno naps").results]


def test_search_ranks_with_the_loaded_weights(tenant, contact, weights_file):
    weights_file("prefers-long", {"length": 1.0})
    assert _ranked(tenant, contact) == [LONG, SHORT]
    weights_file("prefers-short", {"length": -1.0})  # a planted weight change turns the ranking over
    assert _ranked(tenant, contact) == [SHORT, LONG]


def test_the_explanation_shows_each_contribution_and_the_version(tenant, contact, weights_file):
    weights_file("prefers-long", {"length": 1.0, "cosine": 0.5})
    (best, other) = memory_search(tenant=tenant, contact=contact, query="Bruno naps").results
    explained = best.explain()["ranker"]
    assert explained["version"] == "prefers-long"
    assert explained["contributions"] == {
        "cosine": round(0.5 * best.features["cosine"], 4),
        "length": round(best.features["length"], 4),
    }
    assert set(explained["features"]) == set(ranking.FEATURES)
    assert best.signals.similarity == 1.0 and other.signals.similarity == 0.0  # the fitted relevance, min-max


@pytest.mark.parametrize("content", [None, "{not json", json.dumps({"format": ranking.FORMAT, "weights": {}})])
def test_without_a_usable_file_search_uses_the_hand_weights(tenant, contact, weights_file, tmp_path, content):
    if content is not None:
        ranking.WEIGHTS_PATH.write_text(content)
    results = memory_search(tenant=tenant, contact=contact, query="Bruno naps").results
    hand = memory_search(tenant=tenant, contact=contact, query="Bruno naps", ranker=HAND).results
    assert [item.ranker_version for item in results] == [HAND, HAND]
    assert [(item.memory.pk, item.score) for item in results] == [(item.memory.pk, item.score) for item in hand]
    assert results[0].explain()["ranker"]["contributions"] == {}


def test_a_tenant_with_its_own_weights_keeps_the_hand_formula(tenant, contact, weights_file):
    weights_file("prefers-short", {"length": -1.0})
    tenant.settings = {"retrieval_weights": {"contact": {"importance": 0.3}}}
    tenant.save()
    results = memory_search(tenant=tenant, contact=contact, query="Bruno naps").results
    assert {item.ranker_version for item in results} == {HAND}


@pytest.mark.parametrize("ranker", ["fitted", HAND])
def test_the_time_window_factor_the_search_applied_is_the_one_explained(tenant, contact, weights_file, ranker):
    """A memory outside every window the query names keeps time_window.miss_factor of its score; `explain`
    carries the factor applied (the inspector's score breakdown reads it), 1.0 for a memory inside."""
    weights_file("prefers-long", {"length": 1.0, "cosine": 0.5})
    # the one inside the window is the one the fitted ranker puts last (relevance 0, score 0 whatever its factor)
    Memory.objects.filter(tenant=tenant, content=LONG).update(occurred_at=datetime(2020, 1, 1, 12, tzinfo=UTC))
    options = {"ranker": HAND} if ranker == HAND else {}
    result = memory_search(tenant=tenant, contact=contact, query="Bruno naps on 1 January 2020", **options)
    factor = time_window.miss_factor(result.time_windows)
    assert factor == 0.5
    found = {item.memory.content: item for item in result.results}
    inside, outside = found[LONG], found[SHORT]
    assert outside.score > 0
    assert (inside.window_factor, inside.explain()["time_window_factor"]) == (1.0, 1.0)
    assert (outside.window_factor, outside.explain()["time_window_factor"]) == (factor, factor)
    weights = weights_for(tenant=tenant, is_tenant_scope=False)
    for item in (inside, outside):
        assert item.ranker_version == ("prefers-long" if ranker == "fitted" else HAND)
        before = (
            scoring.retrieval_score(item.signals, weights)
            if ranker == HAND
            else scoring.ranked_score(relevance=item.signals.similarity, signals=item.signals, weights=weights)
        )
        assert item.score == round(before * item.window_factor, 6)
