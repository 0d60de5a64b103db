"""Compression, run by the periodic consolidation (periodic_steps.py): episodes of one theme become a pattern
(memory-logic.txt §4: at least five, older than a day, clustered by cosine to the theme's centroid), and a
session's episodes past the threshold become one summary (multi-tier-memory.txt §3.D); the compressed
episodes stay, marked, out of context. LLM summaries with an offline fallback (summarise.py)."""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import numpy as np
from django.db import transaction
from django.db.models import F, Min, Q

from apps.contacts.models import Contact
from apps.core.embeddings import cosine_threshold
from apps.entities.models import Entity
from apps.memories import scoring
from apps.memories.lifecycle import summarise
from apps.memories.models import Memory, MemoryEntity, MemoryRevision
from apps.memories.store.revisions import SYSTEM, memory_snapshot, revision_record
from apps.memories.store.writing import Candidate, memories_write
from apps.tenants.models import Tenant

logger = logging.getLogger(__name__)

PATTERN_MIN_EPISODES = 5
# the order episodes are read in (lifecycle/deferred.py STABLE_ORDER): when said, ledger position, text — not when
# the worker wrote them, so one conversation ingested twice gives the same patterns and session summaries
STABLE_FIELDS = ("occurred_at", F("source_sequence").asc(nulls_last=True), "content_hash", "id")
PATTERN_MIN_AGE = timedelta(days=1)  # today's episodes stay raw in context; compression is for the past
THEME_SIMILARITY = 0.55  # an episode joins a theme cluster when its cosine to the cluster centroid reaches this
DEFAULT_COMPRESSION_THRESHOLD = 10
# an entity on more than this share of the episodes (of 40 or more) is no theme: the pattern "X often talks
# about Y" would stand for a quarter of everything said (retrieval ignores such entities alike)
THEME_MAX_SHARE = 0.25
THEME_MIN_SCOPE = 40


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
            if (entity.metadata or {}).get("role") == "speaker":
                continue  # who said it is not what it is about: every turn of theirs links them
            by_entity[entity.pk].append(episode)
            entities[entity.pk] = entity
    themes: list[_Theme] = []
    used: set[Any] = set()
    for entity_id, members in sorted(by_entity.items(), key=lambda item: (-len(item[1]), entities[item[0]].slug)):
        if len(episodes) >= THEME_MIN_SCOPE and len(members) > THEME_MAX_SHARE * len(episodes):
            continue  # on a large share of everything (a partner greeted by name): not a theme
        members = [episode for episode in members if episode.pk not in used]
        if len(members) >= PATTERN_MIN_EPISODES:
            vectors = np.asarray([episode.embedding for episode in members], dtype=np.float32)
            themes.append(_Theme(episodes=members, centroid=vectors.mean(axis=0), entity=entities[entity_id]))
            used.update(episode.pk for episode in members)
    clusters: list[_Theme] = []
    theme_similarity = cosine_threshold(THEME_SIMILARITY)
    for episode in episodes:
        if episode.pk in used:
            continue
        vector = np.asarray(episode.embedding, dtype=np.float32)
        best, best_similarity = None, theme_similarity
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
    # a cluster of a large share of everything is the chat's small talk, not a theme (as for entities above)
    themes += [
        cluster
        for cluster in clusters
        if len(cluster.episodes) >= PATTERN_MIN_EPISODES
        and not (len(episodes) >= THEME_MIN_SCOPE and len(cluster.episodes) > THEME_MAX_SHARE * len(episodes))
    ]
    return themes


def episodes_compress(*, tenant: Tenant, contact: Contact | None, now: datetime, subject: str = "") -> int:
    """5+ current episodes sharing a theme → one pattern memory; the episodes are kept, marked compressed."""
    episodes = list(
        Memory.objects.filter(
            Q(tenant=tenant, contact=contact),
            memory_type=scoring.EPISODE,
            valid_to__isnull=True,
            deleted_at__isnull=True,
            is_compressed=False,
            embedding__isnull=False,
            occurred_at__lt=now - PATTERN_MIN_AGE,
        ).order_by(*STABLE_FIELDS)  # the themes are built greedily: the same episodes, the same order, the same themes
    )
    if len(episodes) < PATTERN_MIN_EPISODES:
        return 0
    entity_links: dict[Any, list[Entity]] = defaultdict(list)
    for link in MemoryEntity.objects.filter(memory__in=episodes).select_related("entity"):
        entity_links[link.memory_id].append(link.entity)
    created = 0
    themes = _themes(episodes, entity_links)
    background = summarise.document_frequencies([episode.content for episode in episodes]) if themes else None
    # what the scope's people are also called (speaker aliases, "cal"): names, not topics
    aliases = frozenset(
        alias
        for names in Entity.objects.filter(tenant=tenant, contact=contact)
        .exclude(aliases=[])
        .values_list("aliases", flat=True)
        for alias in names
    )
    for theme in themes:
        texts = [episode.content for episode in theme.episodes]
        content = summarise.pattern_statement(
            texts=texts,
            dates=[episode.occurred_at for episode in theme.episodes],
            entity_name=theme.entity.display_name if theme.entity else None,
            subject=subject,
            tenant_id=str(tenant.pk),
            sessions=len({episode.source_session_id or episode.pk for episode in theme.episodes}),
            background=background,
            background_size=len(episodes),
            aliases=aliases,
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
        Q(tenant=tenant, contact=contact),
        memory_type=scoring.EPISODE,
        valid_to__isnull=True,
        deleted_at__isnull=True,
        is_compressed=False,
    ).exclude(source_session_id="")
    first_seen = {
        row["source_session_id"]: row["first"]
        for row in episodes.values("source_session_id")
        .annotate(first=Min("occurred_at"))
        .order_by("first", "source_session_id")
    }
    if len(first_seen) <= threshold:
        return 0
    oldest = list(first_seen)[: max(1, threshold // 2)]
    summarised = 0
    for session_id in oldest:
        members = list(episodes.filter(source_session_id=session_id).order_by(*STABLE_FIELDS))
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
