"""Periodic consolidation (every 6 hours, per tenant and contact): decay, episode→pattern compression,
session compression, pruning, purging. Every job takes `now`, so tests and the simulated year run them
on a controlled clock, and every job is idempotent."""

from __future__ import annotations

import logging
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import numpy as np
from django.conf import settings
from django.db import connection, transaction
from django.db.models import Min, Q

from apps.contacts.models import Contact
from apps.entities.models import Entity
from apps.memories import scoring
from apps.memories.lifecycle import summarise
from apps.memories.lifecycle.decay import decayed_importance_sql
from apps.memories.models import Memory, MemoryEntity, MemoryRevision
from apps.memories.store.editing import memory_delete
from apps.memories.store.revisions import SYSTEM, memory_snapshot, revision_record
from apps.memories.store.writing import Candidate, memories_write
from apps.tenants.models import Tenant

logger = logging.getLogger(__name__)

PATTERN_MIN_EPISODES = 5
PATTERN_MIN_AGE = timedelta(days=1)  # today's episodes stay raw in context; compression is for the past
THEME_SIMILARITY = 0.55  # an episode joins a theme cluster when its cosine to the cluster centroid reaches this
DEFAULT_COMPRESSION_THRESHOLD = 10
DECAY_LOG_STEP = 0.05  # a "decayed" revision is written each time importance crosses a 0.05 step


def _scope(tenant: Tenant, contact: Contact | None) -> Q:
    return Q(tenant=tenant, contact=contact)


def memories_decay(*, tenant: Tenant, contact: Contact | None, now: datetime) -> int:
    """Recompute importance from elapsed time since last access (idempotent); returns memories changed."""
    decayed = decayed_importance_sql(at_sql="p.now")
    contact_clause = "m.contact_id = %s" if contact is not None else "m.contact_id IS NULL"
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            f"WITH p AS (SELECT %s::timestamptz AS now), "
            f"old AS (SELECT m.id, m.importance FROM memories_memory m, p WHERE m.tenant_id = %s AND {contact_clause} "
            f"AND m.valid_to IS NULL AND m.deleted_at IS NULL AND NOT m.is_pinned "
            f"AND m.accessed_at < p.now - interval '{scoring.DECAY_GRACE_DAYS} days' FOR UPDATE OF m) "
            f"UPDATE memories_memory m SET importance = {decayed} FROM old, p "
            f"WHERE m.id = old.id RETURNING m.id, old.importance, m.importance",
            [now, tenant.pk, *([contact.pk] if contact is not None else [])],
        )
        rows = [row for row in cursor.fetchall() if row[1] != row[2]]
        steps = [row for row in rows if int(row[1] / DECAY_LOG_STEP + 1e-9) != int(row[2] / DECAY_LOG_STEP + 1e-9)]
        if steps:
            MemoryRevision.objects.bulk_create(
                [
                    MemoryRevision(
                        memory_id=memory_id,
                        tenant=tenant,
                        action=MemoryRevision.Action.DECAYED,
                        actor=SYSTEM,
                        before={"importance": before},
                        after={"importance": after},
                        note="not accessed for more than 7 days",
                    )
                    for memory_id, before, after in steps
                ]
            )
    return len(rows)


def memories_prune(*, tenant: Tenant, contact: Contact | None, now: datetime) -> int:
    """importance < 0.1 and not accessed for 30 days → out of retrieval (soft delete, with a revision)."""
    stale = Memory.objects.filter(
        _scope(tenant, contact),
        valid_to__isnull=True,
        deleted_at__isnull=True,
        is_pinned=False,
        importance__lt=scoring.PRUNE_BELOW,
        accessed_at__lt=now - timedelta(days=scoring.PRUNE_IDLE_DAYS),
    )
    count = 0
    for memory in stale.iterator():
        memory_delete(
            memory=memory, actor=SYSTEM, reason=Memory.DELETION_PRUNED, note="importance below 0.1, idle 30 days"
        )
        count += 1
    return count


