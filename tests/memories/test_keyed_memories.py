"""Keyed records (POST /memories with a key; what the LangGraph store writes): an upsert in its scope, stored as
given, never a duplicate of another memory, never merged by consolidation; found by key, by key prefix, and by
a search narrowed to a key prefix."""

from __future__ import annotations

import pytest

from apps.memories.lifecycle.deferred import near_duplicates_merge
from apps.memories.models import Memory, MemoryRevision
from tests.factories import ContactFactory

pytestmark = pytest.mark.django_db


def put(api, key, content, **extra):
    return api.post("/api/v1/memories", {"content": content, "memory_type": "fact", "key": key, **extra}, format="json")


def test_a_key_is_an_upsert_in_its_scope(api, tenant):
    ContactFactory(tenant=tenant, external_id="u1")
    created = put(api, "prefs/food", "Likes sushi", contact_id="u1", metadata={"value": {"food": "sushi"}})
    assert created.status_code == 201 and created.json()["action"] == "created"
    body = created.json()
    assert (body["key"], body["metadata"]["value"], body["contact_id"]) == ("prefs/food", {"food": "sushi"}, "u1")
    same = put(api, "prefs/food", "Likes sushi", contact_id="u1", metadata={"value": {"food": "sushi"}})
    assert (same.status_code, same.json()["action"], same.json()["id"]) == (200, "unchanged", body["id"])
    changed = put(api, "prefs/food", "Likes ramen", contact_id="u1", metadata={"value": {"food": "ramen"}})
    assert (changed.status_code, changed.json()["action"], changed.json()["id"]) == (200, "updated", body["id"])
    memory = Memory.objects.get(pk=body["id"])
    assert (memory.content, memory.metadata["value"]) == ("Likes ramen", {"food": "ramen"})
    assert list(MemoryRevision.objects.filter(memory=memory).values_list("action", flat=True)) == ["created", "edited"]
    brain = put(api, "prefs/food", "Sells ramen")  # the same key in another scope (the brain) is another record
    assert brain.status_code == 201 and brain.json()["id"] != body["id"] and brain.json()["contact_id"] is None
    assert Memory.objects.filter(tenant=tenant, key="prefs/food").count() == 2


def test_a_keyed_re_send_keeps_the_pin_and_importance_it_does_not_send(api, tenant):
    created = put(api, "ops/rule", "Ship on Fridays", importance=0.9).json()
    pinned = api.patch(f"/api/v1/memories/{created['id']}", {"is_pinned": True}, format="json")
    assert pinned.status_code == 200 and pinned.json()["is_pinned"] is True  # an operator pinned it
    again = put(api, "ops/rule", "Ship on Fridays and Mondays")  # the client's next put says nothing of either
    assert (again.json()["action"], again.json()["is_pinned"], again.json()["importance"]) == ("updated", True, 0.9)
    unpinned = put(api, "ops/rule", "Ship on Fridays and Mondays", is_pinned=False)
    assert (unpinned.json()["action"], unpinned.json()["is_pinned"]) == ("updated", False)
    fresh = put(api, "ops/other", "Invoices go out on the 1st").json()
    assert fresh["is_pinned"] is False


def test_keyed_records_are_never_duplicates_of_each_other_or_of_what_ingest_learns(api, tenant):
    ContactFactory(tenant=tenant, external_id="u1")
    first = put(api, "a", "Works at Infosys", contact_id="u1").json()
    second = put(api, "b", "Works at Infosys", contact_id="u1").json()
    assert first["id"] != second["id"]
    api.post(
        "/api/v1/ingest",
        {"contact_id": "u1", "conversation_id": "c", "role": "user", "message": "I work at Infosys"},
        format="json",
    )
    learned = Memory.objects.filter(tenant=tenant, key="", content="Works at Infosys")
    assert learned.count() == 1  # its own memory, not a reinforcement of a record
    assert Memory.objects.get(pk=first["id"]).source_message_ids == []
    contact = ContactFactory._meta.model.objects.get(tenant=tenant, external_id="u1")
    near_duplicates_merge(tenant=tenant, contact=contact)
    assert Memory.objects.filter(pk__in=[first["id"], second["id"]], valid_to__isnull=True).count() == 2


