"""Celery tasks: thin, idempotent, each calls one service — the top entry layer: nothing below imports this
module; services queue these tasks by name through apps/memories/dispatch.py, which holds their names. Each
declares how it binds row-level security (`tenancy`, apps/core/tenancy.py): to its `tenant_id`, across tenants
as maintenance (sweeps, jobs given row ids), or to none (the fan-out reads the tenant list only)."""

from __future__ import annotations

from typing import Any

from celery import shared_task
from django.utils import timezone

from apps.core.task_base import DeliveryCappedTask
from apps.core.tenancy import MAINTENANCE, NO_TENANT, TENANT
from apps.memories import dispatch
from apps.memories.ingest.services import events_extract_deferred
from apps.memories.lifecycle import deferred, periodic, processor, session_flush
from apps.memories.lifecycle.scheduling import lost_consolidations_requeue
from apps.memories.retrieval.access import access_flush
from apps.memories.retrieval.lexicon import scope_lexicon_refresh
from apps.memories.store.vector_indexes import vector_indexes_sync
from apps.memories.store.writing import memories_context_embed
from apps.tenants.models import Tenant


@shared_task(name=dispatch.CONSOLIDATE_CONVERSATION, tenancy=MAINTENANCE, acks_late=True, base=DeliveryCappedTask)
def consolidate_conversation_task(*, conversation_id: str) -> dict[str, int]:
    dispatch.consolidation_release(conversation_id=conversation_id)
    return deferred.conversation_consolidate(conversation_id=conversation_id)


@shared_task(
    name=dispatch.JOIN_BURSTS, tenancy=MAINTENANCE, acks_late=True, base=DeliveryCappedTask, ignore_result=True
)
def join_bursts_task(*, conversation_id: str) -> int:
    since = dispatch.bursts_join_take(conversation_id=conversation_id)
    return deferred.conversation_recent_bursts_merge(conversation_id=conversation_id, since_message_id=since)


@shared_task(
    name=dispatch.CONTEXT_EMBED, tenancy=MAINTENANCE, acks_late=True, base=DeliveryCappedTask, ignore_result=True
)
def context_embed_task(*, memory_ids: list[str]) -> int:
    """Context embeddings for memories that have none. Ingest computes them inline now (a memory is fully
    searchable on the next request); this drains what a version before that queued, and serves backfills."""
    return memories_context_embed(memory_ids=memory_ids)


@shared_task(name=dispatch.EXTRACT_PENDING_EVENTS, tenancy=MAINTENANCE, acks_late=True, base=DeliveryCappedTask)
def extract_pending_events_task() -> int:
    return deferred.pending_events_extract()


@shared_task(name=dispatch.EXTRACT_EVENTS, tenancy=TENANT, acks_late=True, base=DeliveryCappedTask, ignore_result=True)
def extract_events_task(*, tenant_id: str, event_ids: list[str]) -> int:
    """What a request's inline extraction left over its time budget (apps/memories/ingest/services.py)."""
    return events_extract_deferred(tenant_id=tenant_id, event_ids=event_ids)


@shared_task(name=dispatch.REQUEUE_LOST_CONSOLIDATIONS, tenancy=MAINTENANCE, ignore_result=True)
def requeue_lost_consolidations_task() -> int:
    return lost_consolidations_requeue()


@shared_task(name=dispatch.ACCESS_FLUSH, tenancy=MAINTENANCE, ignore_result=True)
def access_flush_task() -> int:
    return access_flush()


@shared_task(name=dispatch.PROCESS_CONTEXT_EVENTS, tenancy=MAINTENANCE, acks_late=True, base=DeliveryCappedTask)
def process_context_events_task() -> dict[str, int]:
    """New events first; then, with an LLM configured, what the rules processed while it was failing."""
    return {**processor.events_process(), "llm_retried": processor.llm_pending_retry()}


@shared_task(name=dispatch.FLUSH_IDLE_CONVERSATIONS, tenancy=MAINTENANCE, acks_late=True, base=DeliveryCappedTask)
def flush_idle_conversations_task() -> int:
    return session_flush.idle_conversations_flush()


