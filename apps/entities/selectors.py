from __future__ import annotations

from django.db.models import QuerySet

from apps.contacts.models import Contact
from apps.entities.models import NOT_A_NAME, Entity
from apps.tenants.models import Tenant


def entity_list(*, tenant: Tenant, contact: Contact | None) -> QuerySet[Entity]:
    """The scope's entities, most mentioned first; words found not to be names (models.NOT_A_NAME) left out."""
    return (
        Entity.objects.filter(tenant=tenant, contact=contact)
        .exclude(metadata__has_key=NOT_A_NAME)
        .order_by("-mention_count", "entity_type", "slug")
    )
