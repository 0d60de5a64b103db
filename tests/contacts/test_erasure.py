"""Deleting a contact (or a tenant) takes its Redis keys with it: session windows, lexicon, cached
embeddings (apps/core/redis.py names every scope's key so one pattern finds them)."""

from __future__ import annotations

import pytest
import redis
from django.conf import settings
from django.db import connection

from apps.contacts.models import Contact, ErasureRecord
from apps.contacts.services.crud import contact_digest
from apps.core.redis import get_redis
from apps.memories.lifecycle.processor import events_process
from apps.memories.retrieval import lexicon
from apps.tenants.services import tenant_delete

pytestmark = pytest.mark.django_db(transaction=True)  # the erasure runs when the deletion commits


def _keys(pattern: str) -> set[str]:
    return set(get_redis().scan_iter(match=pattern, count=1000))


def _scope_keys(contact: Contact) -> set[str]:
    return _keys(f"engram:*:{contact.tenant_id}:{contact.pk}*")


def _talk(api, tenant, contact_id: str) -> Contact:
    body = {
        "contact_id": contact_id,
        "conversation_id": f"chat-{contact_id}",
        "message": "My dog Bruno is a beagle and I live in Pune.",
        "role": "user",
    }
    assert api.post("/api/v1/ingest", body, format="json").status_code == 202
    assert api.get(f"/api/v1/context/{contact_id}", {"query": "what is my dog called?"}).status_code == 200
    contact = Contact.objects.get(tenant=tenant, external_id=contact_id)
    lexicon.scope_lexicon_refresh(tenant_id=contact.tenant_id, contact_id=contact.pk)
    return contact


@pytest.fixture
def small_lexicons(monkeypatch):
    monkeypatch.setattr(lexicon, "LEXICON_FROM", 1)  # a lexicon for a one-memory scope, so there is a key


def test_deleting_a_contact_erases_its_redis_keys_and_no_one_elses(
    api, other_api, tenant, other_tenant, small_lexicons
):
    ann, bob = _talk(api, tenant, "ann"), _talk(api, tenant, "bob")
    stranger = _talk(other_api, other_tenant, "ann")  # same external id, another tenant
    # what the features wrote under ann's scope: her window, her lexicon, her cached vectors (memories, query)
    assert {key.split(":")[1] for key in _scope_keys(ann)} == {"window", "lexicon", "embedding"}
    kept = _scope_keys(bob) | _scope_keys(stranger)

    assert api.delete("/api/v1/contacts/ann").status_code == 204

    assert _scope_keys(ann) == set()
    assert _scope_keys(bob) | _scope_keys(stranger) == kept
    assert api.get("/api/v1/context/bob", {"query": "what is my dog called?"}).status_code == 200


def test_deleting_a_tenant_erases_every_key_of_its_scopes(api, other_api, tenant, other_tenant, small_lexicons):
    _talk(api, tenant, "ann")
    assert api.post("/api/v1/memories/search", {"query": "Pune"}, format="json").status_code == 200  # the brain
    stranger = _talk(other_api, other_tenant, "ann")
    kept = _scope_keys(stranger)
    assert _keys(f"engram:*:{tenant.pk}:*")

    tenant_delete(tenant=tenant)

    assert _keys(f"engram:*:{tenant.pk}:*") == set()
    assert _scope_keys(stranger) == kept


MARKER = "Quixotellama"  # a word only this contact ever says


def test_export_holds_everything_and_erasure_leaves_nothing(api, other_api, tenant, other_tenant, small_lexicons):
    """GDPR art. 15 and 17 through the API: the export has every kind of data held; after DELETE no table
    row (each read as text) and no Redis key or string value holds the contact's words or ids, and an audit
    record without personal data says who erased whom, when and how much."""
    said = [
        f"My llama is called {MARKER} and I live in Pune.",
        "I work at Infosys as a nurse.",
        "I feel so anxious about my exams.",
        f"Actually I moved, I live in Mumbai now, {MARKER} too.",
    ]
    for index, text in enumerate(said):
        body = {
            "contact_id": "zed-9",
            "conversation_id": "zed-chat",
            "message": text,
            "role": "user",
            "message_id": f"zed-m{index}",
            "display_name": "Zed Quorra",
        }
        assert api.post("/api/v1/ingest", body, format="json").status_code == 202
    assert api.get("/api/v1/context/zed-9", {"query": f"tell me about {MARKER}"}).status_code == 200
    contact = Contact.objects.get(tenant=tenant, external_id="zed-9")
    lexicon.scope_lexicon_refresh(tenant_id=tenant.pk, contact_id=contact.pk)
    events_process()  # the processor's profile and audit
    stranger = _talk(other_api, other_tenant, "zed-9")  # the same id at another tenant stays

    export = api.get("/api/v1/contacts/zed-9/export").json()
    assert [message["content"] for message in export["messages"]] == said
    assert len(export["events"]) == 4 and export["events"][0]["result"]
    assert any(MARKER in memory["content"] for memory in export["memories"])
    assert all(memory["history"] for memory in export["memories"])
    assert any(memory["history"][-1]["action"] == "superseded" for memory in export["memories"])
    assert export["entities"] and export["mood_history"] and export["state"]["mood"]
    assert export["profile"]["working_memory"]
    assert other_api.get("/api/v1/contacts/zed-9/export").json()["messages"][0]["content"] != said[0]

    assert api.delete("/api/v1/contacts/zed-9").status_code == 204

    needles = [MARKER, "Quorra", "zed-m", "zed-chat", str(contact.pk)]
    found = []
    with connection.cursor() as cursor:
        cursor.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename")
        tables = [row[0] for row in cursor.fetchall()]
        for table in tables:
            for needle in needles:
                cursor.execute(f'SELECT count(*) FROM "{table}" t WHERE t::text ILIKE %s', [f"%{needle}%"])
                if cursor.fetchone()[0]:
                    found.append((table, needle))
    assert found == []
    assert len(tables) > 20  # every app's tables were searched
    raw = redis.Redis.from_url(settings.REDIS_URL)  # bytes: cached vectors are not text
    keys = list(raw.scan_iter(count=1000))
    assert keys  # the other contacts' keys and the global ones are there to search
    for key in keys:
        assert str(contact.pk).encode() not in key
        if raw.type(key) == b"string":
            value = raw.get(key) or b""
            assert MARKER.encode() not in value and b"zed-m" not in value
        elif raw.type(key) == b"list":
            assert not any(MARKER.encode() in item or b"zed-m" in item for item in raw.lrange(key, 0, -1))
    assert _scope_keys(stranger)  # the other tenant's contact kept its keys

    record = ErasureRecord.objects.get(tenant=tenant)
    assert record.contact_digest == contact_digest(tenant_id=tenant.pk, external_id="zed-9")
    assert record.actor.startswith("api_key:")
    assert record.rows["conversations.Message"] == 4 and record.rows["memories.Memory"] >= 4
    assert record.redis_keys and record.redis_keys >= 3
