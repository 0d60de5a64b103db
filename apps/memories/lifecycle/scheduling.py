"""What the lifecycle queues for the worker. Deferred work: a burst of turns in a conversation queues one
consolidation run (debounced), and a per-minute sweep finds in PostgreSQL the runs that were due but never
happened (their countdown task lived only in the broker, lost with a Redis restart). On demand: an operator's
consolidation of contacts or tenants (admin actions). The periodic fan-out queues its own tasks
(apps/memories/tasks.py), and a scope's lexicon refresh is queued by retrieval/lexicon.py."""

from __future__ import annotations

import contextlib
import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import F, Q
from django.utils import timezone

from apps.conversations.models import Conversation
from apps.core.redis import RedisError, get_redis
from apps.core.timing import phase

logger = logging.getLogger(__name__)


# The debounce key lives until the queued task starts (it deletes the key) and at most this long after it was
# due: while it exists no second task is queued, however long the worker's queue is.
DEBOUNCE_GRACE_SECONDS = 3600
# The sweep looks at conversations whose last turn is at most this old (the 6-hourly job covers the rest).
SWEEP_HORIZON = timedelta(days=1)


def consolidation_debounce_key(conversation_id: object) -> str:
    return f"engram:consolidate:pending:{conversation_id}"


def consolidation_schedule(*, conversation: Conversation, delay: int | None = None) -> bool:
    """Queue `consolidate_conversation_task` `delay` seconds (default CONSOLIDATION_DELAY_SECONDS) from now
    unless one is pending. Returns True when a task was queued. Never raises: the sweep below queues it again."""
    from apps.memories.tasks import consolidate_conversation_task

    if delay is None:
        delay = int(settings.ENGRAM["CONSOLIDATION_DELAY_SECONDS"])
    try:
        key = consolidation_debounce_key(conversation.pk)
        with phase("redis"):
            if not get_redis().set(key, "1", nx=True, ex=delay + DEBOUNCE_GRACE_SECONDS):
                return False
        with phase("enqueue"):
            consolidate_conversation_task.apply_async(kwargs={"conversation_id": str(conversation.pk)}, countdown=delay)
        return True
    except Exception as exc:  # Redis errors, and kombu's OperationalError when the broker is unreachable
        logger.warning("Could not queue consolidation for conversation %s: %s", conversation.pk, exc)
        return False


def consolidation_release(*, conversation_id: object) -> None:
    with contextlib.suppress(RedisError):
        get_redis().delete(consolidation_debounce_key(conversation_id))


def lost_consolidations_requeue(*, now: datetime | None = None, limit: int = 500) -> int:
    """Queue, to run now, the consolidation of conversations whose last turn is older than the deferral
    (plus two minutes' slack) and later than their last consolidation, and for which no task is pending
    (no debounce key): their task was lost. Returns how many were queued."""
    now = now or timezone.now()
    due_before = now - timedelta(seconds=int(settings.ENGRAM["CONSOLIDATION_DELAY_SECONDS"]) + 120)
    overdue = (
        Conversation.objects.filter(last_message_at__lt=due_before, last_message_at__gte=now - SWEEP_HORIZON)
        .filter(Q(consolidated_at__isnull=True) | Q(consolidated_at__lt=F("last_message_at")))
        .order_by("last_message_at")[:limit]
    )
    return sum(consolidation_schedule(conversation=conversation, delay=0) for conversation in overdue)


def scope_consolidation_queue(*, tenant_id: object, contact_id: object) -> None:
    """The periodic jobs of one contact, now, on the worker (a scope another run holds is skipped there)."""
    from apps.memories.tasks import scope_consolidation_task

    scope_consolidation_task.delay(tenant_id=str(tenant_id), contact_id=str(contact_id))


def tenant_consolidation_queue(*, tenant_id: object) -> None:
    """The periodic jobs of every scope of a tenant, then its purge, now, on the worker."""
    from apps.memories.tasks import tenant_consolidation_task

    tenant_consolidation_task.delay(tenant_id=str(tenant_id))
