from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
from django.contrib.postgres.search import SearchQuery
from django.db import connection
from django.db.models import Q, QuerySet

from apps.contacts.models import Contact
from apps.core.embeddings import memory_text
from apps.core.exceptions import NotFound
from apps.core.vectors import vector_from_send
from apps.memories.models import ContextEvent, Memory, MemoryRevision
from apps.tenants.models import Tenant


def memory_get(*, tenant: Tenant, memory_id: Any, include_deleted: bool = False) -> Memory:
    """A memory of the tenant through the API: a deleted one (soft-deleted, pruned) is not served — not its
    content, not its history (operators see it in the admin and the inspector's history) — unless
    `include_deleted` (a hard delete of what was deleted before)."""
    queryset = Memory.objects.filter(tenant=tenant, pk=memory_id)
    if not include_deleted:
        queryset = queryset.filter(deleted_at__isnull=True)
    memory = queryset.select_related("contact").prefetch_related("entities").first()
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
    key: str = "",
    key_prefix: str | None = None,
) -> QuerySet[Memory]:
    """`key`: the keyed record with that key; `key_prefix` (even empty): only keyed records whose key starts
    with it (editing.memory_put)."""
    memories = Memory.objects.filter(tenant=tenant, deleted_at__isnull=True)
    if key:
        memories = memories.filter(key=key)
    elif key_prefix is not None:
        memories = memories.exclude(key="").filter(key__startswith=key_prefix)
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


@dataclass(frozen=True)
class EpisodeAnchor:
    """A point in a conversation: `key` is the caller's; the episode before it is wanted."""

    key: Any
    session_id: str
    occurred_at: datetime
    sequence: int


@dataclass(frozen=True)
class EpisodeBefore:
    embedding: np.ndarray
    text: str  # what the embedding was computed from (memory_text)


def episodes_before(*, tenant_id: Any, anchors: Sequence[EpisodeAnchor]) -> dict[Any, EpisodeBefore]:
    """For each anchor, the current episode just before it in its conversation, in ledger order (time, then
    arrival), through memory_session_turn_idx. One statement."""
    if not anchors:
        return {}
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT a.key, vector_send(n.embedding::vector), n.content, n.index_terms "
            "FROM unnest(%s::text[], %s::text[], %s::timestamptz[], %s::bigint[]) AS a(key, session_id, at, seq) "
            "CROSS JOIN LATERAL (SELECT n.embedding, n.content, n.index_terms FROM memories_memory n "
            "  WHERE n.tenant_id = %s AND n.memory_type = 'episode' AND n.source_session_id = a.session_id "
            "  AND n.source_session_id <> '' AND (n.occurred_at, n.source_sequence) < (a.at, a.seq) "
            "  AND n.valid_to IS NULL AND n.deleted_at IS NULL AND n.embedding IS NOT NULL "
            "  ORDER BY n.occurred_at DESC, n.source_sequence DESC LIMIT 1) n",
            [
                [str(anchor.key) for anchor in anchors],
                [anchor.session_id for anchor in anchors],
                [anchor.occurred_at for anchor in anchors],
                [anchor.sequence for anchor in anchors],
                tenant_id,
            ],
        )
        rows = cursor.fetchall()
    keys = {str(anchor.key): anchor.key for anchor in anchors}
    return {
        keys[key]: EpisodeBefore(
            embedding=vector_from_send(embedding),
            text=memory_text(content=content, index_terms=index_terms),
        )
        for key, embedding, content, index_terms in rows
    }
