"""Export and erasure are built from one registry of the contact's data (apps/contacts/personal_data.py): every
model related to Contact is in it or excluded with a reason, what an erasure deletes is exported, and a contact
with rows in every registered table gets them all in its export and loses them all in its erasure."""

from __future__ import annotations

import pytest
from django.apps import apps
from django.db import models
from django.utils import timezone

from apps.contacts.models import Contact, ErasureRecord, Insight
from apps.contacts.personal_data import ALWAYS_OMITTED, CONTACT_DATA, NOT_CONTACT_DATA
from apps.contacts.services import trigger_create
from apps.memories.lifecycle.processor import events_process


def _related_models() -> tuple[set[str], set[str]]:
    """(every model that points at Contact, directly or through models that do; the subset an erasure's
    cascade deletes), read from Django's app registry."""
    related: set[str] = {Contact._meta.label}
    cascaded: set[str] = {Contact._meta.label}
    frontier = [Contact]
    while frontier:
        target = frontier.pop()
        for model in apps.get_models(include_auto_created=True):
            for field in model._meta.concrete_fields:
                if not (field.is_relation and field.related_model is target) or model is target:
                    continue
                label = model._meta.label
                cascades = field.remote_field.on_delete is models.CASCADE and target._meta.label in cascaded
                if cascades and label not in cascaded:
                    cascaded.add(label)
                    frontier.append(model)
                if label not in related:
                    related.add(label)
                    frontier.append(model)
    return related, cascaded


def test_every_model_related_to_a_contact_is_exported_and_erased_or_excluded_with_a_reason():
    related, cascaded = _related_models()
    registered = [entry.label for entry in CONTACT_DATA]
    assert len(set(registered)) == len(registered)
    assert len({entry.section for entry in CONTACT_DATA}) == len(CONTACT_DATA)
    # deleted when a contact is erased, but not exported
    assert cascaded - set(registered) == set()
    # related to a contact, in neither list
    assert related - set(registered) - set(NOT_CONTACT_DATA) == set()
    # an exclusion the erasure deletes all the same would be data erased but not exported
    assert set(NOT_CONTACT_DATA) & cascaded == set()
    assert set(NOT_CONTACT_DATA) & set(registered) == set()
    assert all(reason.strip() for reason in NOT_CONTACT_DATA.values())
    assert set(registered) <= related  # nothing registered that is not the contact's
    assert {"contacts.CrisisReview", "contacts.Trigger", "contacts.Insight", "memories.ProfileAudit"} <= cascaded


def test_every_field_of_a_registered_model_is_exported_or_omitted_with_a_reason():
    for entry in CONTACT_DATA:
        names = {field.name for field in entry.model._meta.concrete_fields}
        assert set(entry.omitted) <= names, entry.label
        assert set(entry.renamed) <= names, entry.label
        assert all(reason.strip() for reason in {**ALWAYS_OMITTED, **entry.omitted}.values())
        exported = {field.name for field in entry.exported_fields()}
        assert exported == names - set(entry.omitted) - set(ALWAYS_OMITTED), entry.label


def _rows_of(contact: Contact) -> dict[str, set]:
    return {
        entry.label: set(entry.rows(tenant=contact.tenant, contact=contact).values_list("pk", flat=True))
        for entry in CONTACT_DATA
    }


@pytest.mark.django_db(transaction=True)
def test_a_contact_with_rows_in_every_registered_table_exports_them_all_and_erasure_deletes_them_all(
    api, tenant, other_api, other_tenant
):
    said = ["My dog Bruno is a beagle and I live in Pune.", "I work at Infosys.", "I want to die"]
    for index, text in enumerate(said):
        body = {"contact_id": "pia", "conversation_id": "pia-chat", "message": text, "message_id": f"pia-{index}"}
        assert api.post("/api/v1/ingest", {**body, "role": "user"}, format="json").status_code == 202
    other = {"contact_id": "pia", "conversation_id": "pia-chat", "message": said[0], "role": "user"}
    assert other_api.post("/api/v1/ingest", other, format="json").status_code == 202
    contact = Contact.objects.get(tenant=tenant, external_id="pia")
    trigger_create(
        contact=contact, kind="check_in", reason="said they were low", dedupe_key="low", earliest=timezone.now()
    )
    Insight.objects.create(
        tenant=tenant, contact=contact, kind="engagement_decline_bored", text="Pia seems bored", dedupe_key="pia-bored"
    )
    events_process()  # the processor's profile and its audit
    stranger = Contact.objects.get(tenant=other_tenant, external_id="pia")
    kept = _rows_of(stranger)

    before = _rows_of(contact)
    assert [label for label, ids in before.items() if not ids] == []  # a row in every registered table

    export = api.get("/api/v1/contacts/pia/export").json()
    assert export["export_version"] == 2 and export["tenant"] == tenant.slug
    nested = {entry.section: entry.nested_in for entry in CONTACT_DATA if entry.nested_in}
    for entry in CONTACT_DATA:
        if entry.section in nested:
            parent, _, key = nested[entry.section]
            rows = [child for row in export[parent] for child in row[key]]
        else:
            section = export[entry.section]
            rows = [section] if entry.single else section
        assert len(rows) == len(before[entry.label]), entry.label
        expected = {entry.renamed.get(field.name, field.name) for field in entry.exported_fields()}
        for row in rows:
            assert expected <= set(row), (entry.label, expected - set(row))
    assert export["state"]["crisis_flag"] is True and export["state"]["crisis_at"]  # private state fields
    assert [review["excerpt"] for review in export["crisis_reviews"]] == ["I want to die"]
    assert export["triggers"][0]["reason"] == "said they were low"
    assert export["insights"][0]["text"] == "Pia seems bored"
    assert export["profile_audits"] and export["profile_audits"][0]["working_memory_after"]
    assert [message["content"] for message in export["messages"]] == said
    assert export["contact"]["contact_id"] == "pia" and export["messages"][0]["conversation_id"] == "pia-chat"

    assert api.delete("/api/v1/contacts/pia").status_code == 204

    for entry in CONTACT_DATA:
        assert not entry.model._default_manager.filter(pk__in=before[entry.label]).exists(), entry.label
    record = ErasureRecord.objects.get(tenant=tenant)
    assert set(record.rows) == {entry.label for entry in CONTACT_DATA}
    assert record.rows["contacts.CrisisReview"] == 1 and record.rows["conversations.Message"] == 3
    assert _rows_of(stranger) == kept  # the same id at another tenant keeps everything
    assert other_api.get("/api/v1/contacts/pia/export").json()["messages"][0]["content"] == said[0]


@pytest.mark.django_db
def test_a_contact_of_another_tenant_exports_nothing_of_it(tenant, other_tenant):
    from apps.contacts.personal_data import contact_export
    from tests.factories import ContactFactory

    contact = ContactFactory(tenant=other_tenant)
    Insight.objects.create(tenant=other_tenant, contact=contact, kind="k", text="secret", dedupe_key="x")
    export = contact_export(tenant=tenant, contact=contact)
    assert export["contact"] is None and export["insights"] == []
