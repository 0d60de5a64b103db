"""The sweep of lost consolidations: a burst of turns in a conversation queues one consolidation run, debounced
(apps/memories/dispatch.py), and this per-minute sweep finds in PostgreSQL the runs that were due but never
happened (their countdown task lived only in the broker, lost with a Redis restart)."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import F, Q
from django.utils import timezone

from apps.conversations.models import Conversation
from apps.memories.dispatch import consolidation_schedule

# The sweep looks at conversations whose last turn is at most this old (the 6-hourly job covers the rest).
SWEEP_HORIZON = timedelta(days=1)


def lost_consolidations_requeue(*, now: datetime | None = None, limit: int = 500) -> int:
    """Queue, to run now, the consolidation of conversations whose last turn is older than the deferral
    (plus two minutes' slack) and later than their last consolidation, and for which no task is pending
    (no debounce key): their task was lost. Returns how many were queued."""
    now = now or timezone.now()
    due_before = now - timedelta(seconds=int(settings.ENGRAM["CONSOLIDATION_DELAY_SECONDS"]) + 120)
    overdue = (
        Conversation.objects.filter(
            last_message_at__lt=due_before, last_message_at__gte=now - SWEEP_HORIZON, tenant__is_active=True
        )
        .filter(Q(consolidated_at__isnull=True) | Q(consolidated_at__lt=F("last_message_at")))
        .order_by("last_message_at")[:limit]
    )
    return sum(consolidation_schedule(conversation=conversation, delay=0) for conversation in overdue)