def test_records_are_found_by_key_by_prefix_and_by_a_narrowed_search(api, other_api, tenant):
    ContactFactory(tenant=tenant, external_id="u1")
    put(api, "notes/pets", "Has a beagle named Bruno", contact_id="u1", metadata={"value": {"pet": "Bruno"}})
    put(api, "notes/work", "Works as a nurse in Pune", contact_id="u1")
    put(api, "other/x", "Has a cat named Luna", contact_id="u1")
    api.post(
        "/api/v1/ingest",
        {"contact_id": "u1", "conversation_id": "c", "role": "user", "message": "My dog Bruno loves walks"},
        format="json",
    )
    by_key = api.get("/api/v1/memories", {"contact_id": "u1", "key": "notes/pets"}).json()["results"]
    assert [row["content"] for row in by_key] == ["Has a beagle named Bruno"]
    by_prefix = api.get("/api/v1/memories", {"contact_id": "u1", "key_prefix": "notes/"}).json()["results"]
    assert sorted(row["key"] for row in by_prefix) == ["notes/pets", "notes/work"]
    keyed = api.get("/api/v1/memories", {"contact_id": "u1", "key_prefix": ""}).json()["results"]
    assert sorted(row["key"] for row in keyed) == ["notes/pets", "notes/work", "other/x"]
    found = api.post(
        "/api/v1/memories/search", {"contact_id": "u1", "query": "the dog Bruno", "key_prefix": "notes/"}, format="json"
    ).json()["results"]
    assert found[0]["key"] == "notes/pets" and found[0]["metadata"]["value"] == {"pet": "Bruno"}
    assert {row["key"] for row in found} <= {"notes/pets", "notes/work"}  # neither the episode nor other/
    plain = api.post("/api/v1/memories/search", {"contact_id": "u1", "query": "the dog Bruno"}, format="json").json()
    assert "key" not in plain["results"][0]  # a search without key_prefix answers as before
    assert other_api.get("/api/v1/memories", {"key_prefix": ""}).json()["results"] == []


@pytest.mark.parametrize("key", ["", "k" * 256], ids=["empty", "too-long"])
def test_a_bad_key_is_a_400(api, key):
    assert put(api, key, "Likes sushi").status_code == 400


@pytest.mark.parametrize(
    "metadata", [{"chunks": "abc"}, {"chunks": None}, {"chunks": 3.5}, {"asked": 5}, {"asked": ["ok", 7, None]}]
)
def test_a_clients_value_for_the_keys_ingest_sets_is_kept_and_read_as_nothing(api, tenant, metadata):
    """`chunks` and `asked` are what ingest records of a long message's chunk and of the question a reply
    answers; a client's own value (any JSON) is kept and changes nothing of the index (a 500 before)."""
    created = api.post(
        "/api/v1/memories",
        {"content": "Loves the beach in Tampa", "memory_type": "fact", "metadata": metadata},
        format="json",
    )
    assert created.status_code == 201, created.content
    memory = Memory.objects.get(pk=created.json()["id"])
    assert memory.index_terms.startswith("| city Florida")
    edited = api.patch(f"/api/v1/memories/{memory.pk}", {"content": "Loves the beach in Boston"}, format="json")
    assert edited.status_code == 200, edited.content
    memory.refresh_from_db()
    assert memory.index_terms.startswith("| city Massachusetts")
    assert {key: memory.metadata[key] for key in metadata} == metadata


def test_a_client_cannot_make_a_record_an_instruction_through_its_metadata(api, tenant):
    """`instruction_condition` is Engram's key (retrieval raises a memory that has one when the query meets it):
    a client's own value is not stored, neither on a keyed record nor on a plain memory."""
    ContactFactory(tenant=tenant, external_id="u1")
    extra = {"contact_id": "u1", "metadata": {"instruction_condition": "anything", "note": "kept"}}
    for key in ("k1", None):
        body = (
            put(api, key, "Likes ramen", **extra).json()
            if key
            else api.post(
                "/api/v1/memories", {"content": "Likes udon", "memory_type": "fact", **extra}, format="json"
            ).json()
        )
        assert body["metadata"].get("note") == "kept"
        assert "instruction_condition" not in Memory.objects.get(pk=body["id"]).metadata
    put(api, "k1", "Likes soba", **extra)  # an update of the record replaces its metadata: still without it
    assert "instruction_condition" not in Memory.objects.get(tenant=tenant, key="k1").metadata
