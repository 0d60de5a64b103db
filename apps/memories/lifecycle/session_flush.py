"""Session flush (ai-brain-memory.txt §5.3): a conversation idle for 5 minutes, or closed by the client,
has its window flushed — every turn is in the ledger already (ingest writes it first), unfinished
extraction is completed, consolidation is queued, and the Redis window is cleared."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import F, Q
from django.utils import timezone

from apps.conversations.models import Conversation
from apps.conversations.window import window_clear
from apps.memories.dispatch import consolidation_schedule
from apps.memories.lifecycle.deferred import MAX_EXTRACTION_ATTEMPTS, unfinished_events_extract
from apps.memories.lifecycle.runs import run_logged
from apps.memories.models import ConsolidationRun, ContextEvent


def conversation_flush(
    *, conversation: Conversation, close: bool = False, now: datetime | None = None
) -> dict[str, int]:
    now = now or timezone.now()
    with run_logged(
        kind=ConsolidationRun.KIND_SESSION_FLUSH, tenant=conversation.tenant, contact=conversation.contact, now=now
    ) as stats:
        events = list(
            ContextEvent.objects.select_related("tenant", "contact", "message").filter(
                conversation=conversation, extracted_at__isnull=True, attempts__lt=MAX_EXTRACTION_ATTEMPTS
            )
        )
        stats["extracted"] = unfinished_events_extract(events)
        stats["consolidation_queued"] = int(consolidation_schedule(conversation=conversation))
        window_clear(conversation=conversation)
        fields: dict[str, object] = {"flushed_at": now}
        if close:
            fields.update(status=Conversation.STATUS_CLOSED, closed_at=now)
        Conversation.objects.filter(pk=conversation.pk).update(**fields)
        stats["messages"] = conversation.message_count
    return stats


def idle_conversations_flush(*, now: datetime | None = None, limit: int = 500) -> int:
    now = now or timezone.now()
    idle_since = now - timedelta(seconds=int(settings.ENGRAM["SESSION_IDLE_SECONDS"]))
    idle = (
        Conversation.objects.select_related("tenant", "contact")
        .filter(status=Conversation.STATUS_OPEN, last_message_at__lt=idle_since)
        .filter(Q(flushed_at__isnull=True) | Q(flushed_at__lt=F("last_message_at")))
        .order_by("last_message_at")[:limit]
    )
    count = 0
    for conversation in idle:
        conversation_flush(conversation=conversation, now=now)
        count += 1
    return count
