"""Operator actions on selected memories (Django admin): re-embed, recompute importance, merge, supersede.

Each one goes through the same write primitives as the lifecycle (`memory_merge`, `memory_supersede`,
`revision_record`), so every change lands in the memory's history with the operator as actor.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import numpy as np
from django.db import transaction
from django.utils import timezone

from apps.core.exceptions import ApplicationError
from apps.memories import scoring
from apps.memories.extraction import salience
from apps.memories.models import Memory, MemoryEntity, MemoryRevision
from apps.memories.store.merging import memory_merge
from apps.memories.store.revisions import memory_snapshot, revision_record
from apps.memories.store.writing import (
    EMBEDDING_FIELDS,
    RECENT_SAMPLE,
    current_memories,
    memories_vectors_refresh,
    memory_supersede,
)


def _scope_centroid(memory: Memory) -> np.ndarray | None:
    """The centroid of the scope's other recent current memories: what "novel" is measured against."""
    rows = list(
        current_memories(tenant=memory.tenant, contact=memory.contact)
        .filter(embedding__isnull=False, is_compressed=False)
        .exclude(pk=memory.pk)
        .order_by("-created_at")
        .values_list("embedding", flat=True)[:RECENT_SAMPLE]
    )
    if not rows:
        return None
    return np.asarray(rows, dtype=np.float32).mean(axis=0)


@transaction.atomic
def memory_importance_recompute(*, memory: Memory, actor: str, now: datetime | None = None) -> Memory:
    """Re-run the write-time formula (novelty against the scope today × salience, blended with the type
    default) for a new base importance, then apply the decay it has earned since it was last used.
    The decay clock is not restarted: recomputing is not a use."""
    now = now or timezone.now()
    memory = Memory.objects.select_for_update().get(pk=memory.pk)
    if memory.embedding is None:
        raise ApplicationError("The memory has no embedding yet; re-embed it first.", code="conflict", status_code=409)
    vector = np.asarray(memory.embedding, dtype=np.float32)
    centroid = _scope_centroid(memory)
    novelty = scoring.novelty(vector.tolist(), None if centroid is None else centroid.tolist())
    has_entity = MemoryEntity.objects.filter(memory=memory).exists()
    memory_salience = salience(memory.content, has_entity=has_entity)
    type_default, _ = scoring.type_defaults(memory.memory_type, is_tenant_scope=memory.contact_id is None)
    _, base = scoring.importance_score(novelty=novelty, salience=memory_salience, type_default=type_default)
    before = memory_snapshot(memory)
    memory.base_importance = base
    memory.importance = scoring.decayed_importance(
        base_importance=base,
        decay_rate=memory.decay_rate,
        anchor_at=memory.accessed_at,
        now=now,
        is_pinned=memory.is_pinned,
        memory_type=memory.memory_type,
    )
    memory.save(update_fields=["importance", "base_importance", "updated_at"])
    revision_record(
        memory=memory,
        action=MemoryRevision.Action.IMPORTANCE_RECOMPUTED,
        actor=actor,
        before=before,
        note=f"novelty {novelty:.3f}, salience {memory_salience:.3f} → base {base}, now {memory.importance}",
    )
    return memory


def memories_reembed(*, memories: Sequence[Memory], actor: str) -> int:
    """Re-embed the given memories with the configured model, one revision each. (A whole tenant or the
    whole store: apps.memories.store.reembed.reembed.)"""
    if not memories:
        return 0
    previous = {memory.pk: memory.embedding_model for memory in memories}
    memories_vectors_refresh(memories)
    with transaction.atomic():
        for memory in memories:
            memory.save(update_fields=[*EMBEDDING_FIELDS, "updated_at"])
            revision_record(
                memory=memory,
                action=MemoryRevision.Action.REEMBEDDED,
                actor=actor,
                before={"embedding_model": previous[memory.pk]},
                after={"embedding_model": memory.embedding_model},
            )
    return len(memories)


def _same_scope(memories: Sequence[Memory]) -> bool:
    first = memories[0]
    return all(
        memory.tenant_id == first.tenant_id
        and memory.contact_id == first.contact_id
        and memory.memory_type == first.memory_type
        for memory in memories
    )


@transaction.atomic
def memories_merge_selected(*, memories: Sequence[Memory], actor: str) -> Memory:
    """Merge two or more current memories of one scope and type into one (the most important survives;
    the more specific content is kept). The others stay in history, superseded by the survivor."""
    if len(memories) < 2:
        raise ApplicationError("Select at least two memories to merge.")
    if not _same_scope(memories):
        raise ApplicationError("Only memories of the same tenant, contact and type can be merged.")
    if not all(memory.is_current for memory in memories):
        raise ApplicationError("Only current memories can be merged (not superseded or deleted ones).")
    survivor, *absorbed = sorted(memories, key=lambda memory: (-memory.importance, memory.created_at))
    for other in absorbed:
        merged = memory_merge(survivor=survivor, absorbed=other, actor=actor)
        if merged is None:
            raise ApplicationError("A selected memory changed meanwhile (merged or superseded); reload and retry.")
        survivor = merged
    return survivor


@transaction.atomic
def memory_supersede_manual(*, old: Memory, new: Memory, actor: str, note: str = "") -> Memory:
    """An operator says `new` replaces `old`: `old` leaves context and is kept in history."""
    old = Memory.objects.select_for_update().get(pk=old.pk)
    new = Memory.objects.select_for_update().get(pk=new.pk)
    if old.pk == new.pk:
        raise ApplicationError("A memory cannot supersede itself.")
    if old.tenant_id != new.tenant_id or old.contact_id != new.contact_id:
        raise ApplicationError("Both memories must belong to the same tenant and contact.")
    if not (old.is_current and new.is_current):
        raise ApplicationError("Both memories must be current.", code="conflict", status_code=409)
    return memory_supersede(old=old, new=new, actor=actor, at=timezone.now(), note=note or "superseded by an operator")
