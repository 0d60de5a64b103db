"""Deferred work: a burst of turns in a conversation queues one consolidation run (debounced)."""

from __future__ import annotations

import contextlib
import logging

from django.conf import settings

from apps.conversations.models import Conversation
from apps.core.redis import RedisError, get_redis

logger = logging.getLogger(__name__)


def consolidation_debounce_key(conversation_id: object) -> str:
    return f"engram:consolidate:pending:{conversation_id}"


def consolidation_schedule(*, conversation: Conversation) -> bool:
    """Queue `consolidate_conversation_task` ~CONSOLIDATION_DELAY_SECONDS from now unless one is pending.
    Returns True when a task was queued. Never raises: the periodic job catches anything missed."""
    from apps.memories.tasks import consolidate_conversation_task

    delay = int(settings.ENGRAM["CONSOLIDATION_DELAY_SECONDS"])
    try:
        is_first = get_redis().set(consolidation_debounce_key(conversation.pk), "1", nx=True, ex=delay + 60)
        if not is_first:
            return False
        consolidate_conversation_task.apply_async(kwargs={"conversation_id": str(conversation.pk)}, countdown=delay)
        return True
    except Exception as exc:  # Redis errors, and kombu's OperationalError when the broker is unreachable
        logger.warning("Could not queue consolidation for conversation %s: %s", conversation.pk, exc)
        return False


def consolidation_release(*, conversation_id: object) -> None:
    with contextlib.suppress(RedisError):
        get_redis().delete(consolidation_debounce_key(conversation_id))
