from __future__ import annotations

from typing import Any

from apps.memories.models import Memory, MemoryRevision

SYSTEM = "system"


def memory_snapshot(memory: Memory) -> dict[str, Any]:
    """The fields a reviewer needs to see change in a revision."""
    return {
        "content": memory.content,
        "memory_type": memory.memory_type,
        "importance": memory.importance,
        "is_pinned": memory.is_pinned,
        "is_compressed": memory.is_compressed,
        "valid_to": memory.valid_to.isoformat() if memory.valid_to else None,
        "superseded_by": str(memory.superseded_by_id) if memory.superseded_by_id else None,
        "outdated_by": str(memory.outdated_by_id) if memory.outdated_by_id else None,
        "deleted_at": memory.deleted_at.isoformat() if memory.deleted_at else None,
        "access_count": memory.access_count,
        "source_message_ids": list(memory.source_message_ids),
    }


def revision_record(
    *,
    memory: Memory,
    action: str,
    actor: str,
    before: dict[str, Any] | None = None,
    after: dict[str, Any] | None = None,
    related_memory: Memory | None = None,
    note: str = "",
) -> MemoryRevision:
    return MemoryRevision.objects.create(
        memory=memory,
        tenant_id=memory.tenant_id,
        action=action,
        actor=actor,
        before=before or {},
        after=after if after is not None else memory_snapshot(memory),
        related_memory=related_memory,
        note=note[:300],
    )


def revision_changes(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in after.items() if before.get(key) != value}
