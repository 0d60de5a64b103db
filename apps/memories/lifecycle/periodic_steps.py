"""Periodic consolidation (every 6 hours, per tenant and contact): decay, compression (compression.py),
pruning, purging. Every job takes `now`, so tests and the simulated year run them on a controlled clock,
and every job is idempotent."""

from __future__ import annotations

import logging
from collections import Counter
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q

from apps.contacts.models import Contact
from apps.entities.models import Entity
from apps.entities.services import GENERIC_TYPE, entities_not_names_mark
from apps.memories import scoring
from apps.memories.decay import decayed_importance_sql
from apps.memories.extraction.rules import case_uses, written_as_common_word
from apps.memories.lifecycle.compression import episodes_compress, sessions_compress
from apps.memories.models import Memory, MemoryEntity, MemoryRevision
from apps.memories.store.editing import memory_delete
from apps.memories.store.revisions import SYSTEM
from apps.tenants.models import Tenant

logger = logging.getLogger(__name__)

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
    """Hard-delete memories deleted or pruned, and memories superseded (a correction, a merge), longer ago than
    their retention settings (each with its history)."""
    options = tenant.settings or {}
    days = int(options.get("purge_deleted_after_days", settings.ENGRAM["PURGE_PRUNED_AFTER_DAYS"]))
    superseded_days = int(options.get("purge_superseded_after_days", settings.ENGRAM["PURGE_SUPERSEDED_AFTER_DAYS"]))
    stale = Q(deleted_at__lt=now - timedelta(days=days)) | Q(
        deleted_at__isnull=True, valid_to__lt=now - timedelta(days=superseded_days)
    )
    # counted before: delete() counts the history too
    doomed = list(Memory.objects.filter(stale, tenant=tenant).values_list("pk", flat=True))
    Memory.objects.filter(tenant=tenant, pk__in=doomed).delete()
    return len(doomed)


def name_entities_check(*, tenant: Tenant, contact: Contact | None) -> int:
    """The scope's single-word `name:` entities that its memories write as a common word ("Very cool!",
    "Video games are…" read one message at a time) are marked not names and lose their links
    (extraction.rules.written_as_common_word); one the scope has since written as a name is unmarked. Returns
    how many were marked. An unmarked entity is linked again by the conversations that name it from then on."""
    entities = list(
        Entity.objects.filter(tenant=tenant, contact=contact, entity_type=GENERIC_TYPE)
        .exclude(slug__contains="-")
        .only("pk", "slug", "metadata")
    )
    if not entities:
        return 0
    # what people wrote: episodes (a pattern's or a summary's generated sentence lower-cases its topics)
    texts = Memory.objects.filter(
        _scope(tenant, contact), memory_type=scoring.EPISODE, deleted_at__isnull=True
    ).values_list("content", flat=True)
    uses = case_uses(texts.iterator(chunk_size=2000), [entity.slug for entity in entities])
    not_names = {slug for slug, (lower, capitalised) in uses.items() if written_as_common_word(lower, capitalised)}
    marked, _ = entities_not_names_mark(entities=entities, uses=uses, not_names=not_names)
    if marked:
        MemoryEntity.objects.filter(entity__in=marked).delete()
    return len(marked)


def scope_subject(contact: Contact | None) -> str:
    return (contact.display_name or "") if contact is not None else ""


def periodic_scope_consolidate(*, tenant: Tenant, contact: Contact | None, now: datetime) -> dict[str, int]:
    """All periodic jobs for one scope, in order: decay → names → patterns → sessions → prune."""
    subject = scope_subject(contact)
    stats: Counter[str] = Counter()
    stats["decayed"] = memories_decay(tenant=tenant, contact=contact, now=now)
    stats["not_names"] = name_entities_check(tenant=tenant, contact=contact)
    stats["patterns"] = episodes_compress(tenant=tenant, contact=contact, now=now, subject=subject)
    stats["sessions_summarised"] = sessions_compress(tenant=tenant, contact=contact, now=now, subject=subject)
    stats["pruned"] = memories_prune(tenant=tenant, contact=contact, now=now)
    return dict(stats)
