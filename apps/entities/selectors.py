from __future__ import annotations

from collections.abc import Iterable

from django.db.models import QuerySet

from apps.contacts.models import Contact
from apps.entities.models import Entity
from apps.tenants.models import Tenant


def entity_list(*, tenant: Tenant, contact: Contact | None) -> QuerySet[Entity]:
    return Entity.objects.filter(tenant=tenant, contact=contact).order_by("-mention_count", "entity_type", "slug")


def entities_named_in(*, tenant: Tenant, contact: Contact | None, slugs: Iterable[str]) -> list[Entity]:
    """The scope's entities whose slug appears among `slugs` (one indexed query)."""
    slug_set = {slug for slug in slugs if slug}
    if not slug_set:
        return []
    return list(Entity.objects.filter(tenant=tenant, contact=contact, slug__in=slug_set))
