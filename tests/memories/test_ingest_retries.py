"""Correct under retries and concurrency: a retried message_id after a failure, two extractions of one event,
a batch with a late conflict (the review findings of issue "Correct under retries")."""

from __future__ import annotations

from contextlib import contextmanager

import pytest
from django.db import transaction

from apps.contacts.models import CrisisReview, InteractionLog
from apps.conversations.models import Message
from apps.memories.ingest import services as ingest_service
from apps.memories.ingest.services import event_extract
from apps.memories.models import ContextEvent, Memory
from tests.conftest import held_elsewhere

CRISIS = "I want to die, I can't go on"


def _body(message_id, text, conversation="c1", contact="u1"):
    return {
        "contact_id": contact,
        "conversation_id": conversation,
        "message": text,
        "role": "user",
        "message_id": message_id,
    }


@pytest.mark.django_db
def test_a_crisis_whose_check_failed_is_pending_then_detected_on_the_retry(api, tenant, monkeypatch):
    real = ingest_service.contact_state_update_many

    def broken(**kwargs):
        raise RuntimeError("the state update died")

    monkeypatch.setattr(ingest_service, "contact_state_update_many", broken)
    first = api.post("/api/v1/ingest", _body("m1", CRISIS), format="json")
    assert first.status_code == 202
    assert first.json()["crisis"] == {"detected": None, "pending": True}  # unknown, never "not detected"
    assert not CrisisReview.objects.filter(tenant=tenant).exists()

    monkeypatch.setattr(ingest_service, "contact_state_update_many", real)
    retry = api.post("/api/v1/ingest", _body("m1", CRISIS), format="json")
    assert retry.status_code == 202
    body = retry.json()
    assert body["duplicate"] is True
    assert body["crisis"]["detected"] is True and body["crisis"]["guidance"]
    assert CrisisReview.objects.filter(tenant=tenant, message_id="m1").count() == 1
    # and once known, a third send answers the same without applying the message again
    again = api.post("/api/v1/ingest", _body("m1", CRISIS), format="json").json()
    assert again["crisis"] == body["crisis"]
    assert InteractionLog.objects.filter(tenant=tenant, message_id="m1").count() == 1
    assert Message.objects.filter(tenant=tenant).count() == 1


@pytest.mark.django_db
def test_an_assistant_turn_is_not_a_pending_crisis(api):
    body = {**_body("a1", "Sorry to hear that."), "role": "assistant"}
    assert api.post("/api/v1/ingest", body, format="json").json()["crisis"] == {"detected": False}


@pytest.mark.django_db
def test_a_message_whose_extraction_failed_is_extracted_on_its_retry(api, tenant, monkeypatch):
    def broken(**kwargs):
        raise RuntimeError("the write path died")

    monkeypatch.setattr(ingest_service, "memories_write", broken)
    first = api.post("/api/v1/ingest", _body("m2", "My dog Bruno is a beagle"), format="json").json()
    assert first["memories"] == []
    event = ContextEvent.objects.get(tenant=tenant)
    assert event.extracted_at is None and event.attempts == 1
    monkeypatch.undo()
    retry = api.post("/api/v1/ingest", _body("m2", "My dog Bruno is a beagle"), format="json").json()
    assert retry["duplicate"] is True
    assert {memory["memory_type"] for memory in retry["memories"]} >= {"fact", "episode"}
    event.refresh_from_db()
    assert event.extracted_at is not None


@pytest.mark.django_db(transaction=True)
def test_an_event_being_extracted_elsewhere_is_skipped_not_extracted_twice(api, tenant, monkeypatch):
    """Two extractions of one event at once (the request and the retry sweep): the second finds the row
    locked and leaves it; the event is extracted exactly once."""
    monkeypatch.setattr(ingest_service, "events_extract", lambda **kwargs: {})  # leave the event pending
    assert api.post("/api/v1/ingest", _body("m3", "I work at Infosys in Chennai"), format="json").status_code == 202
    monkeypatch.undo()
    event = ContextEvent.objects.select_related("tenant", "contact", "message").get(tenant=tenant)
    assert event.extracted_at is None

    @contextmanager
    def a_concurrent_extraction():
        with transaction.atomic():
            yield ContextEvent.objects.select_for_update().get(pk=event.pk)

    with held_elsewhere(a_concurrent_extraction):
        assert event_extract(event=event, actor="sweep") == []  # skipped, without waiting for the lock
        assert not Memory.objects.filter(tenant=tenant).exists()
    first = event_extract(
        event=ContextEvent.objects.select_related("tenant", "contact", "message").get(pk=event.pk), actor="sweep"
    )
    assert first and Memory.objects.filter(tenant=tenant, memory_type="fact").count() == 1
    # once extracted, any later run returns the recorded result and writes nothing
    again = event_extract(
        event=ContextEvent.objects.select_related("tenant", "contact", "message").get(pk=event.pk), actor="sweep"
    )
    assert again == first
    assert Memory.objects.filter(tenant=tenant).count() == len(first)


