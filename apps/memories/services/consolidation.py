"""Deferred consolidation (per conversation, ~5 minutes after a burst of turns) and the periodic driver.

Deferred, per conversation: retry unfinished extraction, merge near-duplicates (cosine > 0.92, same type
and scope; the more specific content wins; importance = max + 0.05), link entities named anywhere in the
conversation, boost memories tied to a decision with a positive outcome (+0.1).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone
from pgvector.django import CosineDistance

from apps.contacts.models import Contact
from apps.conversations.models import Conversation, Message
from apps.entities.services import entity_upsert_many
from apps.memories import scoring
from apps.memories.extraction import extract
from apps.memories.models import ConsolidationRun, ContextEvent, Memory, MemoryEntity, MemoryRevision
from apps.memories.services.ingest import event_extract
from apps.memories.services.revisions import SYSTEM, memory_snapshot, revision_record
from apps.tenants.models import Tenant

logger = logging.getLogger(__name__)

EXTRACTION_RETRY_AFTER = timedelta(seconds=30)
MAX_EXTRACTION_ATTEMPTS = 5


@contextmanager
def run_logged(
    *, kind: str, tenant: Tenant | None = None, contact: Contact | None = None, now: datetime | None = None
) -> Iterator[dict[str, Any]]:
    """A ConsolidationRun row around a job: stats filled in by the job, errors recorded, then re-raised."""
    run = ConsolidationRun.objects.create(kind=kind, tenant=tenant, contact=contact, started_at=now or timezone.now())
    stats: dict[str, Any] = {}
    try:
        yield stats
    except Exception as exc:
        ConsolidationRun.objects.filter(pk=run.pk).update(
            status="failed", error=repr(exc)[:4000], stats=stats, finished_at=timezone.now()
        )
        raise
    ConsolidationRun.objects.filter(pk=run.pk).update(status="done", stats=stats, finished_at=timezone.now())


def _extract_events(events: list[ContextEvent]) -> int:
    done = 0
    for event in events:
        try:
            event_extract(event=event, actor=SYSTEM)
            done += 1
        except Exception as exc:
            logger.exception("Extraction retry failed for event %s", event.pk)
            ContextEvent.objects.filter(pk=event.pk).update(attempts=event.attempts + 1, last_error=repr(exc)[:2000])
    return done


def pending_events_extract(*, limit: int = 500) -> int:
    """Events whose inline extraction never completed (the request died, a rule raised) are retried."""
    cutoff = timezone.now() - EXTRACTION_RETRY_AFTER
    events = list(
        ContextEvent.objects.select_related("tenant", "contact", "message")
        .filter(extracted_at__isnull=True, created_at__lt=cutoff, attempts__lt=MAX_EXTRACTION_ATTEMPTS)
        .order_by("created_at")[:limit]
    )
    return _extract_events(events)


def _specificity(memory: Memory) -> tuple[int, int, int]:
    """More specific content wins a merge: more numbers, more named words, then more words."""
    numbers = len(re.findall(r"\d", memory.content))
    names = len(re.findall(r"(?<!^)\b[A-Z][a-z]+", memory.content))
    return numbers, names, len(memory.content.split())


def memory_merge(*, survivor: Memory, absorbed: Memory, actor: str, similarity: float | None = None) -> Memory:
    """Merge `absorbed` into `survivor`: the more specific content is kept, importance = max + 0.05,
    provenance and entity links unioned; `absorbed` is kept as superseded by the survivor."""
    with transaction.atomic():
        survivor = Memory.objects.select_for_update().get(pk=survivor.pk)
        absorbed = Memory.objects.select_for_update().get(pk=absorbed.pk)
        before = memory_snapshot(survivor)
        if _specificity(absorbed) > _specificity(survivor):
            survivor.content, survivor.content_hash = absorbed.content, absorbed.content_hash
            survivor.embedding, survivor.embedding_model = absorbed.embedding, absorbed.embedding_model
            survivor.context_embedding = absorbed.context_embedding
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


def near_duplicates_merge(*, tenant: Tenant, contact: Contact | None, since: datetime | None = None) -> int:
    """Merge memories of the same type and scope above the merge similarity (0.92)."""
    scope = Memory.objects.filter(
        tenant=tenant,
        contact=contact,
        valid_to__isnull=True,
        deleted_at__isnull=True,
        is_compressed=False,
        embedding__isnull=False,
    )
    recent = scope.filter(updated_at__gte=since) if since else scope
    merged = 0
    for memory in list(recent.order_by("created_at")):
        if not Memory.objects.filter(pk=memory.pk, valid_to__isnull=True, deleted_at__isnull=True).exists():
            continue  # absorbed earlier in this run
        neighbour = (
            scope.filter(memory_type=memory.memory_type)
            .exclude(pk=memory.pk)
            .annotate(distance=CosineDistance("embedding", memory.embedding))
            .order_by("distance")
            .first()
        )
        if neighbour is None:
            continue
        similarity = 1.0 - float(neighbour.distance)  # type: ignore[attr-defined]
        polarity_differs = memory.metadata.get("polarity", 0) != neighbour.metadata.get("polarity", 0)
        slots_differ = bool(memory.slot and neighbour.slot and memory.slot != neighbour.slot)
        if similarity <= scoring.MERGE_SIMILARITY or polarity_differs or slots_differ:
            continue
        older, newer = sorted([memory, neighbour], key=lambda item: item.created_at)
        memory_merge(survivor=older, absorbed=newer, actor=SYSTEM, similarity=similarity)
        merged += 1
    return merged


def conversation_entities_link(*, conversation: Conversation) -> int:
    """Entities named anywhere in the conversation are linked to the scope's memories that mention them."""
    contact = conversation.contact
    texts = list(
        Message.objects.filter(conversation=conversation, role=Message.ROLE_USER).values_list("content", flat=True)
    )
    mentions = [entity for text in texts for entity in extract(text, scope="contact", role="user").entities]
    if not mentions:
        return 0
    at = conversation.last_message_at
    entities = entity_upsert_many(tenant=conversation.tenant, contact=contact, entities=mentions, at=at)
    scope = Memory.objects.filter(
        tenant=conversation.tenant, contact=contact, valid_to__isnull=True, deleted_at__isnull=True
    )
    links: list[MemoryEntity] = []
    for entity in entities.values():
        # PostgreSQL regex: \m and \M are the start and end of a word
        candidates = scope.filter(content__iregex=r"\m" + re.escape(entity.display_name) + r"\M")
        already = set(MemoryEntity.objects.filter(entity=entity).values_list("memory_id", flat=True))
        links += [MemoryEntity(memory=memory, entity=entity) for memory in candidates if memory.pk not in already]
    MemoryEntity.objects.bulk_create(links, ignore_conflicts=True)
    return len(links)


