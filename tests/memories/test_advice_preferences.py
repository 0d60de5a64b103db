"""A request for advice gets the asker's preference that fits it first, though the turns about the subject are
closer to it in words and meaning (retrieval/signals/advice.py)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from apps.memories.models import Memory
from apps.memories.retrieval import candidates
from apps.memories.retrieval.signals import advice
from tests.memories.test_retrieval_failure_classes import DAY, _ingest, _search

pytestmark = pytest.mark.django_db

PREFERENCE = "I prefer short workouts early in the morning, twenty minutes at most."
# a user training for a race tells an assistant about it over three weeks; what kind of workout they like is
# said once, and every other turn is about their training schedule and plan
TRAINING = [
    (
        DAY,
        [
            ("", "I signed up for a half marathon in April and I need a training plan."),
            ("", "Great goal! A plan usually builds weekly mileage slowly and mixes easy runs with one long run."),
            ("", "My training schedule this week has runs on Tuesday, Thursday and Sunday."),
            ("", "That schedule leaves good recovery days between your runs."),
        ],
    ),
    (
        DAY + timedelta(days=7),
        [
            ("", PREFERENCE),
            ("", "Noted, short sessions can work well."),
            ("", "My work schedule is packed with meetings this week, so my training plan is a mess."),
            ("", "Busy weeks happen; keep the long run and drop one easy run if you must."),
        ],
    ),
    (
        DAY + timedelta(days=14),
        [
            ("", "My running club planned a long training run for Sunday."),
            ("", "Club runs are a nice way to keep the long run social."),
            ("", "My coach changed my training plan for next week and added hill sessions."),
            ("", "Hills build strength; take them easy at first."),
        ],
    ),
]
QUESTION = "How would you suggest I plan my training sessions this week?"


def _preference(body: dict) -> tuple[int, dict] | None:
    for position, row in enumerate(body["results"]):
        if row["memory_type"] == "preference" and "runner:S2:1" in row["sources"]:
            return position, row
    return None


def test_a_request_for_advice_gets_the_preference_that_fits_it_first(api):
    _ingest(api, "runner", TRAINING, roles=("user", "assistant"))
    body = _search(api, "runner", QUESTION)
    assert body["advice"] is True
    found = _preference(body)
    assert found is not None
    position, row = found
    assert position <= 1  # tied with the best result, ordered after it by relevance or before
    assert row["explain"]["advice"]["fits"] is True
    assert row["explain"]["advice"]["cosine"] >= advice.ADVICE_FIT
    assert "preference" in row["explain"]["found_by"]
    assert row["score"] == max(result["score"] for result in body["results"])


def test_without_the_stage_the_preference_is_not_among_the_first(api, monkeypatch):
    """Before: the turns about the training plan and schedule are closer to the question."""
    _ingest(api, "runner", TRAINING, roles=("user", "assistant"))
    monkeypatch.setattr(advice, "ADVICE_PREFERENCES", 0)
    found = _preference(_search(api, "runner", QUESTION))
    assert found is None or found[0] > 2
    assert found is None or found[1]["explain"]["advice"] is None


def test_the_context_hands_the_preference_to_the_model(api):
    _ingest(api, "runner", TRAINING, roles=("user", "assistant"))
    body = api.get("/api/v1/context/runner", {"query": QUESTION, "token_budget": 1000}).json()
    lines = [line for line in body["context_text"].splitlines() if line.startswith("[")]
    assert lines[0].startswith("[PREFERENCE]") and "short workouts" in lines[0]


@pytest.mark.parametrize(
    "question",
    [
        "What did my coach change in my training plan?",  # a question, not a request for advice
        "How did you recommend I plan my training?",  # advice already given: the turn that gave it answers
    ],
)
def test_other_questions_rank_as_before(api, question):
    _ingest(api, "runner", TRAINING, roles=("user", "assistant"))
    body = _search(api, "runner", question)
    assert body["advice"] is False
    assert all(row["explain"]["advice"] is None for row in body["results"])
    assert all("preference" not in row["explain"]["found_by"] for row in body["results"])


def test_the_source_reads_only_the_latest_preferences_of_a_scope_that_states_many(api, monkeypatch):
    """A contact with thousands of preferences is represented by its latest PREFERENCE_ROW_BUDGET (reading them
    all took 18 ms at 100k): with a budget of one, a preference stated after the one that fits is all it reads."""
    _ingest(api, "runner", TRAINING, roles=("user", "assistant"))
    later = {
        "contact_id": "runner",
        "conversation_id": "runner:s4",
        "message": "I prefer green tea over coffee.",
        "role": "user",
        "message_id": "runner:S4:1",
        "occurred_at": (DAY + timedelta(days=21)).isoformat(),
    }
    response = api.post("/api/v1/ingest/batch", {"messages": [later]}, format="json")  # stored after the others
    assert response.status_code == 202, response.content
    latest = Memory.objects.filter(contact__external_id="runner", memory_type="preference").latest("created_at")
    assert "green tea" in latest.content
    monkeypatch.setattr(candidates, "PREFERENCE_ROW_BUDGET", 1)
    body = _search(api, "runner", QUESTION)
    found = _preference(body)
    assert found is None or "preference" not in found[1]["explain"]["found_by"]
    monkeypatch.setattr(candidates, "PREFERENCE_ROW_BUDGET", 2)
    found = _preference(_search(api, "runner", QUESTION))
    assert found is not None and "preference" in found[1]["explain"]["found_by"]
