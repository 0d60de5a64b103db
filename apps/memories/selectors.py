from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.contrib.postgres.search import SearchQuery
from django.db.models import Q, QuerySet

from apps.contacts.models import Contact
from apps.core.exceptions import NotFound
from apps.memories.models import ContextEvent, Memory, MemoryRevision
from apps.tenants.models import Tenant


def memory_get(*, tenant: Tenant, memory_id: Any) -> Memory:
    memory = (
        Memory.objects.select_related("contact")
        .prefetch_related("entities")
        .filter(tenant=tenant, pk=memory_id)
        .first()
    )
    if memory is None:
        raise NotFound("Memory not found.")
    return memory


def memory_list(
    *,
    tenant: Tenant,
    contact: Contact | None = None,
    tenant_scope_only: bool = False,
    memory_types: Iterable[str] = (),
    entity: str = "",
    query: str = "",
    include_superseded: bool = False,
    include_compressed: bool = False,
) -> QuerySet[Memory]:
    memories = Memory.objects.filter(tenant=tenant, deleted_at__isnull=True)
    if contact is not None:
        memories = memories.filter(contact=contact)
    elif tenant_scope_only:
        memories = memories.filter(contact__isnull=True)
    if not include_superseded:
        memories = memories.filter(valid_to__isnull=True)
    if not include_compressed:
        memories = memories.filter(is_compressed=False)
    types = [memory_type for memory_type in memory_types if memory_type]
    if types:
        memories = memories.filter(memory_type__in=types)
    if entity:
        entity_type, _, slug = entity.rpartition(":")
        entity_filter = Q(entities__slug=slug)
        if entity_type:
            entity_filter &= Q(entities__entity_type=entity_type)
        memories = memories.filter(entity_filter).distinct()
    if query:
        memories = memories.filter(
            Q(search_vector=SearchQuery(query, config="english", search_type="websearch")) | Q(content__icontains=query)
        )
    return memories.select_related("contact").prefetch_related("entities").order_by("-created_at")


def memory_history(*, tenant: Tenant, memory: Memory) -> QuerySet[MemoryRevision]:
    return MemoryRevision.objects.filter(tenant=tenant, memory=memory).order_by("created_at", "id")


def event_get(*, tenant: Tenant, event_id: Any) -> ContextEvent:
    event = ContextEvent.objects.select_related("message", "contact").filter(tenant=tenant, pk=event_id).first()
    if event is None:
        raise NotFound("Event not found.")
    return event
