from __future__ import annotations

from django.db.models import F, Q, QuerySet

from apps.contacts.models import Contact
from apps.core.exceptions import NotFound
from apps.tenants.models import Tenant


def contact_get(*, tenant: Tenant, external_id: str) -> Contact:
    contact = Contact.objects.filter(tenant=tenant, external_id=external_id).first()
    if contact is None:
        raise NotFound(f"Contact '{external_id}' not found.")
    return contact


def contact_list(*, tenant: Tenant, search: str = "") -> QuerySet[Contact]:
    queryset = Contact.objects.filter(tenant=tenant)
    if search:
        queryset = queryset.filter(Q(external_id__icontains=search) | Q(display_name__icontains=search))
    return queryset.order_by(F("last_seen_at").desc(nulls_last=True), "-created_at")
