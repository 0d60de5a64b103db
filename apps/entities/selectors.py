from __future__ import annotations

from django.db.models import QuerySet

from apps.contacts.models import Contact
from apps.entities.models import Entity
from apps.tenants.models import Tenant


def entity_list(*, tenant: Tenant, contact: Contact | None) -> QuerySet[Entity]:
    return Entity.objects.filter(tenant=tenant, contact=contact).order_by("-mention_count", "entity_type", "slug")