def outcomes_boost(*, conversation: Conversation) -> int:
    """A message carrying metadata {"outcome": "positive", "decision_message_id": "<id>"} boosts, once, the
    memories that came from the decision message by +0.1 (ai-brain-memory.txt §4.3, outcome-boosted)."""
    boosted = 0
    outcomes = Message.objects.filter(conversation=conversation, metadata__outcome="positive")
    for message in outcomes:
        decision_id = message.metadata.get("decision_message_id")
        if not decision_id:
            continue
        related = Memory.objects.filter(
            tenant=conversation.tenant,
            source_message_ids__contains=[decision_id],
            valid_to__isnull=True,
            deleted_at__isnull=True,
        )
        for memory in related:
            if message.external_id in memory.metadata.get("outcome_boosted_by", []):
                continue  # each outcome boosts once
            before = memory_snapshot(memory)
            memory.importance = round(scoring.clamp(memory.importance + scoring.OUTCOME_BOOST), 4)
            memory.base_importance = memory.importance
            boosted_by = list(memory.metadata.get("outcome_boosted_by", []))
            memory.metadata = {**memory.metadata, "outcome_boosted_by": [*boosted_by, message.external_id]}
            memory.save(update_fields=["importance", "base_importance", "metadata", "updated_at"])
            revision_record(
                memory=memory,
                action=MemoryRevision.Action.IMPORTANCE_RECOMPUTED,
                actor=SYSTEM,
                before=before,
                note=f"positive outcome reported in message {message.external_id}",
            )
            boosted += 1
    return boosted


def conversation_consolidate(*, conversation_id: str) -> dict[str, int]:
    conversation = Conversation.objects.filter(pk=conversation_id).select_related("tenant", "contact").first()
    if conversation is None:
        return {}
    with run_logged(
        kind=ConsolidationRun.KIND_DEFERRED, tenant=conversation.tenant, contact=conversation.contact
    ) as stats:
        events = list(
            ContextEvent.objects.select_related("tenant", "contact", "message").filter(
                conversation=conversation, extracted_at__isnull=True, attempts__lt=MAX_EXTRACTION_ATTEMPTS
            )
        )
        stats["extracted"] = _extract_events(events)
        stats["merged"] = near_duplicates_merge(
            tenant=conversation.tenant,
            contact=conversation.contact,
            since=conversation.started_at - timedelta(minutes=1),
        )
        stats["entity_links"] = conversation_entities_link(conversation=conversation)
        stats["outcome_boosted"] = outcomes_boost(conversation=conversation)
    return stats
