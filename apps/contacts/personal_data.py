"""The one registry of what Engram holds about a contact: export (GDPR art. 15) and erasure (art. 17) are both
built from `CONTACT_DATA`, so nothing can be erased without being exported, nor exported and left behind.

Each entry names a model (by label: the contact's data lives in the apps above this one, which the app registry
resolves without this module importing them), how its rows of one contact are found, and the export section
they go to. Every concrete field of a registered model is exported under its own name, or under the name the
entry gives it, unless the entry omits it with a reason (a vector or search index derived from exported text).
`tests/contacts/test_personal_data.py` walks every model related to Contact, directly or through other models,
and fails when one is deleted by an erasure but not registered, or is neither registered nor in
`NOT_CONTACT_DATA` with the reason it is not the contact's data.
"""

from __future__ import annotations

import datetime
import decimal
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.apps import apps
from django.db import models
from django.db.models import Q, QuerySet

from apps.contacts.models import Contact
from apps.tenants.models import Tenant

EXPORT_VERSION = 2

# fields no entry exports, for the same reason everywhere
ALWAYS_OMITTED = {
    "tenant": "the exporting tenant: the export's top-level `tenant`",
    "contact": "the exported contact: the export's `contact` section",
}

_DERIVED_VECTOR = "a vector the embedder computed from the exported text; the text is exported"
_DERIVED_INDEX = "a full-text index PostgreSQL derives from the exported text"


@dataclass(frozen=True)
class ContactData:
    """One model's rows of a contact. `lookups` are the paths from the model to the contact (any of them
    matches); `tenant_lookup` the path to its tenant, filtered first. A `nested_in` entry's rows go inside the
    rows of another section: (section, this model's foreign key to it, the key they go under)."""

    label: str
    section: str
    lookups: tuple[str, ...] = ("contact",)
    tenant_lookup: str = "tenant"
    single: bool = False
    renamed: Mapping[str, str] = field(default_factory=dict)
    omitted: Mapping[str, str] = field(default_factory=dict)
    extras: Callable[[Any], dict[str, Any]] | None = None
    related: tuple[str, ...] = ()
    nested_in: tuple[str, str, str] | None = None
    order_by: tuple[str, ...] = ("pk",)

    @property
    def model(self) -> type[models.Model]:
        return apps.get_model(self.label)

    def rows(self, *, tenant: Tenant, contact: Contact) -> QuerySet[Any]:
        match = Q()
        for lookup in self.lookups:
            match |= Q(**{lookup: contact.pk if lookup == "pk" else contact})
        return self.model._default_manager.filter(**{self.tenant_lookup: tenant}).filter(match)

    def exported_fields(self) -> list[models.Field[Any, Any]]:
        skipped = {**ALWAYS_OMITTED, **self.omitted}
        return [field for field in self.model._meta.concrete_fields if field.name not in skipped]


def _json(value: Any) -> Any:
    if isinstance(value, datetime.datetime | datetime.date):
        return value.isoformat()
    if isinstance(value, uuid.UUID | decimal.Decimal):
        return str(value)
    if isinstance(value, list | tuple):
        return [_json(item) for item in value]
    return value