@shared_task(name=dispatch.LEXICON_REFRESH, tenancy=TENANT, ignore_result=True)
def lexicon_refresh_task(*, tenant_id: str, contact_id: str | None) -> int:
    return scope_lexicon_refresh(tenant_id=tenant_id, contact_id=contact_id)


@shared_task(name=dispatch.PERIODIC_CONSOLIDATION, tenancy=NO_TENANT)
def periodic_consolidation_task() -> int:
    """Fan out: one task per active tenant, which fans out per scope (apps/memories/lifecycle/periodic.py)."""
    tenant_ids = list(Tenant.objects.filter(is_active=True).values_list("pk", flat=True))
    now = timezone.now().isoformat()
    for tenant_id in tenant_ids:
        tenant_consolidation_task.delay(tenant_id=str(tenant_id), now=now)
    return len(tenant_ids)


@shared_task(name=dispatch.TENANT_CONSOLIDATION, tenancy=TENANT, acks_late=True, base=DeliveryCappedTask)
def tenant_consolidation_task(*, tenant_id: str, now: str | None = None) -> int:
    """Queue one task per scope of the tenant (each contact with memories, the brain) and its purge: many
    short tasks, each its own run, rather than one walking every contact under the time limit."""
    tenant = Tenant.objects.filter(pk=tenant_id, is_active=True).first()
    if tenant is None:
        return 0  # deleted or deactivated since the fan-out (a deletion deactivates first)
    scopes = periodic.tenant_scopes(tenant=tenant)
    for contact in scopes:
        scope_consolidation_task.delay(
            tenant_id=tenant_id, contact_id=str(contact.pk) if contact is not None else None, now=now
        )
    tenant_purge_task.delay(tenant_id=tenant_id, now=now)
    return len(scopes)


@shared_task(name=dispatch.SCOPE_CONSOLIDATION, tenancy=TENANT, acks_late=True, base=DeliveryCappedTask)
def scope_consolidation_task(*, tenant_id: str, contact_id: str | None, now: str | None = None) -> dict[str, int]:
    from apps.contacts.models import Contact

    tenant = Tenant.objects.filter(pk=tenant_id, is_active=True).first()
    contact = Contact.objects.filter(tenant_id=tenant_id, pk=contact_id).first() if contact_id else None
    if tenant is None or (contact_id and contact is None):
        return {}  # deleted meanwhile, or the tenant deactivated (a deletion deactivates first)
    return periodic.scope_consolidate(tenant=tenant, contact=contact, now=_parsed(now))


@shared_task(name=dispatch.TENANT_PURGE, tenancy=TENANT, acks_late=True, base=DeliveryCappedTask)
def tenant_purge_task(*, tenant_id: str, now: str | None = None) -> int:
    tenant = Tenant.objects.filter(pk=tenant_id, is_active=True).first()
    return periodic.tenant_purge(tenant=tenant, now=_parsed(now)) if tenant is not None else 0


# a build of a million-memory tenant's graph takes minutes; one interrupted leaves an invalid index, which the
# next run drops and builds again, so the limit is generous
@shared_task(
    name=dispatch.VECTOR_INDEXES_SYNC,
    tenancy=MAINTENANCE,
    ignore_result=True,
    time_limit=2 * 3600,
    soft_time_limit=2 * 3600 - 60,
)
def vector_indexes_sync_task() -> dict[str, int]:
    """The large tenants' and contacts' own vector indexes: drop the stale, build at most one (a tenant's first,
    the largest missing) per run; what it did is the worker's log line (the builds left wait for the next runs)."""
    report = vector_indexes_sync(limit=1)
    return {"built": len(report.built), "dropped": len(report.dropped), "kept": report.kept, "waiting": report.waiting}


def _parsed(now: str | None) -> Any:
    from django.utils.dateparse import parse_datetime

    return parse_datetime(now) if now else None