def memories_purge(*, tenant: Tenant, now: datetime) -> int:
    """Hard-delete memories deleted or pruned longer ago than the retention setting."""
    days = int((tenant.settings or {}).get("purge_deleted_after_days", settings.ENGRAM["PURGE_PRUNED_AFTER_DAYS"]))
    deleted, _ = Memory.objects.filter(tenant=tenant, deleted_at__lt=now - timedelta(days=days)).delete()
    return deleted


@dataclass
class _Theme:
    episodes: list[Memory]
    centroid: np.ndarray
    entity: Entity | None = None


def _themes(episodes: Sequence[Memory], entity_links: dict[Any, list[Entity]]) -> list[_Theme]:
    """Entity themes first (5+ episodes naming the same entity), then embedding clusters of the rest."""
    by_entity: dict[Any, list[Memory]] = defaultdict(list)
    entities: dict[Any, Entity] = {}
    for episode in episodes:
        for entity in entity_links.get(episode.pk, []):
            if entity.entity_type == "name" and entity.slug in {"i", "im"}:
                continue
            by_entity[entity.pk].append(episode)
            entities[entity.pk] = entity
    themes: list[_Theme] = []
    used: set[Any] = set()
    for entity_id, members in sorted(by_entity.items(), key=lambda item: -len(item[1])):
        members = [episode for episode in members if episode.pk not in used]
        if len(members) >= PATTERN_MIN_EPISODES:
            vectors = np.asarray([episode.embedding for episode in members], dtype=np.float32)
            themes.append(_Theme(episodes=members, centroid=vectors.mean(axis=0), entity=entities[entity_id]))
            used.update(episode.pk for episode in members)
    clusters: list[_Theme] = []
    for episode in episodes:
        if episode.pk in used:
            continue
        vector = np.asarray(episode.embedding, dtype=np.float32)
        best, best_similarity = None, THEME_SIMILARITY
        for cluster in clusters:
            centroid = cluster.centroid / (np.linalg.norm(cluster.centroid) or 1.0)
            similarity = float(centroid @ vector)
            if similarity >= best_similarity:
                best, best_similarity = cluster, similarity
        if best is None:
            clusters.append(_Theme(episodes=[episode], centroid=vector.copy()))
        else:
            best.episodes.append(episode)
            best.centroid = best.centroid + (vector - best.centroid) / len(best.episodes)
    themes += [cluster for cluster in clusters if len(cluster.episodes) >= PATTERN_MIN_EPISODES]
    return themes


def episodes_compress(*, tenant: Tenant, contact: Contact | None, now: datetime, subject: str = "") -> int:
    """5+ current episodes sharing a theme → one pattern memory; the episodes are kept, marked compressed."""
    episodes = list(
        Memory.objects.filter(
            _scope(tenant, contact),
            memory_type=scoring.EPISODE,
            valid_to__isnull=True,
            deleted_at__isnull=True,
            is_compressed=False,
            embedding__isnull=False,
            occurred_at__lt=now - PATTERN_MIN_AGE,
        ).order_by("occurred_at")
    )
    if len(episodes) < PATTERN_MIN_EPISODES:
        return 0
    entity_links: dict[Any, list[Entity]] = defaultdict(list)
    for link in MemoryEntity.objects.filter(memory__in=episodes).select_related("entity"):
        entity_links[link.memory_id].append(link.entity)
    created = 0
    for theme in _themes(episodes, entity_links):
        texts = [episode.content for episode in theme.episodes]
        content = summarise.pattern_statement(
            texts=texts,
            dates=[episode.occurred_at for episode in theme.episodes],
            entity_name=theme.entity.display_name if theme.entity else None,
            subject=subject,
            tenant_id=str(tenant.pk),
        )
        with transaction.atomic():
            theme_entities = {
                entity.key: entity for episode in theme.episodes for entity in entity_links.get(episode.pk, [])
            }
            (change,) = memories_write(
                tenant=tenant,
                contact=contact,
                candidates=[
                    Candidate(
                        memory_type=scoring.PATTERN,
                        content=content,
                        importance=0.8,
                        metadata={"source_memory_ids": [str(episode.pk) for episode in theme.episodes]},
                    )
                ],
                occurred_at=theme.episodes[-1].occurred_at,
                actor=SYSTEM,
                source_message_ids=[mid for episode in theme.episodes for mid in episode.source_message_ids],
                now=now,
            )
            pattern = change.memory
            if change.action == "skipped":
                continue
            MemoryEntity.objects.bulk_create(
                [MemoryEntity(memory=pattern, entity=entity) for entity in theme_entities.values()],
                ignore_conflicts=True,
            )
            _mark_compressed(theme.episodes, into=pattern, note="episode compressed into a pattern")
            created += 1
    return created


