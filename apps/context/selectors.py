"""Reads of the context endpoints that are theirs alone."""

from __future__ import annotations

from apps.contacts.models import Contact, ContactState
from apps.conversations.models import Conversation
from apps.conversations.selectors import conversation_get
from apps.core.exceptions import ApplicationError, NotFound
from apps.core.rows import columns, fetch_row, instances
from apps.memories.models import MemoryProfile
from apps.tenants.models import Tenant

_CONTACT_WITH_STATE_AND_PROFILE = (
    f"SELECT {columns(Contact, 'c')}, {columns(ContactState, 's')}, {columns(MemoryProfile, 'p')} "
    f"FROM {Contact._meta.db_table} c "
    f"LEFT JOIN {ContactState._meta.db_table} s ON s.contact_id = c.id "
    f"LEFT JOIN {MemoryProfile._meta.db_table} p ON p.contact_id = c.id "
    "WHERE c.tenant_id = %s AND c.external_id = %s"
)


def contact_with_state_and_profile(*, tenant: Tenant, external_id: str) -> Contact:
    """The tenant's contact with its state and memory profile (either may be missing) in one statement:
    GET /context reads all three on every call. `contact.state` / `contact.profile` are set (or known
    absent), so reading them costs no further query."""
    row = fetch_row(_CONTACT_WITH_STATE_AND_PROFILE, [tenant.pk, external_id])
    if row is None:
        raise NotFound(f"Contact '{external_id}' not found.")
    contact, state, profile = instances(row, [Contact, ContactState, MemoryProfile])
    assert isinstance(contact, Contact)
    contact.tenant = tenant
    for name, related in (("state", state), ("profile", profile)):
        if related is not None:
            setattr(contact, name, related)  # caches both sides of the one-to-one
        else:  # known absent: reading it raises DoesNotExist without asking the database
            getattr(Contact, name).related.set_cached_value(contact, None)
    return contact


def contact_conversation(*, tenant: Tenant, contact: Contact, external_id: str) -> Conversation | None:
    """The contact's conversation whose session window is already in the prompt; an unknown id is none."""
    return Conversation.objects.filter(tenant=tenant, contact=contact, external_id=external_id).first()


def brain_conversation(*, tenant: Tenant, external_id: str) -> Conversation:
    """One of the tenant's own conversations with its AI (ingested without a contact), for POST /brain/context:
    an unknown id is a 404, a contact's conversation a 409 (ingest keeps the brain's and the contacts' apart)."""
    conversation = conversation_get(tenant=tenant, external_id=external_id)
    if conversation.contact_id is not None:
        raise ApplicationError(
            f"Conversation '{external_id}' belongs to a contact, not to the tenant's brain.",
            code="conflict",
            status_code=409,
            details={"conversation_id": ["This conversation belongs to a contact."]},
        )
    return conversation