@pytest.mark.django_db
def test_a_batch_with_a_late_conflict_writes_nothing(api, tenant):
    assert api.post("/api/v1/ingest", _body("taken", "hello", conversation="other"), format="json").status_code == 202
    messages = [_body(f"b{index}", f"batch message number {index}") for index in range(5)]
    messages.append(_body("taken", "reused id", conversation="c1"))  # the message_id of another conversation
    response = api.post("/api/v1/ingest/batch", {"messages": messages}, format="json")
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "conflict"
    assert list(Message.objects.filter(tenant=tenant).values_list("external_id", flat=True)) == ["taken"]
    assert ContextEvent.objects.filter(tenant=tenant).count() == 1


@pytest.mark.django_db
def test_a_deleted_memory_is_not_served_nor_its_history(api, tenant):
    api.post("/api/v1/ingest", _body("d1", "I work at Infosys in Chennai"), format="json")
    memory = Memory.objects.filter(tenant=tenant, memory_type="fact").first()
    assert api.get(f"/api/v1/memories/{memory.pk}").status_code == 200
    assert api.delete(f"/api/v1/memories/{memory.pk}").status_code == 204
    assert api.get(f"/api/v1/memories/{memory.pk}").status_code == 404
    assert api.get(f"/api/v1/memories/{memory.pk}/history").status_code == 404
    assert api.patch(f"/api/v1/memories/{memory.pk}", {"content": "x"}, format="json").status_code == 404
    assert memory.revisions.filter(action="deleted").exists()  # kept for operators


@pytest.mark.django_db
def test_an_outcome_boosts_only_its_own_contact_s_decision(api, tenant):
    from apps.conversations.models import Conversation
    from apps.memories.lifecycle.deferred import conversation_consolidate

    decision = "I will post the Diwali sweets recipe on Monday"
    api.post("/api/v1/ingest", _body("dec", decision, conversation="a", contact="alice"), format="json")
    # another contact's memory that names the same message id among its sources (ids are the client's)
    other = api.post("/api/v1/ingest", _body("x1", decision, conversation="b", contact="bob"), format="json").json()
    bob_ids = [memory["id"] for memory in other["memories"]]
    Memory.objects.filter(pk__in=bob_ids).update(source_message_ids=["x1", "dec"])
    before = dict(Memory.objects.filter(pk__in=bob_ids).values_list("pk", "importance"))
    outcome = {
        **_body("out", "The recipe post got 340 views", conversation="a", contact="alice"),
        "metadata": {"outcome": "positive", "decision_message_id": "dec"},
    }
    api.post("/api/v1/ingest", outcome, format="json")
    stats = conversation_consolidate(conversation_id=str(Conversation.objects.get(tenant=tenant, external_id="a").pk))
    assert stats["outcome_boosted"] >= 1
    assert dict(Memory.objects.filter(pk__in=bob_ids).values_list("pk", "importance")) == before


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/api/v1/memories/search", {"query": 12}, "query"),
        ("/api/v1/memories/search", {"query": ["a"]}, "query"),
        ("/api/v1/ingest", {**_body("n1", "x"), "message": 42}, "message"),
        ("/api/v1/ingest", {**_body("n1", "x"), "contact_id": 7}, "contact_id"),
        ("/api/v1/memories", {"content": True, "memory_type": "fact"}, "content"),
    ],
    ids=["search-int", "search-list", "ingest-int", "contact-int", "add-bool"],
)
def test_a_non_string_where_a_string_is_expected_is_a_400(api, tenant, path, body, field):
    response = api.post(path, body, format="json")
    assert response.status_code == 400, response.content
    assert field in response.json()["error"]["details"]
    assert not Message.objects.filter(tenant=tenant).exists() and not Memory.objects.filter(tenant=tenant).exists()