def _mark_compressed(memories: Sequence[Memory], *, into: Memory, note: str) -> None:
    """Compressed memories are kept (queryable with include_compressed) but leave context; each gets a revision."""
    for memory in memories:
        before = memory_snapshot(memory)
        memory.is_compressed = True
        memory.compressed_into = into
        memory.save(update_fields=["is_compressed", "compressed_into", "updated_at"])
        revision_record(
            memory=memory,
            action=MemoryRevision.Action.COMPRESSED,
            actor=SYSTEM,
            before=before,
            related_memory=into,
            note=note,
        )


def sessions_compress(
    *, tenant: Tenant, contact: Contact | None, now: datetime, threshold: int | None = None, subject: str = ""
) -> int:
    """memory-logic.txt §3: more uncompressed episodic sessions than `threshold` → the oldest half are
    summarised into 2–3 sentence facts (source_session_id set), their episodes marked compressed."""
    threshold = int(threshold or (tenant.settings or {}).get("compression_threshold", DEFAULT_COMPRESSION_THRESHOLD))
    episodes = Memory.objects.filter(
        _scope(tenant, contact),
        memory_type=scoring.EPISODE,
        valid_to__isnull=True,
        deleted_at__isnull=True,
        is_compressed=False,
    ).exclude(source_session_id="")
    first_seen = {
        row["source_session_id"]: row["first"]
        for row in episodes.values("source_session_id").annotate(first=Min("occurred_at")).order_by("first")
    }
    if len(first_seen) <= threshold:
        return 0
    oldest = list(first_seen)[: max(1, threshold // 2)]
    summarised = 0
    for session_id in oldest:
        members = list(
            episodes.filter(source_session_id=session_id).order_by("occurred_at", "source_sequence", "created_at")
        )
        if not members:
            continue
        content = summarise.session_summary(
            texts=[m.content for m in members], subject=subject, tenant_id=str(tenant.pk)
        )
        with transaction.atomic():
            (change,) = memories_write(
                tenant=tenant,
                contact=contact,
                candidates=[
                    Candidate(
                        memory_type=scoring.FACT,
                        content=content,
                        importance=scoring.type_defaults(scoring.FACT, is_tenant_scope=contact is None)[0],
                        metadata={"compression_source": True, "source_session_id": session_id},
                        decay_rate=scoring.type_defaults(scoring.EPISODE, is_tenant_scope=contact is None)[1],
                    )
                ],
                occurred_at=members[-1].occurred_at,
                actor=SYSTEM,
                source_message_ids=[mid for member in members for mid in member.source_message_ids],
                now=now,
            )
            summary = change.memory
            if change.action == "skipped":
                continue
            Memory.objects.filter(pk=summary.pk).update(source_session_id=session_id)
            _mark_compressed(members, into=summary, note=f"session {session_id} summarised")
            summarised += 1
    return summarised


def scope_subject(contact: Contact | None) -> str:
    return (contact.display_name or "") if contact is not None else ""


def periodic_scope_consolidate(*, tenant: Tenant, contact: Contact | None, now: datetime) -> dict[str, int]:
    """All periodic jobs for one scope, in order: decay → patterns → sessions → prune."""
    subject = scope_subject(contact)
    stats: Counter[str] = Counter()
    stats["decayed"] = memories_decay(tenant=tenant, contact=contact, now=now)
    stats["patterns"] = episodes_compress(tenant=tenant, contact=contact, now=now, subject=subject)
    stats["sessions_summarised"] = sessions_compress(tenant=tenant, contact=contact, now=now, subject=subject)
    stats["pruned"] = memories_prune(tenant=tenant, contact=contact, now=now)
    return dict(stats)
