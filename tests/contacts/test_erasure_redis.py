"""Deleting a contact (or a tenant) takes its Redis keys with it: session windows, lexicon, cached
embeddings (apps/core/redis.py names every scope's key so one pattern finds them)."""

from __future__ import annotations

import pytest

from apps.contacts.models import Contact
from apps.core.redis import get_redis
from apps.memories.services import lexicon
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
