"""Everything Engram holds about one contact, as JSON-ready data (operator export, the inspector's download)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from apps.contacts.models import Contact, InteractionLog
from apps.contacts.selectors import contact_state_snapshot
from apps.conversations.models import Message
from apps.entities.models import Entity
from apps.memories.models import ContextEvent, Memory, MemoryProfile, MemoryRevision
from apps.tenants.models import Tenant

EXPORT_VERSION = 1


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment else None


def _revision(revision: MemoryRevision) -> dict[str, Any]:
    return {
        "action": revision.action,
        "actor": revision.actor,
        "before": revision.before,
        "after": revision.after,
        "related_memory": str(revision.related_memory_id) if revision.related_memory_id else None,
        "note": revision.note,
        "created_at": _iso(revision.created_at),
    }


def _memory(memory: Memory, revisions: list[MemoryRevision]) -> dict[str, Any]:
    return {
        "id": str(memory.pk),
        "memory_type": memory.memory_type,
        "content": memory.content,
        "importance": memory.importance,
        "base_importance": memory.base_importance,
        "decay_rate": memory.decay_rate,
        "access_count": memory.access_count,
        "is_current": memory.is_current,
        "is_pinned": memory.is_pinned,
        "is_compressed": memory.is_compressed,
        "slot": memory.slot,
        "occurred_at": _iso(memory.occurred_at),
        "valid_from": _iso(memory.valid_from),
        "valid_to": _iso(memory.valid_to),
        "superseded_by": str(memory.superseded_by_id) if memory.superseded_by_id else None,
        "compressed_into": str(memory.compressed_into_id) if memory.compressed_into_id else None,
        "deleted_at": _iso(memory.deleted_at),
        "deletion_reason": memory.deletion_reason,
        "expires_at": _iso(memory.expires_at),
        "sources": list(memory.source_message_ids),
        "entities": sorted(entity.key for entity in memory.entities.all()),
        "metadata": memory.metadata,
        "created_by": memory.created_by,
        "created_at": _iso(memory.created_at),
        "history": [_revision(revision) for revision in revisions],
    }


def contact_export(*, tenant: Tenant, contact: Contact) -> dict[str, Any]:
    """The contact, its state and profile, every memory (current or not) with its full history, its entities,
    mood log and messages. Scoped to `tenant` first: a contact of another tenant exports nothing of it."""
    memories = list(
        Memory.objects.filter(tenant=tenant, contact=contact).prefetch_related("entities").order_by("created_at")
    )
    revisions: dict[Any, list[MemoryRevision]] = {memory.pk: [] for memory in memories}
    for revision in MemoryRevision.objects.filter(tenant=tenant, memory__in=memories).order_by("created_at", "id"):
        revisions[revision.memory_id].append(revision)
    profile = MemoryProfile.objects.filter(tenant=tenant, contact=contact).first()
    messages = Message.objects.filter(tenant=tenant, contact=contact).select_related("conversation")
    return {
        "export_version": EXPORT_VERSION,
        "tenant": tenant.slug,
        "contact": {
            "contact_id": contact.external_id,
            "display_name": contact.display_name,
            "channel": contact.channel,
            "metadata": contact.metadata,
            "last_seen_at": _iso(contact.last_seen_at),
            "created_at": _iso(contact.created_at),
        },
        "state": contact_state_snapshot(contact=contact)["public"],
        "profile": {
            "working_memory": profile.working_memory if profile else "",
            "scaffold": profile.scaffold if profile else {},
            "version": profile.version if profile else 0,
        },
        "memories": [_memory(memory, revisions[memory.pk]) for memory in memories],
        "entities": [
            {
                "key": entity.key,
                "entity_type": entity.entity_type,
                "display_name": entity.display_name,
                "metadata": entity.metadata,
                "mention_count": entity.mention_count,
                "last_seen_at": _iso(entity.last_seen_at),
            }
            for entity in Entity.objects.filter(tenant=tenant, contact=contact).order_by("entity_type", "slug")
        ],
        "mood_history": [
            {
                "occurred_at": _iso(row.occurred_at),
                "mood": row.mood,
                "energy": row.energy,
                "style": row.style,
                "confidence": row.confidence,
                "source": row.source,
                "message_id": row.message_id,
            }
            for row in InteractionLog.objects.filter(tenant=tenant, contact=contact).order_by("occurred_at", "id")
        ],
        "events": [
            {
                "event_id": str(event.pk),
                "event_type": event.event_type,
                "content": event.content,
                "source_metadata": event.source_metadata,
                "result": event.result,
                "extracted_at": _iso(event.extracted_at),
                "processed_at": _iso(event.processed_at),
                "created_at": _iso(event.created_at),
            }
            for event in ContextEvent.objects.filter(tenant=tenant, contact=contact).order_by("created_at", "id")
        ],
        "messages": [
            {
                "message_id": message.external_id,
                "conversation_id": message.conversation.external_id,
                "role": message.role,
                "speaker": message.speaker,
                "content": message.content,
                "occurred_at": _iso(message.occurred_at),
            }
            for message in messages.order_by("occurred_at", "id")
        ],
    }
