"""The hot-path lookups of GET /context: one statement each, the same objects the ORM returns."""

from __future__ import annotations

import pytest
from django.utils import timezone

from apps.contacts.models import ContactState
from apps.contacts.selectors import contact_state_snapshot, joined_one_to_one
from apps.context.selectors import contact_with_state_and_profile
from apps.core.exceptions import NotFound
from apps.memories.models import MemoryProfile
from apps.tenants.selectors import api_key_resolve
from tests.factories import ApiKeyFactory, ContactFactory

pytestmark = pytest.mark.django_db


def test_contact_state_and_profile_come_in_one_statement(tenant, django_assert_num_queries):
    contact = ContactFactory(tenant=tenant, external_id="wa:1", display_name="Asha", metadata={"city": "Pune"})
    ContactState.objects.create(contact=contact, tenant=tenant, relationship_stage="deep", mood="happy")
    MemoryProfile.objects.create(tenant=tenant, contact=contact, working_memory="Planning a trek", scaffold={"a": 1})
    with django_assert_num_queries(1):
        loaded = contact_with_state_and_profile(tenant=tenant, external_id="wa:1")
        state = joined_one_to_one(loaded, "state", ContactState)
        profile = joined_one_to_one(loaded, "profile", MemoryProfile)
        snapshot = contact_state_snapshot(contact=loaded)
    assert (loaded.pk, loaded.display_name, loaded.metadata) == (contact.pk, "Asha", {"city": "Pune"})
    assert state is not None and (state.relationship_stage, state.mood) == ("deep", "happy")
    assert profile is not None and profile.scaffold == {"a": 1}  # JSON decoded as the ORM does
    assert snapshot["public"]["relationship_stage"] == "deep"
    assert loaded.created_at == contact.created_at and loaded.created_at.tzinfo is not None


def test_a_contact_without_state_or_profile_reads_neutral_defaults_without_asking_again(
    tenant, django_assert_num_queries
):
    ContactFactory(tenant=tenant, external_id="wa:2")
    with django_assert_num_queries(1):
        loaded = contact_with_state_and_profile(tenant=tenant, external_id="wa:2")
        assert joined_one_to_one(loaded, "state", ContactState) is None
        assert joined_one_to_one(loaded, "profile", MemoryProfile) is None
        assert contact_state_snapshot(contact=loaded)["public"]["relationship_stage"] == "new"


def test_another_tenant_s_contact_is_not_found(tenant, other_tenant):
    ContactFactory(tenant=other_tenant, external_id="wa:3")
    with pytest.raises(NotFound):
        contact_with_state_and_profile(tenant=tenant, external_id="wa:3")


def test_api_key_comes_with_its_tenant_in_one_statement(tenant, django_assert_num_queries):
    tenant.settings = {"retrieval_weights": {"contact": {"importance": 0.3}}}
    tenant.save()
    api_key = ApiKeyFactory(tenant=tenant, scopes=("read",))
    with django_assert_num_queries(1):
        resolved = api_key_resolve(plaintext=api_key.plaintext)
        assert resolved is not None
        assert resolved.tenant.pk == tenant.pk and resolved.tenant.settings == tenant.settings
    assert resolved.pk == api_key.pk and resolved.scopes == ["read"]
    api_key.revoked_at = timezone.now()
    api_key.save(update_fields=["revoked_at"])
    assert api_key_resolve(plaintext=api_key.plaintext) is None


def test_get_context_reads_in_a_fixed_number_of_statements(api, tenant, monkeypatch, django_assert_num_queries):
    """API key, contact + state + profile, query terms, scope statistics, candidates, entities of the kept
    memories: six statements, however many memories the scope holds; five once the scope has a lexicon.
    (Plus one UPDATE of the key's last_used_at at most once a minute: the key here was just used. Plus three
    that hold the request to its tenant under row-level security: `none` at the start, the key's tenant once
    authenticated, the reset at the end — apps/core/tenancy.py.)"""
    from apps.memories.retrieval import query as retrieval_query
    from apps.tenants.models import ApiKey

    ApiKey.objects.filter(tenant=tenant).update(last_used_at=timezone.now())
    from apps.memories.retrieval import lexicon
    from tests.memories.test_lexicon import bulk, corpus

    contact = ContactFactory(tenant=tenant, external_id="wa:9")
    ContactState.objects.create(contact=contact, tenant=tenant, relationship_stage="deep")
    bulk(tenant, contact, corpus(60))
    with django_assert_num_queries(6 + 3):
        body = api.get("/api/v1/context/wa:9", {"query": "tomato invoice"}).json()
    assert body["memories"]
    monkeypatch.setattr(lexicon, "LEXICON_FROM", 20)
    monkeypatch.setattr(retrieval_query, "LEXICON_FROM", 20)
    lexicon.scope_lexicon_refresh(tenant_id=tenant.pk, contact_id=contact.pk)
    with django_assert_num_queries(5 + 3):
        assert api.get("/api/v1/context/wa:9", {"query": "piano lesson"}).json()["memories"]
