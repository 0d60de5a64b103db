"""How services queue work for the worker: by task name, through Celery signatures. The tasks module
(apps/memories/tasks.py) is the top entry layer: it imports the services it runs, so no service imports it
back; they queue through here, below them all, and the tasks take their names from here.

A signature by name runs the registered task's own `apply_async` where tasks.py is imported (the worker,
the web processes), and sends the message by name otherwise: the same message either way.

The consolidation of a conversation is debounced: a burst of turns queues one run. Its debounce key lives
until the queued task starts (it deletes the key) and at most DEBOUNCE_GRACE_SECONDS after it was due; the
per-minute sweep (lifecycle/scheduling.py) queues again a run whose task was lost with the broker."""

from __future__ import annotations

import contextlib
import logging
from typing import TYPE_CHECKING, Any

from celery import current_app
from django.conf import settings

from apps.core.redis import RedisError, get_redis
from apps.core.timing import phase

if TYPE_CHECKING:
    from apps.conversations.models import Conversation

logger = logging.getLogger(__name__)

CONSOLIDATE_CONVERSATION = "apps.memories.tasks.consolidate_conversation_task"
JOIN_BURSTS = "apps.memories.tasks.join_bursts_task"
CONTEXT_EMBED = "apps.memories.tasks.context_embed_task"
EXTRACT_PENDING_EVENTS = "apps.memories.tasks.extract_pending_events_task"
EXTRACT_EVENTS = "apps.memories.tasks.extract_events_task"
REQUEUE_LOST_CONSOLIDATIONS = "apps.memories.tasks.requeue_lost_consolidations_task"
ACCESS_FLUSH = "apps.memories.tasks.access_flush_task"
PROCESS_CONTEXT_EVENTS = "apps.memories.tasks.process_context_events_task"
FLUSH_IDLE_CONVERSATIONS = "apps.memories.tasks.flush_idle_conversations_task"
LEXICON_REFRESH = "apps.memories.tasks.lexicon_refresh_task"
PERIODIC_CONSOLIDATION = "apps.memories.tasks.periodic_consolidation_task"
TENANT_CONSOLIDATION = "apps.memories.tasks.tenant_consolidation_task"
SCOPE_CONSOLIDATION = "apps.memories.tasks.scope_consolidation_task"
TENANT_PURGE = "apps.memories.tasks.tenant_purge_task"
VECTOR_INDEXES_SYNC = "apps.memories.tasks.vector_indexes_sync_task"

DEBOUNCE_GRACE_SECONDS = 3600


def task_queue(name: str, *, countdown: int | None = None, **kwargs: Any) -> None:
    """Queue task `name` with keyword arguments `kwargs`, `countdown` seconds from now (None: now)."""
    current_app.signature(name, kwargs=kwargs).apply_async(countdown=countdown)


def consolidation_debounce_key(conversation_id: object) -> str:
    return f"engram:consolidate:pending:{conversation_id}"


def _debounced_queue(*, name: str, key: str, value: str, delay: int, conversation: Conversation, what: str) -> bool:
    """Queue task `name` for the conversation `delay` seconds from now unless its debounce `key` is set (it holds
    `value` until the task starts, or DEBOUNCE_GRACE_SECONDS after it was due). True when a task was queued.
    Never raises: Redis errors, and kombu's OperationalError when the broker is unreachable, are logged."""
    try:
        with phase("redis"):
            if not get_redis().set(key, value, nx=True, ex=delay + DEBOUNCE_GRACE_SECONDS):
                return False
        with phase("enqueue"):
            task_queue(name, countdown=delay, conversation_id=str(conversation.pk))
        return True
    except Exception as exc:
        logger.warning("Could not queue %s for conversation %s: %s", what, conversation.pk, exc)
        return False


def consolidation_schedule(*, conversation: Conversation, delay: int | None = None) -> bool:
    """Queue the conversation's consolidation `delay` seconds (default CONSOLIDATION_DELAY_SECONDS) from now
    unless one is pending. Returns True when a task was queued. Never raises: the sweep queues it again."""
    if delay is None:
        delay = int(settings.ENGRAM["CONSOLIDATION_DELAY_SECONDS"])
    return _debounced_queue(
        name=CONSOLIDATE_CONVERSATION,
        key=consolidation_debounce_key(conversation.pk),
        value="1",
        delay=delay,
        conversation=conversation,
        what="consolidation",
    )


def bursts_join_key(conversation_id: object) -> str:
    return f"engram:bursts:pending:{conversation_id}"


def bursts_join_schedule(*, conversation: Conversation, first_message_id: int) -> bool:
    """Queue the join of the conversation's recently closed bursts (lifecycle/deferred.py
    `conversation_recent_bursts_merge`) BURSTS_JOIN_DELAY_SECONDS from now unless one is pending: one run per
    few seconds of a live chat. The pending key holds the ledger id of the first message since the last run
    (`first_message_id` of the batch that queued it), so the run reads everything that arrived since, however
    many batches that was. Never raises: the deferred consolidation joins what this misses."""
    return _debounced_queue(
        name=JOIN_BURSTS,
        key=bursts_join_key(conversation.pk),
        value=str(first_message_id),
        delay=int(settings.ENGRAM["BURSTS_JOIN_DELAY_SECONDS"]),
        conversation=conversation,
        what="the burst join",
    )


def bursts_join_take(*, conversation_id: object) -> int | None:
    """Release the pending key of a burst join that starts now; the ledger id of the first message since the
    last run (None when the key is gone: Redis restarted, or the run was queued by hand)."""
    try:
        pipeline = get_redis().pipeline()
        pipeline.get(bursts_join_key(conversation_id))
        pipeline.delete(bursts_join_key(conversation_id))
        value, _ = pipeline.execute()
    except RedisError:
        return None
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def consolidation_release(*, conversation_id: object) -> None:
    with contextlib.suppress(RedisError):
        get_redis().delete(consolidation_debounce_key(conversation_id))


def conversation_consolidation_queue(*, conversation_id: object) -> None:
    """A conversation's consolidation now, not debounced (benchmarks settle a tenant so)."""
    task_queue(CONSOLIDATE_CONVERSATION, conversation_id=str(conversation_id))


def scope_consolidation_queue(*, tenant_id: object, contact_id: object) -> None:
    """The periodic jobs of one contact, now, on the worker (a scope another run holds is skipped there)."""
    task_queue(SCOPE_CONSOLIDATION, tenant_id=str(tenant_id), contact_id=str(contact_id))


def tenant_consolidation_queue(*, tenant_id: object) -> None:
    """The periodic jobs of every scope of a tenant, then its purge, now, on the worker."""
    task_queue(TENANT_CONSOLIDATION, tenant_id=str(tenant_id))


def pending_extraction_queue() -> None:
    """The sweep that extracts the events whose inline extraction did not complete: now, not within the minute."""
    task_queue(EXTRACT_PENDING_EVENTS)


def lexicon_refresh_queue(*, tenant_id: object, contact_id: object | None) -> None:
    contact = str(contact_id) if contact_id is not None else None
    task_queue(LEXICON_REFRESH, tenant_id=str(tenant_id), contact_id=contact)
