"""Merging memories into one: the deferred consolidation's near-duplicates and bursts (lifecycle/deferred.py)
and an operator's merge of selected memories (operations.py) write through it."""

from __future__ import annotations

import re
from typing import Any

from django.db import transaction
from django.utils import timezone

from apps.core.embeddings import content_hash
from apps.memories import scoring
from apps.memories.extraction.dates import index_terms_split
from apps.memories.extraction.index_words import index_only_words, with_index_only
from apps.memories.models import Memory, MemoryEntity, MemoryRevision
from apps.memories.models.memory import INDEX_TERMS_LENGTH
from apps.memories.store.revisions import memory_snapshot, revision_record
from apps.memories.store.writing import CONDITION_KEY, context_tsvector, memories_vectors_refresh, with_condition


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
        _links_take(survivor, [absorbed])
        note = f"merged near-duplicate (cosine {similarity:.3f})" if similarity is not None else "merged"
        _absorb(
            survivor=survivor,
            absorbed=absorbed,
            survivor_before=before,
            actor=actor,
            note=note,
            absorbed_note=f"{note} into {survivor.pk}",
        )
    return survivor


def _links_take(survivor: Memory, absorbed: list[Memory]) -> None:
    """The survivor links every entity the absorbed memories link (one read, one insert)."""
    MemoryEntity.objects.bulk_create(
        [
            MemoryEntity(memory=survivor, entity_id=link.entity_id)
            for link in MemoryEntity.objects.filter(memory__in=absorbed)
        ],
        ignore_conflicts=True,
    )


def _absorb(
    *, survivor: Memory, absorbed: Memory, survivor_before: dict[str, Any], actor: str, note: str, absorbed_note: str
) -> None:
    """`absorbed` is kept, superseded by `survivor`; each gets a `merged` revision naming the other."""
    revision_record(
        memory=survivor,
        action=MemoryRevision.Action.MERGED,
        actor=actor,
        before=survivor_before,
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
        note=absorbed_note,
    )


def burst_join(*, parts: list[Memory], content: str, context_words: str, actor: str) -> Memory | None:
    """Join the episodes of one burst (lifecycle/burst_rules.py) into the first: its content becomes `content`
    (their texts in order), re-embedded, its context embedding too; its keyword context `context_words` (the
    turn before the burst, the burst, the turn after, as a whole turn's is); sources, index terms (the days they
    name) and entity links are the union of all; importance the highest. The others are kept, superseded by it,
    each with a `merged` revision (and one on the first per part). None, and nothing written, when any is no
    longer current (a concurrent run merged it)."""
    with transaction.atomic():
        locked = Memory.objects.select_for_update().in_bulk([part.pk for part in parts])
        parts = [locked[part.pk] for part in parts if part.pk in locked]
        if len(parts) != len(locked) or len(parts) < 2 or not all(part.is_current for part in parts):
            return None
        first, rest = parts[0], parts[1:]
        before = memory_snapshot(first)
        terms: list[str] = []
        for part in parts:
            for term in index_terms_split(part.index_terms):
                if term not in terms and len(" ".join([*terms, term])) <= INDEX_TERMS_LENGTH:
                    terms.append(term)
        implied = list(dict.fromkeys(word for part in parts for word in index_only_words(part.index_terms)))
        first.content, first.content_hash = content, content_hash(content)
        first.index_terms = with_index_only(" ".join(terms), implied, limit=INDEX_TERMS_LENGTH)
        # re-embedded as ingest embeds an episode; its context embedding mixes the joined text (not the first
        # part's alone) with the episode before it
        memories_vectors_refresh([first])
        first.importance = round(max(part.importance for part in parts), 4)
        first.base_importance = first.importance
        first.source_message_ids = list(dict.fromkeys(mid for part in parts for mid in part.source_message_ids))
        first.source_event_ids = list(dict.fromkeys(eid for part in parts for eid in part.source_event_ids))
        first.context_vector = context_tsvector(context_words)  # written by the same UPDATE as the rest
        first.save()
        _links_take(first, rest)
        for part in rest:
            _absorb(
                survivor=first,
                absorbed=part,
                survivor_before=before,
                actor=actor,
                note="joined the next message of the same burst",
                absorbed_note=f"part of a burst, joined into {first.pk}",
            )
    return first
