from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from django.db import connection
from django.db.models import QuerySet

from apps.conversations.models import Conversation, Message
from apps.core.exceptions import NotFound
from apps.tenants.models import Tenant


def conversation_get(*, tenant: Tenant, external_id: str) -> Conversation:
    conversation = Conversation.objects.select_related("contact").filter(tenant=tenant, external_id=external_id).first()
    if conversation is None:
        raise NotFound(f"Conversation '{external_id}' not found.")
    return conversation


def message_list(*, tenant: Tenant, conversation: Conversation) -> QuerySet[Message]:
    return Message.objects.filter(tenant=tenant, conversation=conversation)


@dataclass(frozen=True)
class Turn:
    external_id: str
    speaker: str
    content: str
    occurred_at: datetime
    role: str = ""


def messages_turns_before(*, message_ids: Sequence[int], count: int = 1) -> dict[int, list[Turn]]:
    """For each of `message_ids`, the `count` turns before it in its conversation, newest first (none for a
    conversation's first turn). Turns are ordered as the ledger orders them — by time, then by arrival (the
    id) where times tie — so a conversation whose turns share one timestamp still has a turn before each.
    One statement."""
    if not message_ids:
        return {}
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT cur.id, p.external_id, p.speaker, p.content, p.occurred_at, p.role FROM conversations_message cur "
            "CROSS JOIN LATERAL (SELECT p.id, p.external_id, p.speaker, p.content, p.occurred_at, p.role "
            "  FROM conversations_message p "
            "  WHERE p.conversation_id = cur.conversation_id AND (p.occurred_at, p.id) < (cur.occurred_at, cur.id) "
            "  ORDER BY p.occurred_at DESC, p.id DESC LIMIT %s) p "
            "WHERE cur.id = ANY(%s) ORDER BY cur.id, p.occurred_at DESC, p.id DESC",
            [count, list(message_ids)],
        )
        found: dict[int, list[Turn]] = {}
        for message_id, *turn in cursor.fetchall():
            found.setdefault(message_id, []).append(Turn(*turn))
        return found
