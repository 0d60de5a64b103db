from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, TypeVar

from django.core.exceptions import ObjectDoesNotExist
from django.db.models import F, Model, Q, QuerySet
from django.utils import timezone

from apps.contacts.intelligence import stages
from apps.contacts.models import Contact
from apps.core.exceptions import NotFound
from apps.core.rows import columns, fetch_row, instances
from apps.tenants.models import Tenant

# (tenant, external_id) is unique (contact_unique_external_id_per_tenant): one row at most
_CONTACT_BY_EXTERNAL_ID = (
    f"SELECT {columns(Contact, 'c')} FROM {Contact._meta.db_table} c WHERE c.tenant_id = %s AND c.external_id = %s"
)


def contact_get(*, tenant: Tenant, external_id: str) -> Contact:
    """The tenant's contact `external_id` (NotFound when there is none). Most API requests ask it first: one
    statement, no ORM compilation (as api_key_resolve)."""
    row = fetch_row(_CONTACT_BY_EXTERNAL_ID, [tenant.pk, external_id])
    if row is None:
        raise NotFound(f"Contact '{external_id}' not found.")
    contact = instances(row, [Contact])[0]
    assert isinstance(contact, Contact)
    contact.tenant = tenant  # the caller's tenant object: no second query when the contact's tenant is read
    return contact


def contact_list(*, tenant: Tenant, search: str = "") -> QuerySet[Contact]:
    queryset = Contact.objects.filter(tenant=tenant)
    if search:
        queryset = queryset.filter(Q(external_id__icontains=search) | Q(display_name__icontains=search))
    return queryset.order_by(F("last_seen_at").desc(nulls_last=True), "-created_at")


CRISIS_CONTEXT_HOURS = 24

_Row = TypeVar("_Row", bound=Model)


def joined_one_to_one(contact: Contact, name: str, model: type[_Row]) -> _Row | None:
    """The contact's `state` or `profile` row: the one a selector already joined in (its cache is set),
    else read now."""
    descriptor = getattr(Contact, name)
    if descriptor.is_cached(contact):
        try:
            return getattr(contact, name)
        except ObjectDoesNotExist:
            return None
    return model._default_manager.filter(contact=contact).first()


def contact_state_snapshot(
    *, contact: Contact, now: datetime | None = None, as_of: datetime | None = None
) -> dict[str, Any]:
    """State for GET /context: the public fields (spec names), the emotional-context block for the prompt
    (mood × energy hints, "unusual" note, stage guidance, safety first when in crisis) and the crisis flag.
    Neutral defaults for a contact with no state yet. `as_of`: the relationship stage as of that moment (a
    replayed history asked about as of its last message is not "dormant" because it happened years ago)."""
    from apps.contacts.intelligence.hints import render_emotional_context
    from apps.contacts.models import ContactState
    from apps.contacts.services.state import crisis_guidance_for

    now = now or timezone.now()
    state = joined_one_to_one(contact, "state", ContactState) or ContactState(contact=contact, tenant=contact.tenant)
    stage = state.relationship_stage
    if as_of is not None and state.last_seen_at is not None:
        stage = stages.relationship_stage(
            sessions_count=state.sessions_count,
            active_streak=state.active_streak,
            last_seen_at=state.last_seen_at,
            now=as_of,
        )
    public = {
        "mood": state.mood,
        "mood_confidence": state.mood_confidence,
        "energy": state.energy,
        "style": state.style,
        "relationship_stage": stage,
        "active_streak": state.active_streak,
        "sessions_count": state.sessions_count,
        "churn_risk": state.churn_risk,
        "last_seen_at": state.last_seen_at.isoformat() if state.last_seen_at else None,
    }
    crisis: dict[str, Any] | None = None
    if state.crisis_flag and state.crisis_at and now - state.crisis_at <= timedelta(hours=CRISIS_CONTEXT_HOURS):
        crisis = {"detected": True, "at": state.crisis_at.isoformat(), "guidance": crisis_guidance_for(contact)}
    persona = (contact.tenant.settings or {}).get("persona_flirty", "redirect")
    emotional_block = render_emotional_context(
        mood=state.mood,
        energy=state.energy,
        stage=stage,
        usual_mood=state.usual_mood or None,
        usual_energy=state.usual_energy or None,
        sessions_count=state.sessions_count,
        active_streak=state.active_streak,
        crisis_guidance=str(crisis["guidance"]) if crisis else None,
        persona_flirty=persona,
    )
    return {"public": public, "emotional_block": emotional_block, "crisis": crisis}
