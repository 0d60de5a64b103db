"""Merging two memories into one: the deferred consolidation's near-duplicates (lifecycle/deferred.py) and an
operator's merge of selected memories (operations.py) write through it."""

from __future__ import annotations

import re

from django.db import transaction
from django.utils import timezone

from apps.memories import scoring
from apps.memories.models import Memory, MemoryEntity, MemoryRevision
from apps.memories.store.revisions import memory_snapshot, revision_record
from apps.memories.store.writing import CONDITION_KEY, with_condition


def _specificity(memory: Memory) -> tuple[int, int, int]:
    """More specific content wins a merge: more numbers, more named words, then more words."""
    numbers = len(re.findall(r"\d", memory.content))
    names = len(re.findall(r"(?<!^)\b[A-Z][a-z]+", memory.content))
    return numbers, names, len(memory.content.split())


def memory_merge(*, survivor: Memory, absorbed: Memory, actor: str, similarity: float | None = None) -> Memory | None:
    """Merge `absorbed` into `survivor`: the more specific content is kept, importance = max + 0.05,
    provenance (source message and event ids) and entity links unioned; `absorbed` is kept as superseded by
    the survivor. None, and nothing written, when either is no longer current (a concurrent run merged it)."""
    with transaction.atomic():
        locked = Memory.objects.select_for_update().in_bulk([survivor.pk, absorbed.pk])
        survivor, absorbed = locked[survivor.pk], locked[absorbed.pk]
        if not (survivor.is_current and absorbed.is_current):
            return None
        before = memory_snapshot(survivor)
        if _specificity(absorbed) > _specificity(survivor):
            survivor.content, survivor.content_hash = absorbed.content, absorbed.content_hash
            survivor.embedding, survivor.embedding_model = absorbed.embedding, absorbed.embedding_model
            survivor.context_embedding = absorbed.context_embedding
            # a standing instruction's condition goes with its text (its context embedding is the condition's)
            survivor.metadata = with_condition(survivor.metadata, (absorbed.metadata or {}).get(CONDITION_KEY, ""))
        survivor.importance = round(
            scoring.clamp(max(survivor.importance, absorbed.importance) + scoring.MERGE_BOOST), 4
        )
        survivor.base_importance = survivor.importance
        survivor.access_count += absorbed.access_count
        survivor.accessed_at = max(survivor.accessed_at, absorbed.accessed_at)
        survivor.source_message_ids = list(dict.fromkeys([*survivor.source_message_ids, *absorbed.source_message_ids]))
        survivor.source_event_ids = list(dict.fromkeys([*survivor.source_event_ids, *absorbed.source_event_ids]))
        survivor.save()
        MemoryEntity.objects.bulk_create(
            [
                MemoryEntity(memory=survivor, entity_id=link.entity_id)
                for link in MemoryEntity.objects.filter(memory=absorbed)
            ],
            ignore_conflicts=True,
        )
        note = f"merged near-duplicate (cosine {similarity:.3f})" if similarity is not None else "merged"
        revision_record(
            memory=survivor,
            action=MemoryRevision.Action.MERGED,
            actor=actor,
            before=before,
            related_memory=absorbed,
            note=note,
        )
        absorbed_before = memory_snapshot(absorbed)
        absorbed.valid_to = timezone.now()
        absorbed.superseded_by = survivor
        absorbed.save(update_fields=["valid_to", "superseded_by", "updated_at"])
        revision_record(
            memory=absorbed,
            action=MemoryRevision.Action.MERGED,
            actor=actor,
            before=absorbed_before,
            related_memory=survivor,
            note=f"{note} into {survivor.pk}",
        )
    return survivor