# Erasure deletes the entries in this order (what points at a row before the row), export reads them in it.
CONTACT_DATA: tuple[ContactData, ...] = (
    ContactData(
        "memories.ProfileAudit",
        section="profile_audits",
        lookups=("profile__contact",),
        order_by=("created_at", "id"),
    ),
    ContactData(
        "memories.MemoryRevision",
        section="memory_revisions",
        lookups=("memory__contact",),
        nested_in=("memories", "memory", "history"),
        order_by=("created_at", "id"),
    ),
    ContactData(
        "memories.MemoryEntity",
        section="memory_entities",
        lookups=("memory__contact", "entity__contact"),
        tenant_lookup="memory__tenant",
        nested_in=("memories", "memory", "entity_links"),
        related=("entity",),
        extras=lambda link: {"key": f"{link.entity.entity_type}:{link.entity.slug}"},
    ),
    ContactData(
        "memories.Memory",
        section="memories",
        renamed={"source_message_ids": "sources"},
        omitted={
            "embedding": _DERIVED_VECTOR,
            "context_embedding": _DERIVED_VECTOR,
            "search_vector": _DERIVED_INDEX,
            "scoped_search_vector": _DERIVED_INDEX,
            "context_vector": _DERIVED_INDEX,
            "content_hash": "a digest of the exported content (deduplication)",
        },
        extras=lambda memory: {"is_current": memory.is_current},
        order_by=("created_at", "id"),
    ),
    ContactData("memories.MemoryProfile", section="profile", single=True),
    ContactData(
        "memories.ContextEvent",
        section="events",
        lookups=("contact", "message__contact"),
        renamed={"id": "event_id"},
        order_by=("created_at", "id"),
    ),
    ContactData(
        "entities.Entity",
        section="entities",
        extras=lambda entity: {"key": f"{entity.entity_type}:{entity.slug}"},
        order_by=("entity_type", "slug"),
    ),
    ContactData(
        "conversations.Message",
        section="messages",
        lookups=("contact", "conversation__contact"),
        renamed={"external_id": "message_id"},
        related=("conversation",),
        extras=lambda message: {"conversation_id": message.conversation.external_id},
        order_by=("occurred_at", "id"),
    ),
    ContactData(
        "conversations.Conversation",
        section="conversations",
        renamed={"external_id": "conversation_id"},
        order_by=("started_at", "id"),
    ),
    ContactData("contacts.CrisisReview", section="crisis_reviews", order_by=("created_at", "id")),
    ContactData("contacts.Trigger", section="triggers", order_by=("due_at", "id")),
    ContactData("contacts.Insight", section="insights", order_by=("created_at", "id")),
    ContactData("contacts.InteractionLog", section="mood_history", order_by=("occurred_at", "id")),
    ContactData("contacts.ContactState", section="state", single=True),
    ContactData(
        "contacts.Contact",
        section="contact",
        lookups=("pk",),
        single=True,
        renamed={"external_id": "contact_id"},
    ),
)

# Models related to Contact whose rows are not the contact's data, and why. Erasure must not delete them
# (the test fails if it does: what is deleted must be exported).
NOT_CONTACT_DATA: Mapping[str, str] = {
    "memories.ConsolidationRun": "the lifecycle's run log (job kind, times, counts); erasure clears its link "
    "to the contact (SET NULL) and no personal data is left in it",
}


def _row(entry: ContactData, row: Any) -> dict[str, Any]:
    out = {
        entry.renamed.get(field.name, field.name): _json(getattr(row, field.attname))
        for field in entry.exported_fields()
    }
    if entry.extras is not None:
        out.update(entry.extras(row))
    return out


def contact_export(*, tenant: Tenant, contact: Contact) -> dict[str, Any]:
    """Everything held about the contact, one section per registered model (every field but vectors and
    indexes derived from exported text), a memory's history and entity links inside it. Scoped to `tenant`
    first: a contact of another tenant exports nothing."""
    sections: dict[str, list[dict[str, Any]]] = {}
    for entry in CONTACT_DATA:
        rows = entry.rows(tenant=tenant, contact=contact).select_related(*entry.related).order_by(*entry.order_by)
        sections[entry.section] = [_row(entry, row) for row in rows]
    for entry in CONTACT_DATA:
        if entry.nested_in is None:
            continue
        parent_section, foreign_key, key = entry.nested_in
        children: dict[Any, list[dict[str, Any]]] = {}
        for child in sections.pop(entry.section):
            children.setdefault(child[foreign_key], []).append(child)
        for parent in sections[parent_section]:
            parent[key] = children.get(parent["id"], [])
    export: dict[str, Any] = {"export_version": EXPORT_VERSION, "tenant": tenant.slug}
    for entry in reversed(CONTACT_DATA):
        if entry.section not in sections:
            continue
        section = sections[entry.section]
        export[entry.section] = (section[0] if section else None) if entry.single else section
    return export


def contact_rows_delete(*, tenant: Tenant, contact: Contact) -> dict[str, int]:
    """Delete every registered row of the contact, in the registry's order (the contact row last): rows per
    model label. The caller holds the transaction and the contact's row lock."""
    deleted: dict[str, int] = {}
    for entry in CONTACT_DATA:
        _, counts = entry.rows(tenant=tenant, contact=contact).delete()
        for label, count in counts.items():
            deleted[label] = deleted.get(label, 0) + count
    return {label: count for label, count in sorted(deleted.items()) if count}
